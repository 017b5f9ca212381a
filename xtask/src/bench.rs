//! `cargo xtask bench classify`: times `dispatch-kf classify -o json` on a generated dump
//! against `serde_json` parsing the same bytes into a `Value` (the model crate's
//! `parse_value` example), at 1x, 4x and 16x the size, and prints the ratios and the
//! peak memory of each run
//! (`docs/benchmarks.md#offline-classification-cargo-xtask-bench-classify`).
//!
//! The base dump has 2,000 TrainJobs (each with its JobSet, runtime copy and 8 pods:
//! 16,000 pods) and 500 Nodes, about 100 MB, written into `target/bench-classify/`.
//! `--max-scale N` stops at a smaller multiple when disk, memory or time are short;
//! `--keep` leaves the dumps in place for profiling. classify runs three times per size
//! and its best time counts (the machine is shared); the baseline runs once.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::run::{self, project_root};

/// TrainJobs in the 1x dump.
const BASE_JOBS: usize = 2_000;
/// Pods per TrainJob.
const PODS_PER_JOB: usize = 8;
/// Nodes in the 1x dump.
const BASE_NODES: usize = 500;
/// How many times classify runs per size (the best is kept); the baseline runs once,
/// being the slower by far and, at 16x, needing some 17 GB.
const CLASSIFY_RUNS: usize = 3;
/// The multiples measured.
const SCALES: [usize; 3] = [1, 4, 16];
/// The bars (`docs/benchmarks.md#offline-classification-cargo-xtask-bench-classify`):
/// time ratio, growth of 16x, memory per file byte.
const MAX_RATIO: f64 = 1.5;
const MAX_GROWTH_16X: f64 = 20.0;
const MAX_MEMORY_PER_BYTE: f64 = 3.0;

/// One measured run.
struct Measure {
    seconds: f64,
    peak_kib: u64,
}

/// Runs the benchmark named by `args[0]` (only `classify` exists).
pub(crate) fn run(args: &[String]) -> run::Result {
    const USAGE: &str = "usage: cargo xtask bench classify [--max-scale N] [--keep]";
    if args.first().map(String::as_str) != Some("classify") {
        return Err(USAGE.to_owned());
    }
    let (mut max_scale, mut keep) = (16, false);
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--keep" => keep = true,
            "--max-scale" => {
                let n = rest.next().and_then(|n| n.parse().ok());
                max_scale = n.ok_or("--max-scale wants a number")?;
            }
            _ => return Err(USAGE.to_owned()),
        }
    }
    run::cargo(&["build", "--release", "-p", "dispatch-kf-cli", "--bin", "dispatch-kf"])?;
    run::cargo(&["build", "--release", "-p", "dispatch-kf-model", "--example", "parse_value"])?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| project_root().join("target"), PathBuf::from);
    let dir = target.join("bench-classify");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let cli = target.join("release/dispatch-kf");
    let baseline = target.join("release/examples/parse_value");
    let mut report = String::new();
    let mut first_seconds = None;
    let mut failures = Vec::new();
    for scale in SCALES.into_iter().filter(|s| *s <= max_scale) {
        let path = dir.join(format!("dump-{scale}x.json"));
        let bytes =
            generate(&path, scale).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let args = ["classify", "--now", "2026-11-29T12:00:00Z", "-o", "json"];
        let ours = best_of(CLASSIFY_RUNS, &cli, &args, &path)?;
        let base = best_of(1, &baseline, &[], &path)?;
        if !keep {
            std::fs::remove_file(&path).ok();
        }
        let ratio = ours.seconds / base.seconds;
        let memory = (ours.peak_kib * 1024) as f64 / bytes as f64;
        let growth = ours.seconds / *first_seconds.get_or_insert(ours.seconds);
        let _ = writeln!(
            report,
            "{scale:>3}x {:>8.1} MB  classify {:>7.3}s {:>7.1} MB peak ({memory:.2}x file)  \
             serde_json Value {:>7.3}s {:>7.1} MB peak  ratio {ratio:.2}  growth vs 1x {growth:.2}",
            bytes as f64 / 1e6,
            ours.seconds,
            ours.peak_kib as f64 / 1024.0,
            base.seconds,
            base.peak_kib as f64 / 1024.0,
        );
        if ratio > MAX_RATIO {
            failures.push(format!("{scale}x: ratio {ratio:.2} > {MAX_RATIO}"));
        }
        if memory > MAX_MEMORY_PER_BYTE {
            failures.push(format!(
                "{scale}x: peak memory {memory:.2}x the file > {MAX_MEMORY_PER_BYTE}x"
            ));
        }
        if scale == 16 && growth > MAX_GROWTH_16X {
            failures.push(format!("16x took {growth:.1}x the time of 1x > {MAX_GROWTH_16X}"));
        }
    }
    println!("{report}");
    if failures.is_empty() { Ok(()) } else { Err(failures.join("; ")) }
}

/// The fastest of `runs` runs (the machine is shared, so single runs are noisy), with
/// the highest peak memory seen.
fn best_of(runs: usize, program: &Path, args: &[&str], file: &Path) -> Result<Measure, String> {
    let mut best = measure(program, args, file)?;
    for _ in 1..runs {
        let m = measure(program, args, file)?;
        best = Measure {
            seconds: best.seconds.min(m.seconds),
            peak_kib: best.peak_kib.max(m.peak_kib),
        };
    }
    Ok(best)
}

/// Runs `program args file` under `/usr/bin/time -v` (when present), output discarded.
fn measure(program: &Path, args: &[&str], file: &Path) -> Result<Measure, String> {
    let timed = Path::new("/usr/bin/time").exists();
    let mut cmd = if timed {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-v").arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args).arg(file).stdout(Stdio::null()).stderr(Stdio::piped());
    let start = Instant::now();
    let out = cmd.output().map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let seconds = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{} failed: {stderr}", program.display()));
    }
    let peak_kib = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes): "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    Ok(Measure { seconds, peak_kib })
}

/// Writes the dump of `scale` times the base size; returns its size in bytes.
fn generate(path: &Path, scale: usize) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    w.write_all(b"{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n")?;
    let mut first = true;
    let mut item = |w: &mut BufWriter<File>, text: String| -> std::io::Result<()> {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        w.write_all(text.as_bytes())
    };
    let nodes = BASE_NODES * scale;
    for j in 0..BASE_JOBS * scale {
        let name = format!("dj-{}-s1", job_id(j).to_lowercase());
        let uid = fake_uid(j as u64, 1);
        item(&mut w, train_job(j, &name, &uid))?;
        item(&mut w, job_set(&name, &uid, j))?;
        item(&mut w, runtime_copy(&name, &uid, j))?;
        for rank in 0..PODS_PER_JOB {
            item(&mut w, pod(j, &name, rank, (j * PODS_PER_JOB + rank) % nodes))?;
        }
    }
    for n in 0..nodes {
        item(&mut w, node(n))?;
    }
    w.write_all(b"\n], \"metadata\": {\"resourceVersion\": \"\"}}\n")?;
    w.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// A canonical JobId for job `j`.
fn job_id(j: usize) -> String {
    const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut id = String::from("01JDQ4V8Z6K3");
    let mut n = j;
    for _ in 0..14 {
        id.push(CROCKFORD[n % 32] as char);
        n /= 32;
    }
    id
}

fn fake_uid(a: u64, b: u64) -> String {
    let x = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    format!(
        "{:08x}-{:04x}-4{:03x}-9{:03x}-{:012x}",
        x >> 32,
        x & 0xffff,
        a & 0xfff,
        b & 0xfff,
        x & 0xffff_ffff_ffff
    )
}

fn labels(j: usize) -> String {
    format!(
        "\"dispatch.phpboyscout.uk/job-id\": \"{}\", \"dispatch.phpboyscout.uk/managed-by\": \"dispatch\", \
         \"dispatch.phpboyscout.uk/submission\": \"1\"",
        job_id(j)
    )
}

fn owner(kind: &str, api: &str, name: &str, uid: &str) -> String {
    format!(
        "[{{\"apiVersion\": \"{api}\", \"blockOwnerDeletion\": true, \"controller\": true, \
         \"kind\": \"{kind}\", \"name\": \"{name}\", \"uid\": \"{uid}\"}}]"
    )
}

fn train_job(j: usize, name: &str, uid: &str) -> String {
    let status = match j % 10 {
        0 => {
            "{\"conditions\": [{\"lastTransitionTime\": \"2026-11-29T10:30:05Z\", \"message\": \
              \"jobset failed due to one or more job failures\", \"reason\": \"FailedJobs\", \
              \"status\": \"True\", \"type\": \"Failed\"}]}"
        }
        1 => {
            "{\"conditions\": [{\"lastTransitionTime\": \"2026-11-29T11:00:00Z\", \"message\": \
              \"jobset completed successfully\", \"reason\": \"AllJobsCompleted\", \"status\": \
              \"True\", \"type\": \"Complete\"}]}"
        }
        _ => {
            "{\"jobsStatus\": [{\"active\": 8, \"failed\": 0, \"name\": \"node\", \"ready\": 8, \
              \"succeeded\": 0, \"suspended\": 0}]}"
        }
    };
    format!(
        "{{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"TrainJob\", \"metadata\": {{\
         \"annotations\": {{\"dispatch.phpboyscout.uk/admission\": \"1\", \"dispatch.phpboyscout.uk/attempt-token\": \
         \"1-3f9a2c1b7e4d5a60\", \"dispatch.phpboyscout.uk/comment\": \"dispatch job {id} generation 0 submission 1 a=1\", \
         \"dispatch.phpboyscout.uk/generation\": \"0\"}}, \"creationTimestamp\": \"2026-11-29T10:00:00Z\", \"generation\": 2, \
         \"labels\": {{{labels}}}, \"managedFields\": [{{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"fieldsType\": \
         \"FieldsV1\", \"fieldsV1\": {{\"f:spec\": {{\"f:suspend\": {{}}, \"f:trainer\": {{\".\": {{}}, \"f:command\": {{}}}}}}}}, \
         \"manager\": \"dispatch-kf\", \"operation\": \"Update\", \"time\": \"2026-11-29T10:00:05Z\"}}], \"name\": \"{name}\", \
         \"namespace\": \"team-a\", \"resourceVersion\": \"{rv}\", \"uid\": \"{uid}\"}}, \"spec\": {{\"managedBy\": \
         \"trainer.kubeflow.org/trainjob-controller\", \"runtimeRef\": {{\"apiGroup\": \"trainer.kubeflow.org\", \"kind\": \
         \"TrainingRuntime\", \"name\": \"{name}\"}}, \"suspend\": false, \"trainer\": {{\"command\": [\"torchrun\", \
         \"train.py\", \"--epochs\", \"30\"], \"image\": \"ghcr.io/acme/train:1.4\", \"numNodes\": 8}}}}, \"status\": {status}}}",
        id = job_id(j),
        labels = labels(j),
        rv = 40_000 + j,
    )
}

fn job_set(name: &str, owner_uid: &str, j: usize) -> String {
    format!(
        "{{\"apiVersion\": \"jobset.x-k8s.io/v1alpha2\", \"kind\": \"JobSet\", \"metadata\": {{\"labels\": {{{labels}}}, \
         \"name\": \"{name}\", \"namespace\": \"team-a\", \"ownerReferences\": {owner}, \"uid\": \"{uid}\"}}, \
         \"spec\": {{\"failurePolicy\": {{\"maxRestarts\": 3}}, \"replicatedJobs\": [{{\"name\": \"node\", \"replicas\": 1}}]}}, \
         \"status\": {{\"replicatedJobsStatus\": [{{\"active\": 1, \"failed\": 0, \"name\": \"node\", \"ready\": 1, \
         \"succeeded\": 0, \"suspended\": 0}}], \"restarts\": 0}}}}",
        labels = labels(j),
        owner = owner("TrainJob", "trainer.kubeflow.org/v1alpha1", name, owner_uid),
        uid = fake_uid(j as u64, 2),
    )
}

fn runtime_copy(name: &str, owner_uid: &str, j: usize) -> String {
    format!(
        "{{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"TrainingRuntime\", \"metadata\": {{\"labels\": \
         {{{labels}}}, \"name\": \"{name}\", \"namespace\": \"team-a\", \"ownerReferences\": {owner}, \"uid\": \"{uid}\"}}, \
         \"spec\": {{\"mlPolicy\": {{\"numNodes\": 8, \"torch\": {{\"numProcPerNode\": \"auto\"}}}}, \"template\": {{\"spec\": \
         {{\"replicatedJobs\": [{{\"name\": \"node\", \"template\": {{\"spec\": {{\"template\": {{\"spec\": {{\"containers\": \
         [{{\"name\": \"node\", \"image\": \"ghcr.io/acme/train:1.4\"}}]}}}}}}}}}}]}}}}}}}}",
        labels = labels(j),
        owner = owner("TrainJob", "trainer.kubeflow.org/v1alpha1", name, owner_uid),
        uid = fake_uid(j as u64, 3),
    )
}

fn pod(j: usize, js: &str, rank: usize, node: usize) -> String {
    let failed = j.is_multiple_of(10);
    let state = if failed && rank == 3 {
        "{\"terminated\": {\"containerID\": \"containerd://4f1e0c\", \"exitCode\": 137, \"finishedAt\": \
         \"2026-11-29T10:30:00Z\", \"reason\": \"OOMKilled\", \"startedAt\": \"2026-11-29T10:01:19Z\"}}"
            .to_owned()
    } else if failed {
        format!(
            "{{\"terminated\": {{\"containerID\": \"containerd://4f1e0c\", \"exitCode\": 1, \"finishedAt\": \
             \"2026-11-29T10:30:0{rank}Z\", \"message\": \"NCCL error: remote process exited\", \"reason\": \"Error\", \
             \"startedAt\": \"2026-11-29T10:01:19Z\"}}}}"
        )
    } else {
        "{\"running\": {\"startedAt\": \"2026-11-29T10:01:19Z\"}}".to_owned()
    };
    let env: String = (0..40)
        .map(|i| format!("{{\"name\": \"APP_SETTING_{i}\", \"value\": \"value-{i}-of-the-training-configuration\"}}, "))
        .collect();
    format!(
        "{{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {{\"annotations\": {{\"batch.kubernetes.io/job-completion-index\": \
         \"{rank}\", \"dispatch.phpboyscout.uk/admission\": \"1\"}}, \"creationTimestamp\": \"2026-11-29T10:01:00Z\", \
         \"generateName\": \"{js}-node-0-{rank}-\", \"labels\": {{{labels}, \"batch.kubernetes.io/job-completion-index\": \"{rank}\", \
         \"batch.kubernetes.io/job-name\": \"{js}-node-0\", \"jobset.sigs.k8s.io/job-index\": \"0\", \
         \"jobset.sigs.k8s.io/jobset-name\": \"{js}\", \"jobset.sigs.k8s.io/replicatedjob-name\": \"node\", \
         \"jobset.sigs.k8s.io/restart-attempt\": \"0\"}}, \"managedFields\": [{{\"apiVersion\": \"v1\", \"fieldsType\": \"FieldsV1\", \
         \"fieldsV1\": {{\"f:status\": {{\"f:conditions\": {{\"k:{{\\\"type\\\":\\\"Ready\\\"}}\": {{\".\": {{}}, \"f:status\": {{}}}}}}, \
         \"f:containerStatuses\": {{}}, \"f:phase\": {{}}}}}}, \"manager\": \"kubelet\", \"operation\": \"Update\", \"subresource\": \"status\", \
         \"time\": \"2026-11-29T10:01:20Z\"}}], \"name\": \"{js}-node-0-{rank}-x7k2p\", \"namespace\": \"team-a\", \"ownerReferences\": {owner}, \
         \"uid\": \"{uid}\"}}, \"spec\": {{\"containers\": [{{\"command\": [\"torchrun\", \"--nnodes=8\", \"train.py\"], \"env\": [{env}\
         {{\"name\": \"DISPATCH_JOB_ID\", \"value\": \"{id}\"}}], \"image\": \"ghcr.io/acme/train:1.4\", \"name\": \"node\", \
         \"resources\": {{\"limits\": {{\"nvidia.com/gpu\": \"8\"}}, \"requests\": {{\"cpu\": \"32\", \"memory\": \"256Gi\", \
         \"nvidia.com/gpu\": \"8\"}}}}, \"volumeMounts\": [{{\"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\", \
         \"name\": \"kube-api-access-9xk2z\", \"readOnly\": true}}]}}], \"nodeName\": \"gpu-node-{node}\", \"restartPolicy\": \"Never\", \
         \"schedulerName\": \"default-scheduler\", \"tolerations\": [{{\"effect\": \"NoExecute\", \"key\": \
         \"node.kubernetes.io/not-ready\", \"operator\": \"Exists\", \"tolerationSeconds\": 300}}], \"volumes\": [{{\"name\": \
         \"kube-api-access-9xk2z\", \"projected\": {{\"defaultMode\": 420, \"sources\": [{{\"serviceAccountToken\": \
         {{\"expirationSeconds\": 3607, \"path\": \"token\"}}}}]}}}}]}}, \"status\": {{\"conditions\": [{{\"lastTransitionTime\": \
         \"2026-11-29T10:01:05Z\", \"status\": \"True\", \"type\": \"Initialized\"}}, {{\"lastTransitionTime\": \"2026-11-29T10:01:20Z\", \
         \"status\": \"True\", \"type\": \"Ready\"}}, {{\"lastTransitionTime\": \"2026-11-29T10:01:01Z\", \"status\": \"True\", \
         \"type\": \"PodScheduled\"}}], \"containerStatuses\": [{{\"image\": \"ghcr.io/acme/train:1.4\", \"name\": \"node\", \
         \"ready\": true, \"restartCount\": 0, \"started\": true, \"state\": {state}}}], \"hostIP\": \"10.0.1.{h}\", \
         \"phase\": \"{phase}\", \"podIP\": \"10.244.{h}.7\", \"qosClass\": \"Burstable\", \"startTime\": \"2026-11-29T10:01:01Z\"}}}}",
        labels = labels(j),
        owner = owner("Job", "batch/v1", &format!("{js}-node-0"), &fake_uid(j as u64, 4)),
        uid = fake_uid(j as u64, 100 + rank as u64),
        id = job_id(j),
        h = node % 250,
        phase = if failed { "Failed" } else { "Running" },
    )
}

fn node(n: usize) -> String {
    let images: String = (0..12)
        .map(|i| {
            format!(
                "{{\"names\": [\"ghcr.io/acme/image-{i}@sha256:0f3c9a\"], \"sizeBytes\": {}}}, ",
                1_000_000 + i
            )
        })
        .collect();
    format!(
        "{{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {{\"labels\": {{\"kubernetes.io/hostname\": \"gpu-node-{n}\", \
         \"nvidia.com/gpu.product\": \"H100\"}}, \"name\": \"gpu-node-{n}\", \"uid\": \"{uid}\"}}, \"spec\": {{\"podCIDR\": \
         \"10.244.0.0/24\"}}, \"status\": {{\"allocatable\": {{\"nvidia.com/gpu\": \"8\"}}, \"conditions\": [{{\"lastTransitionTime\": \
         \"2026-11-29T09:00:00Z\", \"message\": \"kubelet is posting ready status\", \"reason\": \"KubeletReady\", \"status\": \"True\", \
         \"type\": \"Ready\"}}], \"images\": [{images}{{\"names\": [\"busybox\"], \"sizeBytes\": 1}}], \"nodeInfo\": {{\"kubeletVersion\": \"v1.33.2\"}}}}}}",
        uid = fake_uid(n as u64, 9),
    )
}
