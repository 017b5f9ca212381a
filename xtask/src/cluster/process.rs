//! The control plane's processes: each started in a process group of its own, so it
//! outlives `cluster up` and `down` can end it with everything it started; its pid is
//! kept in the run folder, its output in `logs/<name>.log`, and what it was started
//! with in `recipes/<name>.json`, so that a fault can kill it and start it again.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Where a process's pid is kept.
fn pid_file(run_dir: &Path, name: &str) -> PathBuf {
    run_dir.join("pids").join(name)
}

/// The log file of a process.
pub(crate) fn log_file(run_dir: &Path, name: &str) -> PathBuf {
    run_dir.join("logs").join(format!("{name}.log"))
}

/// How to tell that a process started again is ready.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Ready {
    /// This local HTTP(S) address answers 200 (`Plane::answers`).
    Answers(String),
    /// It is running.
    Running,
}

/// What a process was started with: enough to start it again as it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Recipe {
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    pub(crate) ready: Ready,
}

impl Recipe {
    /// The recipe of `command`; its environment is what it sets over this process's.
    pub(crate) fn of(command: &Command, ready: Ready) -> Recipe {
        let text = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
        let env =
            command.get_envs().filter_map(|(key, value)| Some((text(key), text(value?)))).collect();
        Recipe {
            program: text(command.get_program()),
            args: command.get_args().map(text).collect(),
            env,
            ready,
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }
}

fn recipe_file(run_dir: &Path, name: &str) -> PathBuf {
    run_dir.join("recipes").join(format!("{name}.json"))
}

/// The recipe `name` was last started with.
pub(crate) fn recipe(run_dir: &Path, name: &str) -> Result<Recipe, String> {
    let file = recipe_file(run_dir, name);
    let text = fs::read_to_string(&file).map_err(|_| {
        format!(
            "no process {name} was started on this control plane ({} is missing)",
            file.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))
}

/// Starts `command` as `name`, detached from this process, its output in its log
/// (begun anew), and keeps its recipe.
pub(crate) fn spawn(
    run_dir: &Path,
    name: &str,
    command: Command,
    ready: Ready,
) -> Result<u32, String> {
    let recipe = Recipe::of(&command, ready);
    let dir = run_dir.join("recipes");
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = recipe_file(run_dir, name);
    let text = serde_json::to_string_pretty(&recipe).expect("a recipe is JSON");
    fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
    launch(run_dir, name, command, false)
}

/// Starts `name` again from its recipe, its output appended to its log; its pid.
pub(crate) fn respawn(run_dir: &Path, name: &str) -> Result<u32, String> {
    launch(run_dir, name, recipe(run_dir, name)?.command(), true)
}

fn launch(run_dir: &Path, name: &str, mut command: Command, again: bool) -> Result<u32, String> {
    use std::os::unix::process::CommandExt;
    for sub in ["pids", "logs"] {
        fs::create_dir_all(run_dir.join(sub)).map_err(|e| format!("{}: {e}", run_dir.display()))?;
    }
    let log_path = log_file(run_dir, name);
    let log = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(again)
        .truncate(!again)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| format!("{}: {e}", log_path.display()))?;
    let child = command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    let pid = child.id();
    fs::write(pid_file(run_dir, name), pid.to_string()).map_err(|e| format!("{name}: {e}"))?;
    Ok(pid)
}

/// Whether the process is there and not a zombie.
pub(crate) fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        }
        Err(_) => false,
    }
}

/// The recorded processes, in the order they were started.
fn recorded(run_dir: &Path) -> Vec<(String, u32)> {
    let Ok(entries) = fs::read_dir(run_dir.join("pids")) else { return Vec::new() };
    let mut found: Vec<(String, u32, std::time::SystemTime)> = entries
        .flatten()
        .filter_map(|e| {
            let pid = fs::read_to_string(e.path()).ok()?.trim().parse().ok()?;
            let name = e.file_name().to_string_lossy().into_owned();
            // A process started again keeps its place: its recipe was written once.
            let first = fs::metadata(recipe_file(run_dir, &name)).or_else(|_| e.metadata());
            let started = first.ok()?.modified().ok()?;
            Some((name, pid, started))
        })
        .collect();
    found.sort_by_key(|(_, _, started)| *started);
    found.into_iter().map(|(name, pid, _)| (name, pid)).collect()
}

/// Ends every recorded process, the last started first, each before the next (the
/// apiserver, stopped together with etcd, would wait for its storage): SIGTERM to its
/// group, then SIGKILL to what is still there after `grace`. Returns the names of those
/// that had to be killed; fails if any is still there after that.
pub(crate) fn stop_all(run_dir: &Path, grace: Duration) -> Result<Vec<String>, String> {
    let mut processes = recorded(run_dir);
    processes.reverse();
    let mut killed = Vec::new();
    for (name, _) in &processes {
        if stop_one(run_dir, name, grace) {
            killed.push(name.clone());
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes.iter().any(|(_, pid)| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some((name, pid)) = processes.iter().find(|(_, pid)| alive(*pid)) {
        return Err(format!("{name} (pid {pid}) is still running after SIGKILL"));
    }
    let _ = fs::remove_dir_all(run_dir.join("pids"));
    Ok(killed)
}

/// Ends the one recorded process `name`, if it runs: SIGTERM, then SIGKILL after
/// `grace`. Returns whether it had to be killed.
pub(crate) fn stop_one(run_dir: &Path, name: &str, grace: Duration) -> bool {
    let Some(pid) = pid_of(run_dir, name) else { return false };
    // A frozen process would not act on SIGTERM.
    signal("CONT", pid);
    signal("TERM", pid);
    let deadline = Instant::now() + grace;
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let kill = alive(pid);
    if kill {
        signal("KILL", pid);
    }
    let _ = fs::remove_file(pid_file(run_dir, name));
    kill
}

/// The pid of the recorded process `name`, if it was started and not stopped.
pub(crate) fn pid_of(run_dir: &Path, name: &str) -> Option<u32> {
    fs::read_to_string(pid_file(run_dir, name)).ok()?.trim().parse().ok()
}

/// Sends `signal` (`KILL`, `STOP`, `CONT`) to the group of the recorded process
/// `name`; fails if it is not running.
pub(crate) fn signal_named(run_dir: &Path, name: &str, sig: &str) -> Result<u32, String> {
    match pid_of(run_dir, name) {
        Some(pid) if alive(pid) => {
            signal(sig, pid);
            Ok(pid)
        }
        _ => Err(format!("{name} is not running on this control plane")),
    }
}

/// Sends `signal` to the process group `pid` leads (each was started as its own group).
fn signal(signal: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

/// Waits until `ready` says yes, failing with the process's last log lines if it dies
/// or `patience` runs out.
pub(crate) fn wait_ready(
    run_dir: &Path,
    name: &str,
    pid: u32,
    patience: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + patience;
    loop {
        if ready() {
            return Ok(());
        }
        let why = if !alive(pid) {
            "exited"
        } else if Instant::now() > deadline {
            "was not ready in time"
        } else {
            std::thread::sleep(Duration::from_millis(250));
            continue;
        };
        return Err(format!(
            "{name} {why}; the end of {}:\n{}",
            log_file(run_dir, name).display(),
            tail(run_dir, name)
        ));
    }
}

/// The last lines of a process's log.
fn tail(run_dir: &Path, name: &str) -> String {
    let text = fs::read_to_string(log_file(run_dir, name)).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_killed_is_started_again_from_its_recipe_its_log_kept() {
        let dir = std::env::temp_dir().join(format!("xtask-process-{}", std::process::id()));
        let mut command = Command::new("sh");
        command.args(["-c", "echo \"life $LIFE\"; exec sleep 60"]).env("LIFE", "one");
        let first = spawn(&dir, "sleeper", command, Ready::Running).unwrap();
        let recipe = recipe(&dir, "sleeper").unwrap();
        assert_eq!(recipe.env, [("LIFE".to_owned(), "one".to_owned())]);
        assert_eq!(recipe.ready, Ready::Running);
        let log = || fs::read_to_string(log_file(&dir, "sleeper")).unwrap();
        let lines = |n: usize| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while log().lines().count() < n && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        lines(1);

        assert_eq!(signal_named(&dir, "sleeper", "KILL"), Ok(first));
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(first) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(first), "killed");
        let second = respawn(&dir, "sleeper").unwrap();
        assert!(second != first && alive(second));
        assert_eq!(pid_of(&dir, "sleeper"), Some(second));
        lines(2);
        assert_eq!(log(), "life one\nlife one\n", "the same environment, the log appended");

        stop_all(&dir, Duration::from_secs(5)).unwrap();
        assert!(!alive(second), "stopped");
        assert!(signal_named(&dir, "sleeper", "KILL").unwrap_err().contains("not running"));
        let _ = fs::remove_dir_all(&dir);
    }
}
