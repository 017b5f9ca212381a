//! The prologue: the POSIX sh script the TrainJob's command starts with
//! (`docs/render.md#the-prologue`).
//!
//! `spec.trainer.command` is `/bin/sh`, `-c`, [`PROLOGUE`], `dispatch-prologue`, then the
//! job's command, so the script runs with `$0` = `dispatch-prologue` and `"$@"` = the
//! job's command. When `DISPATCH_K8S_WORKDIR` is set it enters that directory; if it
//! cannot, it says so on standard error and in `/dev/termination-log` (when writable)
//! and exits 125. Then it `exec`s the command, which keeps its exit status and signals.

/// The exit status of a container whose working directory does not exist.
pub(crate) const EXIT_NO_WORKDIR: i32 = 125;

/// The script, kept short and POSIX so that any image's `/bin/sh` runs it.
pub(crate) const PROLOGUE: &str = r#"if [ -n "${DISPATCH_K8S_WORKDIR:-}" ]; then
  if ! cd "$DISPATCH_K8S_WORKDIR" 2>/dev/null; then
    msg="dispatch-prologue: working directory $DISPATCH_K8S_WORKDIR does not exist"
    printf '%s\n' "$msg" >&2
    if [ -w /dev/termination-log ]; then printf '%s\n' "$msg" >/dev/termination-log; fi
    exit 125
  fi
fi
exec "$@"
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;
    use std::process::{Command, Output};

    fn run(workdir: Option<&str>, command: &[&str]) -> Output {
        let mut sh = Command::new("/bin/sh");
        sh.arg("-c").arg(PROLOGUE).arg(keys::PROLOGUE_NAME).args(command);
        sh.env_remove(keys::env::WORKDIR);
        if let Some(dir) = workdir {
            sh.env(keys::env::WORKDIR, dir);
        }
        sh.output().expect("/bin/sh runs")
    }

    #[test]
    fn prologue_runs_the_command_in_the_workdir() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let dir = dir.to_str().unwrap();
        let out = run(Some(dir), &["sh", "-c", "pwd; printf '%s|' \"$@\"", "x", "a b", "c"]);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{dir}\na b|c|"));
    }

    #[test]
    fn prologue_without_workdir_execs_the_command_with_its_status() {
        let out = run(None, &["sh", "-c", "exit 7"]);
        assert_eq!(out.status.code(), Some(7));
        assert!(out.stderr.is_empty());
    }

    #[test]
    fn prologue_exits_125_when_the_workdir_is_missing() {
        let out = run(Some("/nonexistent/dispatch-workdir"), &["true"]);
        assert_eq!(out.status.code(), Some(EXIT_NO_WORKDIR));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "dispatch-prologue: working directory /nonexistent/dispatch-workdir does not exist\n"
        );
        assert!(out.stdout.is_empty());
    }
}
