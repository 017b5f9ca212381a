//! The last preflight a writing command trusted, per cluster, identity and settings
//! (docs/cli.md#fast-commands-the-preflight-cache): kept in the platform's cache
//! folder (`~/.cache/dispatch-kf/preflight/` on Linux), so that `hold` takes about as
//! long as `find` instead of probing the cluster every time.
//!
//! A preflight that found the Backend writable or observe-only is kept alike, so that a
//! cluster the adapter cannot write to is not probed again by every command (`preflight`
//! refreshes it at once after a fix), except an observe-only one that rests on Kueue's
//! readmission gate not being proven: that passes when a gate leads again, so it is not
//! kept at all. A kept preflight is trusted while it is younger than
//! `--preflight-max-age` (10 minutes by default; `0s` never trusts one), and one that
//! proved the readmission gate only until the gate controller's last renewal of its
//! Lease runs out (`renewTime + leaseDurationSeconds`); `preflight` always runs in full and keeps what it finds. The key is the
//! apiserver's URL, the kubeconfig context and user, a digest of the credentials they
//! send, and all the settings hold, so any change of one is a miss. The files are the
//! user's alone (`private_file.rs`).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use dispatch_kf::{Preflight, Reads};
use dispatch_kf_client::{Identity, NodeReads};
use dispatch_kf_model::Settings;
use dispatch_kf_model::internal::capabilities::{self, PreflightFacts};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::private_file::{self, NotWritten};

/// One kept preflight.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    /// The cluster, identity and settings it was made for, whole (the file name is
    /// their hash). The credentials are in it as their digest only.
    key: String,
    /// When it was made: at the latest, when Factory began.
    at: Timestamp,
    facts: PreflightFacts,
    nodes: NodeReads,
    /// No default: an entry kept before the adapter read Jobs is a miss.
    jobs_listable: bool,
    lacking: Vec<String>,
    /// With a proven readmission gate, when the Lease's last renewal runs out: past it
    /// the proof says nothing.
    #[serde(default)]
    gate_proof_expires: Option<Timestamp>,
}

/// Where the preflights of one cluster, identity and settings are kept.
pub(crate) struct Cache {
    path: PathBuf,
    key: String,
}

/// A kept preflight found young enough, and how old it is.
pub(crate) struct Trusted {
    pub(crate) preflight: Preflight,
    pub(crate) age: SignedDuration,
    pub(crate) path: PathBuf,
}

impl Cache {
    /// The cache of `identity`'s preflights with `settings`, under `dir` (the
    /// platform's cache folder); `None` when there is no such folder.
    pub(crate) fn of(
        dir: Option<&Path>,
        identity: &Identity,
        settings: &Settings,
    ) -> Option<Cache> {
        let Identity { server, context, user, credentials } = identity;
        let key = format!(
            "server {server}\ncontext {context}\nuser {user}\ncredentials sha256:{credentials}\n{settings:?}"
        );
        let mut hasher = std::hash::DefaultHasher::new();
        key.hash(&mut hasher);
        let path =
            dir?.join("dispatch-kf/preflight").join(format!("{:016x}.json", hasher.finish()));
        Some(Cache { path, key })
    }

    /// The kept preflight, when there is one for this key younger than `max_age` at
    /// `now` (and, with a gate proof, before the proof runs out). A file that cannot be read is
    /// a miss, never an error: the command then runs the preflight in full. `Err` says
    /// why a file or folder that is there was not trusted (not this user's, or others
    /// may write it): a miss too, that the caller reports.
    pub(crate) fn trusted(
        &self,
        now: Timestamp,
        max_age: SignedDuration,
    ) -> Result<Option<Trusted>, String> {
        let Some(bytes) = private_file::read(&self.path)? else { return Ok(None) };
        let Ok(kept) = serde_json::from_slice::<Kept>(&bytes) else { return Ok(None) };
        let age = now.duration_since(kept.at);
        if kept.key != self.key || age.is_negative() || age >= max_age {
            return Ok(None);
        }
        let gate_proven = kept.facts.readmission_gate.is_ok();
        if gate_proven && kept.gate_proof_expires.is_none_or(|expires| now >= expires) {
            return Ok(None);
        }
        Ok(Some(Trusted {
            preflight: Preflight::of(
                kept.facts,
                Reads { nodes: kept.nodes, jobs: kept.jobs_listable },
                kept.lacking,
                kept.gate_proof_expires,
            ),
            age,
            path: self.path.clone(),
        }))
    }

    /// Keeps `preflight`, made at `at`, when what it decided lasts until a person
    /// changes something (`capabilities::lasting`); removes what was kept otherwise
    /// (a read-only Backend probes nothing; an unproven readmission gate may lead again
    /// within seconds). Failing to write is not an error: the next command runs the
    /// preflight again. `Err` says why a folder that is there was not written in (not
    /// this user's, or others may write it).
    pub(crate) fn keep(&self, preflight: &Preflight, at: Timestamp) -> Result<(), String> {
        if !capabilities::lasting(&preflight.facts) {
            let _ = std::fs::remove_file(&self.path);
            return Ok(());
        }
        let kept = Kept {
            key: self.key.clone(),
            at,
            facts: preflight.facts.clone(),
            nodes: preflight.nodes,
            jobs_listable: preflight.jobs_listable,
            lacking: preflight.lacking.clone(),
            gate_proof_expires: preflight.gate_proof_expires,
        };
        let Ok(json) = serde_json::to_vec_pretty(&kept) else { return Ok(()) };
        match private_file::write(&self.path, &json) {
            Err(NotWritten::Untrusted(why)) => Err(why),
            Ok(()) | Err(NotWritten::Failed) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_kf_model::Mode;
    use dispatch_kf_model::internal::capabilities::Writability;

    /// Neither Nodes nor Jobs readable.
    const NO_READS: Reads = Reads { nodes: NodeReads::No, jobs: false };

    fn facts() -> PreflightFacts {
        PreflightFacts {
            mode: Mode::Plain,
            read_only: false,
            hold_round_trip: Ok(()),
            may_update_workloads: false,
            readmission_gate: Err("not in Kueue mode".into()),
            may_read_logs: true,
            probe_started: Ok(()),
            missing_writes: Vec::new(),
        }
    }

    fn writable(facts: PreflightFacts, gate_proof_expires: Option<Timestamp>) -> Preflight {
        Preflight::of(
            facts,
            Reads { nodes: NodeReads::Listed, jobs: true },
            Vec::new(),
            gate_proof_expires,
        )
    }

    fn settings(namespace: &str) -> Settings {
        let doc = serde_json::json!({"name": "kf", "namespace": namespace,
            "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}]});
        Settings::from_value(&doc).unwrap()
    }

    fn identity(server: &str, user: &str) -> Identity {
        Identity {
            server: server.into(),
            context: format!("{user}@c"),
            user: user.into(),
            credentials: format!("{user:0>64}"),
        }
    }

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dispatch-kf-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn t0() -> Timestamp {
        "2026-12-01T12:00:00Z".parse().unwrap()
    }

    const TEN: SignedDuration = SignedDuration::from_mins(10);

    #[test]
    fn a_writable_preflight_is_trusted_until_it_is_too_old_and_only_for_its_key() {
        let dir = dir("age");
        let alice = identity("https://a:6443", "alice");
        let cache = Cache::of(Some(&dir), &alice, &settings("ns")).unwrap();
        assert!(cache.trusted(t0(), TEN).unwrap().is_none(), "nothing kept yet");
        cache.keep(&writable(facts(), None), t0()).unwrap();
        let later = t0() + SignedDuration::from_mins(9);
        let trusted = cache.trusted(later, TEN).unwrap().expect("younger than ten minutes");
        assert_eq!(trusted.preflight.facts, facts());
        assert_eq!(trusted.preflight.nodes, NodeReads::Listed);
        assert_eq!(trusted.age, SignedDuration::from_mins(9));
        assert!(cache.trusted(t0() + TEN, TEN).unwrap().is_none(), "ten minutes old is too old");
        assert!(cache.trusted(t0(), SignedDuration::ZERO).unwrap().is_none(), "0s trusts nothing");
        let other_ns = Cache::of(Some(&dir), &alice, &settings("other")).unwrap();
        assert!(other_ns.trusted(later, TEN).unwrap().is_none(), "other settings miss");
        let other_cluster =
            Cache::of(Some(&dir), &identity("https://b:6443", "alice"), &settings("ns")).unwrap();
        assert!(other_cluster.trusted(later, TEN).unwrap().is_none(), "another cluster misses");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two contexts of one kubeconfig, on one server, as two users: each has its own
    /// entry, and the credentials are kept as their digest only.
    #[test]
    fn two_contexts_with_different_users_on_one_server_get_different_entries() {
        let dir = dir("users");
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            "apiVersion: v1\nkind: Config\ncurrent-context: alice\n\
             clusters: [{name: c, cluster: {server: 'https://a:6443'}}]\n\
             contexts: [{name: alice, context: {cluster: c, user: alice}},\n\
                        {name: bob, context: {cluster: c, user: bob}}]\n\
             users: [{name: alice, user: {token: alice-secret-token}},\n\
                     {name: bob, user: {token: bob-secret-token}}]\n",
        )
        .unwrap();
        let identity_of = |context: Option<&str>| {
            let config = dispatch_kf_client::ClusterConfig {
                kubeconfig: Some(kubeconfig.clone()),
                context: context.map(str::to_owned),
                request_timeout: std::time::Duration::from_secs(5),
            };
            crate::connect::block_on(config.identity()).unwrap()
        };
        let (alice, bob) = (identity_of(None), identity_of(Some("bob")));
        assert_eq!(alice.server, bob.server);
        assert_eq!((alice.context.as_str(), alice.user.as_str()), ("alice", "alice"));
        assert_eq!((bob.context.as_str(), bob.user.as_str()), ("bob", "bob"));
        assert_ne!(alice.credentials, bob.credentials);

        let cache = |who: &Identity| Cache::of(Some(&dir), who, &settings("ns")).unwrap();
        cache(&alice).keep(&writable(facts(), None), t0()).unwrap();
        assert_ne!(cache(&alice).path, cache(&bob).path);
        assert!(cache(&bob).trusted(t0(), TEN).unwrap().is_none(), "bob trusts not alice's");
        assert!(cache(&alice).trusted(t0(), TEN).unwrap().is_some());
        let kept = std::fs::read_to_string(&cache(&alice).path).unwrap();
        assert!(!kept.contains("secret-token") && kept.contains(&alice.credentials), "{kept}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_kept_file_is_0600_in_a_0700_folder_and_a_file_others_may_write_is_not_trusted() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = dir("modes");
        let cache = Cache::of(Some(&dir), &identity("https://a:6443", "a"), &settings("ns"));
        let cache = cache.unwrap();
        cache.keep(&writable(facts(), None), t0()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&cache.path), mode(cache.path.parent().unwrap())), (0o600, 0o700));
        let loose = std::fs::Permissions::from_mode(0o646);
        std::fs::set_permissions(&cache.path, loose).unwrap();
        let why = cache.trusted(t0(), TEN).err().expect("not trusted, and said so");
        assert!(why.contains(&cache.path.display().to_string()), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A proof of Kueue's readmission gate (the Lease fresh, the AdmissionCheck Active)
    /// is trusted only until the Lease's last renewal runs out, however young the rest
    /// is: a proof made late in the Lease's life is trusted for what is left of it.
    #[test]
    fn a_kueue_gate_proof_is_not_trusted_past_the_leases_last_renewal() {
        let dir = dir("lease");
        let cache = Cache::of(Some(&dir), &identity("https://a:6443", "a"), &settings("ns"));
        let cache = cache.unwrap();
        let proven = PreflightFacts {
            mode: Mode::Kueue,
            may_update_workloads: true,
            readmission_gate: Ok(()),
            ..facts()
        };
        // Renewed 12 s before the proof, for 15 s: 3 s of it are left.
        let expires = t0() + SignedDuration::from_secs(3);
        cache.keep(&writable(proven.clone(), Some(expires)), t0()).unwrap();
        let young = cache.trusted(t0() + SignedDuration::from_secs(2), TEN).unwrap();
        let young = young.expect("before the renewal runs out");
        assert_eq!(young.preflight.gate_proof_expires, Some(expires));
        assert!(cache.trusted(expires, TEN).unwrap().is_none(), "when the renewal runs out");
        cache.keep(&writable(proven, None), t0()).unwrap();
        assert!(cache.trusted(t0(), TEN).unwrap().is_none(), "a proof that never expires");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Observe-only because no gate leads is not kept: the next command probes again,
    /// and writes as soon as a gate leads again.
    #[test]
    fn an_observe_only_preflight_for_an_unproven_gate_is_not_kept() {
        let dir = dir("gate-down");
        let cache = Cache::of(Some(&dir), &identity("https://a:6443", "a"), &settings("ns"));
        let cache = cache.unwrap();
        cache.keep(&writable(facts(), None), t0()).unwrap();
        let gate_down = PreflightFacts {
            mode: Mode::Kueue,
            may_update_workloads: true,
            readmission_gate: Err("the gate controller's Lease (held by gate-0) expired".into()),
            ..facts()
        };
        let preflight = writable(gate_down, None);
        assert!(
            matches!(preflight.access, Writability::ObserveOnly { .. }),
            "{:?}",
            preflight.access
        );
        cache.keep(&preflight, t0()).unwrap();
        assert!(cache.trusted(t0(), TEN).unwrap().is_none(), "and what was kept is gone");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_observe_only_preflight_is_kept_as_a_writable_one_is_and_a_read_only_one_is_not() {
        let dir = dir("observe-only");
        let cache = Cache::of(Some(&dir), &identity("https://a:6443", "a"), &settings("ns"));
        let cache = cache.unwrap();
        let mut denied = facts();
        denied.missing_writes = vec!["create trainjobs".into()];
        cache.keep(&Preflight::of(denied, NO_READS, Vec::new(), None), t0()).unwrap();
        let kept = cache.trusted(t0(), TEN).unwrap().expect("the observe-only preflight");
        let Writability::ObserveOnly { missing } = kept.preflight.access else {
            panic!("{:?}", kept.preflight.access)
        };
        assert!(missing.contains("create trainjobs"), "{missing}");
        let mut read_only = facts();
        read_only.read_only = true;
        cache.keep(&Preflight::of(read_only, NO_READS, Vec::new(), None), t0()).unwrap();
        assert!(cache.trusted(t0(), TEN).unwrap().is_none(), "read-only removes the kept one");
        std::fs::write(&cache.path, b"not json").unwrap();
        assert!(cache.trusted(t0(), TEN).unwrap().is_none(), "a bad file misses");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
