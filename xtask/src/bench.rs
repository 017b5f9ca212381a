//! `cargo xtask bench cli` times every command on `sim serve` (`bench/cli.rs`).
//!
//! `cargo xtask bench scale` runs the scale benchmark of the testkit (one Backend, M
//! other TrainJobs, N watched jobs; docs/dev/benchmarks.md); with `--stack NAME`, on the
//! real control plane of that stack, started for it and stopped after.
//!
//! `cargo xtask bench job` runs one big job on the real control plane, and `cargo xtask
//! bench many-jobs` reads a cluster of many TrainJobs, each step through `dispatch-kf`
//! beside `kubectl`; `cargo xtask bench gate` readmits many Workloads through the
//! readmission gate beside Kueue alone; `cargo xtask bench events` what the cause
//! controller costs among many TrainJobs (`bench/real.rs`).
//!
//! `cargo xtask bench classify`: times `dispatch-kf classify -o json` on two generated
//! dumps, at 1x, 4x and 16x the size, against two baselines reading the same bytes:
//! the skim (`serde_json` looking at every byte and keeping nothing, the model's
//! `baseline skim`), the floor for any reader, and the parse into a `serde_json::Value`
//! (`baseline value`), what a generic JSON tool does. It prints, for each dump and
//! size, the time of each, classify's ratio to both, its growth from 1x, and its peak
//! memory over the file's size, then fails listing each bar missed (docs/dev/benchmarks.md):
//! each dump has its own bars on the ratio to the skim, to the `Value` parse and on
//! memory.
//!
//! The lean dump (`lean`) holds the fields classification reads and little else; the
//! heavy one (`heavy`) holds objects as a real cluster prints them. `--max-scale N`
//! stops at a smaller multiple when disk, memory or time are short; `--keep` leaves the
//! dumps in `<target>/bench-classify/` for profiling. classify and the skim run three
//! times per size and the best time counts (the machine is shared); the `Value` parse
//! runs once, and not at all on a file over [`MAX_VALUE_BYTES`], whose `Value` would not
//! fit in memory.

mod cli;
mod heavy;
mod lean;
mod list;
mod real;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cluster;
use crate::run::{self, target_dir};

/// TrainJobs in the 1x dumps.
const BASE_JOBS: usize = 2_000;
/// Pods per TrainJob.
const PODS_PER_JOB: usize = 8;
/// Nodes in the 1x dumps.
const BASE_NODES: usize = 500;
/// How many times classify and the skim run per size (the best is kept).
const BEST_OF: usize = 3;
/// The multiples measured.
const SCALES: [usize; 3] = [1, 4, 16];
/// The largest file parsed into a `Value` (which takes some ten times the file).
const MAX_VALUE_BYTES: u64 = 1_000_000_000;
/// Bar: the 16x input in at most this many times the 1x time.
const MAX_GROWTH_16X: f64 = 18.0;

/// One generated dump and its bars.
struct Dump {
    name: &'static str,
    /// Bar: classify's time at most this many times the skim's.
    max_skim_ratio: f64,
    /// Bar: classify's time at most this many times the `Value` parse's (where it runs).
    max_value_ratio: f64,
    /// Bar: classify's peak memory at most this many times the file.
    max_memory_per_byte: f64,
    generate: fn(&Path, usize) -> std::io::Result<u64>,
}

/// The heavy dump is held to the bars asked of classification; the lean one to bars
/// that hold with margin above the floor docs/dev/benchmarks.md measures
/// (docs/dev/benchmarks.md#the-floor-of-the-lean-dump).
const DUMPS: [Dump; 2] = [
    Dump {
        name: "lean",
        max_skim_ratio: 3.0,
        max_value_ratio: 0.4,
        max_memory_per_byte: 1.5,
        generate: lean::generate,
    },
    Dump {
        name: "heavy",
        max_skim_ratio: 1.5,
        max_value_ratio: 0.2,
        max_memory_per_byte: 1.0,
        generate: heavy::generate,
    },
];

/// One measured run.
#[derive(Clone, Copy)]
struct Measure {
    seconds: f64,
    peak_kib: u64,
}

/// The programs measured: `dispatch-kf` and the model's `baseline` example.
struct Programs {
    classify: PathBuf,
    baseline: PathBuf,
}

/// Runs the benchmark named by `args[0]`: `classify`, `cli`, `job`, `many-jobs`, `gate`,
/// `events` or `scale`.
pub(crate) fn run(args: &[String]) -> run::Result {
    const USAGE: &str = "usage: cargo xtask bench classify [--max-scale N] [--keep]
       cargo xtask bench cli
       cargo xtask bench job [--stack NAME] [--pods 1024] [--gpus-per-pod 1] [--runs 3]
       cargo xtask bench many-jobs [--stack NAME] [--train-jobs 10000] [--namespaces 100] [--runs 3]
       cargo xtask bench gate [--stack NAME] [--workloads 500] [--runs 3]
       cargo xtask bench events [--stack NAME] [--train-jobs 10000] [--namespaces 100] [--idle 60]
       cargo xtask bench scale [--stack NAME | --kubeconfig FILE] [--others 0,1000,10000] [--watched 1,100,1000]";
    match args.first().map(String::as_str) {
        Some("classify") => {}
        Some("cli") => return cli::run(),
        Some("job") => return real::job(&args[1..]),
        Some("many-jobs") => return real::many_jobs(&args[1..]),
        Some("gate") => return real::gate(&args[1..]),
        Some("events") => return real::events(&args[1..]),
        Some("scale") => return scale(&args[1..]),
        _ => return Err(USAGE.to_owned()),
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
    run::cargo(&["build", "--release", "-p", "dispatch-kf-model", "--example", "baseline"])?;
    let target = target_dir();
    let dir = target.join("bench-classify");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let programs = Programs {
        classify: target.join("release/dispatch-kf"),
        baseline: target.join("release/examples/baseline"),
    };
    let mut report = String::from(
        "dump   size  file MB  classify s  skim s  Value s  x skim  x Value  growth  peak MB  peak/file\n",
    );
    let mut failures = Vec::new();
    for dump in &DUMPS {
        let mut first_seconds = None;
        for scale in SCALES.into_iter().filter(|s| *s <= max_scale) {
            let path = dir.join(format!("{}-{scale}x.json", dump.name));
            let bytes = (dump.generate)(&path, scale)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            let measured = measure_all(&programs, &path, bytes);
            if !keep {
                std::fs::remove_file(&path).ok();
            }
            let (ours, skim, value) = measured?;
            let row = Row {
                dump,
                scale,
                bytes,
                ours,
                skim,
                value,
                first: *first_seconds.get_or_insert(ours.seconds),
            };
            report.push_str(&row.line());
            failures.extend(row.misses());
        }
    }
    println!("{report}");
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("bars missed:\n  {}", failures.join("\n  ")))
    }
}

/// `bench scale`'s arguments: the stack whose real control plane to start, if one is
/// named, and the arguments for the bench itself.
fn parse_scale(args: &[String]) -> Result<(Option<&'static cluster::Stack>, Vec<String>), String> {
    let (stack, rest) = cluster::take_stack(args)?;
    let kubeconfig = rest.iter().any(|a| a == "--kubeconfig" || a.starts_with("--kubeconfig="));
    if stack.is_some() && kubeconfig {
        return Err("bench scale: --stack starts a real control plane to measure; it does not go with --kubeconfig".into());
    }
    Ok((stack, rest))
}

/// The scale bench, on the cluster its arguments name, or on a real control plane of
/// the stack named, stopped at the end, measured or not.
fn scale(args: &[String]) -> run::Result {
    let (stack, mut rest) = parse_scale(args)?;
    let Some(stack) = stack else { return run_scale(&rest) };
    let mut measure = || {
        let kubeconfig = cluster::up(&cluster::Options { stack, ..Default::default() })?;
        let kubeconfig = kubeconfig.to_str().ok_or("the kubeconfig's path is not UTF-8")?;
        rest.extend(["--kubeconfig".to_owned(), kubeconfig.to_owned()]);
        run_scale(&rest)
    };
    let result = measure();
    let stopped = cluster::down();
    result.and(stopped)
}

/// The Backend at scale (`crates/dispatch-kf-testkit/src/bin/scale.rs`), built with
/// optimizations: what a supervisor runs.
fn run_scale(args: &[String]) -> run::Result {
    let mut cargo = vec!["run", "--release", "--locked", "-p", "dispatch-kf-testkit"];
    cargo.extend(["--bin", "scale", "--"]);
    cargo.extend(args.iter().map(String::as_str));
    run::cargo(&cargo)
}

/// classify (best of [`BEST_OF`]), the skim (best of [`BEST_OF`]) and the `Value`
/// parse (once, when the file is small enough) on one file.
fn measure_all(
    programs: &Programs,
    path: &Path,
    bytes: u64,
) -> Result<(Measure, Measure, Option<Measure>), String> {
    let args = ["classify", "--now", "2026-11-29T12:00:00Z", "-o", "json"];
    let ours = best_of(BEST_OF, &programs.classify, &args, path)?;
    let skim = best_of(BEST_OF, &programs.baseline, &["skim"], path)?;
    let value = match bytes <= MAX_VALUE_BYTES {
        true => Some(best_of(1, &programs.baseline, &["value"], path)?),
        false => None,
    };
    Ok((ours, skim, value))
}

/// One dump at one size, measured.
struct Row<'a> {
    dump: &'a Dump,
    scale: usize,
    bytes: u64,
    ours: Measure,
    skim: Measure,
    value: Option<Measure>,
    /// classify's time on the 1x dump.
    first: f64,
}

impl Row<'_> {
    fn skim_ratio(&self) -> f64 {
        self.ours.seconds / self.skim.seconds
    }

    /// classify's time over the `Value` parse's, when it ran.
    fn value_ratio(&self) -> Option<f64> {
        self.value.map(|v| self.ours.seconds / v.seconds)
    }

    fn growth(&self) -> f64 {
        self.ours.seconds / self.first
    }

    fn memory(&self) -> f64 {
        (self.ours.peak_kib * 1024) as f64 / self.bytes as f64
    }

    fn line(&self) -> String {
        let mut line = format!(
            "{:<5} {:>4}x {:>8.1} {:>10.3} {:>7.3} ",
            self.dump.name,
            self.scale,
            self.bytes as f64 / 1e6,
            self.ours.seconds,
            self.skim.seconds
        );
        match self.value {
            Some(v) => write!(line, "{:>8.3} ", v.seconds),
            None => write!(line, "{:>8} ", "-"),
        }
        .ok();
        write!(line, "{:>7.2} ", self.skim_ratio()).ok();
        match self.value_ratio() {
            Some(ratio) => write!(line, "{ratio:>8.2} "),
            None => write!(line, "{:>8} ", "-"),
        }
        .ok();
        writeln!(
            line,
            "{:>7.2} {:>8.1} {:>10.2}",
            self.growth(),
            self.ours.peak_kib as f64 / 1024.0,
            self.memory()
        )
        .ok();
        line
    }

    /// The bars this row misses, one line each.
    fn misses(&self) -> Vec<String> {
        let (name, scale) = (self.dump.name, self.scale);
        let mut out = Vec::new();
        if self.skim_ratio() > self.dump.max_skim_ratio {
            out.push(format!(
                "{name} {scale}x: {:.2}x the skim's time > {}x",
                self.skim_ratio(),
                self.dump.max_skim_ratio
            ));
        }
        if let Some(ratio) = self.value_ratio().filter(|r| *r > self.dump.max_value_ratio) {
            out.push(format!(
                "{name} {scale}x: {ratio:.2}x the Value parse's time > {}x",
                self.dump.max_value_ratio
            ));
        }
        if self.memory() > self.dump.max_memory_per_byte {
            out.push(format!(
                "{name} {scale}x: peak memory {:.2}x the file > {}x",
                self.memory(),
                self.dump.max_memory_per_byte
            ));
        }
        if scale == 16 && self.growth() > MAX_GROWTH_16X {
            out.push(format!(
                "{name} 16x took {:.1}x the time of 1x > {MAX_GROWTH_16X}x",
                self.growth()
            ));
        }
        out
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::args;

    #[test]
    fn scale_takes_a_stack_and_passes_the_rest_to_the_bench() {
        let (stack, rest) =
            parse_scale(&args(&["--others", "0,1000", "--stack", "oldest"])).unwrap();
        assert_eq!((stack.map(|s| s.name), rest), (Some("oldest"), args(&["--others", "0,1000"])));
        let (stack, rest) = parse_scale(&args(&["--kubeconfig", "k.yaml"])).unwrap();
        assert_eq!((stack, rest), (None, args(&["--kubeconfig", "k.yaml"])));
    }

    #[test]
    fn scale_refuses_a_stack_beside_a_kubeconfig_or_an_unknown_stack() {
        for bad in [&["--stack", "current", "--kubeconfig=k.yaml"][..], &["--stack", "nope"]] {
            assert!(parse_scale(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
