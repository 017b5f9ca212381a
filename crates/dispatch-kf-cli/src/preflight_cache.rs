//! The last preflight a writing command trusted, per cluster and settings
//! (docs/cli.md#fast-commands-the-preflight-cache): kept in the platform's cache
//! folder (`~/.cache/dispatch-kf/preflight/` on Linux), so that `hold` takes about as
//! long as `find` instead of probing the cluster every time.
//!
//! Only a preflight that found the Backend writable is kept: one that found it
//! observe-only is run again by the next command, so a fixed permission takes effect
//! at once. A kept preflight is trusted while it is younger than `--preflight-max-age`
//! (10 minutes by default; `0s` never trusts one); `preflight` always runs in full and
//! keeps what it finds. The cluster is named by its server's URL; the settings by all
//! they hold, so any change of either is a miss.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use dispatch_kf::Preflight;
use dispatch_kf_model::Settings;
use dispatch_kf_model::capabilities::{PreflightFacts, Writability};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

/// One kept preflight.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    /// The cluster and settings it was made for, whole (the file name is their hash).
    key: String,
    /// When it was made.
    at: Timestamp,
    facts: PreflightFacts,
    nodes_readable: bool,
    lacking: Vec<String>,
}

/// Where the preflights of one cluster and settings are kept.
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
    /// The cache of the cluster at `server` with `settings`, under `dir` (the
    /// platform's cache folder); `None` when there is no such folder.
    pub(crate) fn of(dir: Option<&Path>, server: &str, settings: &Settings) -> Option<Cache> {
        let key = format!("{server}\n{settings:?}");
        let mut hasher = std::hash::DefaultHasher::new();
        key.hash(&mut hasher);
        let path =
            dir?.join("dispatch-kf/preflight").join(format!("{:016x}.json", hasher.finish()));
        Some(Cache { path, key })
    }

    /// The kept preflight, when there is one for this key younger than `max_age` at
    /// `now`. A file that cannot be read is a miss, never an error: the command then
    /// runs the preflight in full.
    pub(crate) fn trusted(&self, now: Timestamp, max_age: SignedDuration) -> Option<Trusted> {
        let kept: Kept = serde_json::from_slice(&std::fs::read(&self.path).ok()?).ok()?;
        let age = now.duration_since(kept.at);
        if kept.key != self.key || age.is_negative() || age >= max_age {
            return None;
        }
        Some(Trusted {
            preflight: Preflight::of(kept.facts, kept.nodes_readable, kept.lacking),
            age,
            path: self.path.clone(),
        })
    }

    /// Keeps `preflight`, made at `now`, when it found the Backend writable; removes
    /// what was kept otherwise. Failing to write is not an error: the next command
    /// runs the preflight again.
    pub(crate) fn keep(&self, preflight: &Preflight, now: Timestamp) {
        if preflight.access != Writability::Writable {
            let _ = std::fs::remove_file(&self.path);
            return;
        }
        let kept = Kept {
            key: self.key.clone(),
            at: now,
            facts: preflight.facts.clone(),
            nodes_readable: preflight.nodes_readable,
            lacking: preflight.lacking.clone(),
        };
        let Ok(json) = serde_json::to_vec_pretty(&kept) else { return };
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Written whole then renamed: a command reading at the same time sees the old
        // file or the new one, never half of one.
        let partial = self.path.with_extension(format!("{}.partial", std::process::id()));
        if std::fs::write(&partial, json).is_ok() {
            let _ = std::fs::rename(&partial, &self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_kf_model::Mode;

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

    fn settings(namespace: &str) -> Settings {
        let doc = serde_json::json!({"name": "kf", "namespace": namespace,
            "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}]});
        Settings::from_value(&doc).unwrap()
    }

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dispatch-kf-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_writable_preflight_is_trusted_until_it_is_too_old_and_only_for_its_key() {
        let dir = dir("age");
        let t0: Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
        let cache = Cache::of(Some(&dir), "https://a:6443", &settings("ns")).unwrap();
        let ten = SignedDuration::from_mins(10);
        assert!(cache.trusted(t0, ten).is_none(), "nothing kept yet");
        cache.keep(&Preflight::of(facts(), true, Vec::new()), t0);
        let later = t0 + SignedDuration::from_mins(9);
        let trusted = cache.trusted(later, ten).expect("younger than ten minutes");
        assert_eq!(trusted.preflight.facts, facts());
        assert!(trusted.preflight.nodes_readable);
        assert_eq!(trusted.age, SignedDuration::from_mins(9));
        assert!(cache.trusted(t0 + ten, ten).is_none(), "ten minutes old is too old");
        assert!(cache.trusted(t0, SignedDuration::ZERO).is_none(), "0s trusts nothing");
        let other_ns = Cache::of(Some(&dir), "https://a:6443", &settings("other")).unwrap();
        assert!(other_ns.trusted(later, ten).is_none(), "other settings miss");
        let other_cluster = Cache::of(Some(&dir), "https://b:6443", &settings("ns")).unwrap();
        assert!(other_cluster.trusted(later, ten).is_none(), "another cluster misses");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_observe_only_preflight_is_not_kept_and_removes_the_kept_one() {
        let dir = dir("observe-only");
        let t0: Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
        let cache = Cache::of(Some(&dir), "https://a:6443", &settings("ns")).unwrap();
        cache.keep(&Preflight::of(facts(), false, Vec::new()), t0);
        let mut denied = facts();
        denied.missing_writes = vec!["create trainjobs".into()];
        cache.keep(&Preflight::of(denied, false, Vec::new()), t0);
        assert!(cache.trusted(t0, SignedDuration::from_mins(10)).is_none());
        std::fs::write(&cache.path, b"not json").unwrap();
        assert!(cache.trusted(t0, SignedDuration::from_mins(10)).is_none(), "a bad file misses");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
