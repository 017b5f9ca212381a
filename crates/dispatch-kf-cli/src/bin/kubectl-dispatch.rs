//! The `kubectl-dispatch` binary: the same command as `dispatch-kf`, installed under the
//! name kubectl looks for, so that `kubectl dispatch ...` runs it as a plugin.

fn main() -> std::process::ExitCode {
    dispatch_kf_cli::main(dispatch_kf_cli::Program::KubectlPlugin)
}
