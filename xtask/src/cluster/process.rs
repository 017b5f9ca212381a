//! The control plane's processes: each started in a process group of its own, so it
//! outlives `cluster up` and `down` can end it with everything it started; its pid is
//! kept in the run folder, its output in `logs/<name>.log`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where a process's pid is kept.
fn pid_file(run_dir: &Path, name: &str) -> PathBuf {
    run_dir.join("pids").join(name)
}

/// The log file of a process.
pub(crate) fn log_file(run_dir: &Path, name: &str) -> PathBuf {
    run_dir.join("logs").join(format!("{name}.log"))
}

/// Starts `command` as `name`, detached from this process, its output in its log.
pub(crate) fn spawn(run_dir: &Path, name: &str, mut command: Command) -> Result<u32, String> {
    use std::os::unix::process::CommandExt;
    for sub in ["pids", "logs"] {
        fs::create_dir_all(run_dir.join(sub)).map_err(|e| format!("{}: {e}", run_dir.display()))?;
    }
    let log_path = log_file(run_dir, name);
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
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
            let started = e.metadata().ok()?.modified().ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), pid, started))
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
    let pid = fs::read_to_string(pid_file(run_dir, name)).ok().and_then(|p| p.trim().parse().ok());
    let Some(pid) = pid else { return false };
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
