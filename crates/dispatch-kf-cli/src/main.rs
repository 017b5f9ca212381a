//! The `dispatch-kf` binary: the command of [`dispatch_kf_cli`].

fn main() -> std::process::ExitCode {
    dispatch_kf_cli::main(dispatch_kf_cli::Program::DispatchKf)
}
