//! `cargo xtask soak` (`docs/dev/benchmarks.md#the-soak-cargo-xtask-soak`): one Backend drives jobs through
//! Start, Open, Hold, Release and StopJob on the simulated cluster while random faults
//! hit its requests (resets before and after a write, 409, 410, 5xx, a connection that
//! stays silent past the request timeout). After every step it checks the supervisor's
//! invariants; after warm-up, that resident memory stays flat. It ends with one line,
//! `soak: <steps> steps, <faults> faults, <violations> violations, memory <a> -> <b> MiB`,
//! and exits non-zero on any violation.
//!
//! Usage: `soak [JOBS] [SEED]` (200 jobs, seed 1 by default).

use std::process::ExitCode;
use std::time::Duration;

use dispatch_core::{Backend, JobId, Kind, ObjectRef, Result, Watcher};
use dispatch_kf_model::{keys, names};
use dispatch_kf_sim::{Fault, FaultAction, SimOptions};
use dispatch_kf_testkit::{NS, World, cx, hold_cx, job, request, settings};
use serde_json::json;

/// Jobs after which memory is taken as warmed up: the cluster's event window is full.
const WARM_UP: usize = 50;
/// How often a supervisor tries Start, and StopJob, before giving up.
const TRIES: usize = 4;
/// The requests the faults land on, as (verb, resource).
const REQUESTS: [(&str, &str); 14] = [
    ("get", "clustertrainingruntimes"),
    ("create", "trainingruntimes"),
    ("patch", "trainingruntimes"),
    ("delete", "trainingruntimes"),
    ("list", "trainingruntimes"),
    ("create", "trainjobs"),
    ("get", "trainjobs"),
    ("list", "trainjobs"),
    ("update", "trainjobs"),
    ("delete", "trainjobs"),
    ("list", "jobsets"),
    ("delete", "jobsets"),
    ("list", "pods"),
    ("delete", "pods"),
];
/// The kinds of a job the cluster may hold, by plural.
const KINDS: [&str; 4] = ["trainjobs", "trainingruntimes", "jobsets", "pods"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| args.get(i).map_or(Ok(default), |a| a.parse::<u64>());
    let (Ok(jobs), Ok(seed)) = (number(0, 200), number(1, 1)) else {
        eprintln!("usage: soak [JOBS] [SEED]");
        return ExitCode::from(2);
    };
    let mut soak = Soak::new(seed);
    let jobs = usize::try_from(jobs).unwrap_or(usize::MAX);
    let mut warm = resident_mib();
    for n in 0..jobs {
        soak.cycle(&job(u32::try_from(n).unwrap_or(u32::MAX)));
        if n + 1 == WARM_UP.min(jobs) {
            warm = resident_mib();
        }
    }
    let end = resident_mib();
    // Flat: what the allocator keeps may wobble, what a leak holds grows with the jobs.
    if jobs > WARM_UP && end > warm * 1.25 + 8.0 {
        soak.violation(format!("resident memory grew from {warm:.0} to {end:.0} MiB"));
    }
    for v in &soak.violations {
        eprintln!("violation: {v}");
    }
    println!(
        "soak: {} steps, {} faults, {} violations, memory {warm:.0} -> {end:.0} MiB",
        soak.steps,
        soak.faults,
        soak.violations.len()
    );
    if soak.violations.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

struct Soak {
    world: World,
    rng: fastrand::Rng,
    steps: u64,
    faults: u64,
    violations: Vec<String>,
}

impl Soak {
    fn new(seed: u64) -> Soak {
        // A short call bound, so that StopJob after an unanswered create waits seconds,
        // not minutes; a request timeout the silent connection outlasts.
        let settings = settings(json!({"timeouts": {
            "request": "1s", "workload": "2s", "stopJob": "20s", "callBound": "3s"}}));
        // The cluster keeps its last thousand events for watches (ten thousand by
        // default): a full window is reached during warm-up, so what grows after it is
        // the adapter's.
        let options = SimOptions { event_window: 1000, ..SimOptions::default() };
        let world = World::with(options, Duration::from_secs(1), settings);
        Soak { world, rng: fastrand::Rng::with_seed(seed), steps: 0, faults: 0, violations: vec![] }
    }

    fn violation(&mut self, what: String) {
        self.violations.push(what);
    }

    /// One job, through every step a supervisor takes.
    fn cycle(&mut self, job: &JobId) {
        let name = names::make(job, 1);
        let mut started = None;
        // Whether an earlier try may have made the TrainJob (it ended OutcomeUnknown):
        // a retry is then refused, rightly leaving that one in place.
        let mut maybe_made = false;
        for _ in 0..TRIES {
            let result = self.step(|b| async move { b.start(&cx(), &request(job, 1)).await });
            self.check_no_twin(job, &name);
            match result {
                Ok(object) => {
                    started = Some(object);
                    break;
                }
                Err(e) if e.is_refusal() => {
                    if !maybe_made && self.world.sim.get("trainjobs", NS, &name).is_some() {
                        self.violation(format!(
                            "{name}: Start refused ({e}) and left its TrainJob"
                        ));
                    }
                    break;
                }
                Err(e) => maybe_made |= !e.is(Kind::Unreachable),
            }
        }
        if let Some(object) = &started {
            self.run_with_watch(job, object);
        }
        self.stop(job, &name);
    }

    /// Open, Hold and Release, with a Watch of the job open throughout, as a
    /// supervisor would keep one.
    fn run_with_watch(&mut self, job: &JobId, object: &ObjectRef) {
        let backend = self.world.backend.clone();
        let watch = self.world.runtime.block_on(backend.watch(&cx(), job)).ok();
        let _ = self.step(|b| async move { b.open(&hold_cx(), object).await });
        let _ = self.step(|b| async move { b.hold(&hold_cx(), object, 1).await });
        let _ = self.step(|b| async move { b.release(&hold_cx(), object, 1).await });
        drop(watch);
    }

    /// StopJob until it succeeds (the last try without faults); then nothing of the job
    /// may be left, and a Find (as the supervisor's next look) lets go of its evidence.
    fn stop(&mut self, job: &JobId, name: &str) {
        for attempt in 0..TRIES {
            let faulty = attempt + 1 < TRIES;
            let backend = self.world.backend.clone();
            let owned = job.clone();
            let stopping =
                self.world.runtime.spawn(async move { backend.stop_job(&cx(), &owned).await });
            if faulty {
                self.inject();
            }
            while !stopping.is_finished() {
                self.world.sim.advance(Duration::from_secs(30));
                std::thread::sleep(Duration::from_millis(20));
            }
            self.finish_step();
            if let Ok(Ok(())) = self.world.runtime.block_on(stopping) {
                for plural in KINDS {
                    let left = self.of_job(plural, job);
                    if left > 0 {
                        self.violation(format!(
                            "{name}: StopJob succeeded and {left} {plural} remain"
                        ));
                    }
                }
                let _ = self.world.runtime.block_on(self.world.backend.find(&cx(), job));
                return;
            }
        }
        self.violation(format!("{name}: StopJob never succeeded in {TRIES} tries"));
    }

    /// Runs one call with random faults armed, then lets the cluster settle.
    fn step<T, F, Fut>(&mut self, call: F) -> Result<T>
    where
        F: FnOnce(dispatch_kf::KubeflowBackend) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.inject();
        let result = self.world.runtime.block_on(call(self.world.backend.clone()));
        self.finish_step();
        result
    }

    /// Arms zero to two faults, each on the first or second matching request.
    fn inject(&mut self) {
        for _ in 0..self.rng.usize(0..3) {
            let (verb, resource) = REQUESTS[self.rng.usize(0..REQUESTS.len())];
            let action = match self.rng.u8(0..7) {
                0 => FaultAction::ResetBeforeApply,
                1 => FaultAction::ResetAfterApply,
                2 => Fault::status(409, "Conflict", "the object has been modified"),
                3 if verb == "list" => FaultAction::ExpireList,
                3 | 4 => Fault::status(500, "InternalError", "etcd leader changed"),
                5 => Fault::status(503, "ServiceUnavailable", "the server is shutting down"),
                _ => FaultAction::Delay(Duration::from_millis(1500)),
            };
            self.world.sim.add_fault(Fault::on(verb, resource, action).nth(self.rng.u32(1..3)));
            self.faults += 1;
        }
    }

    fn finish_step(&mut self) {
        self.steps += 1;
        self.world.sim.clear_faults();
        self.world.sim.clear_requests();
        self.world.sim.settle();
    }

    /// Never two TrainJobs of one submission.
    fn check_no_twin(&mut self, job: &JobId, name: &str) {
        let count = self.of_job("trainjobs", job);
        if count > 1 {
            self.violation(format!("{name}: {count} TrainJobs"));
        }
    }

    /// How many objects of `plural` are `job`'s (each job has one submission here), by
    /// the model's rule: its name or its job-id label.
    fn of_job(&self, plural: &str, job: &JobId) -> usize {
        let objects = self.world.sim.list(plural, NS);
        let mine = |o: &&serde_json::Value| {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            names::is_of_job(job, name, o["metadata"]["labels"][keys::LABEL_JOB_ID].as_str())
        };
        objects.iter().filter(mine).count()
    }
}

/// This process's resident memory, in MiB (0 where `/proc` is not there).
fn resident_mib() -> f64 {
    dispatch_kf_testkit::memory_kib("VmRSS") / 1024.0
}
