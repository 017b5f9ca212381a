//! What a shell needs from the command: `completions bash|zsh|fish` prints a shell's
//! completion script (clap_complete), and the hidden `man DIR` writes a man page per
//! command (clap_mangen). `cargo xtask install` runs both after installing.

use std::path::{Path, PathBuf};

use dispatch_core::{Error, Result};

use crate::output;

/// The shells `completions` writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Shell {
    /// Bash (bash-completion).
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
}

/// `completions SHELL`: the shell's completion script on standard output.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  dispatch-kf completions bash > ~/.local/share/bash-completion/completions/dispatch-kf"
)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

/// `man DIR`: writes `dispatch-kf.1` and a page per subcommand into DIR.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf man ~/.local/share/man/man1")]
pub(crate) struct ManArgs {
    /// The folder to write the pages into (made if missing).
    dir: PathBuf,
}

/// Prints the completion script of `cmd` for the shell.
pub(crate) fn completions(args: CompletionsArgs, cmd: clap::Command) -> Result<()> {
    output::write_stdout(&script(args.shell, cmd))
}

/// The completion script of `cmd` for `shell`.
fn script(shell: Shell, mut cmd: clap::Command) -> Vec<u8> {
    use clap_complete::Shell as S;
    let shell = match shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
    };
    let name = cmd.get_name().to_owned();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut bytes);
    bytes
}

/// Writes the man pages of `cmd` into the folder and prints each file's path.
pub(crate) fn man(args: ManArgs, cmd: clap::Command) -> Result<()> {
    let written = write_pages(&args.dir, cmd)?;
    let list: String = written.iter().map(|p| format!("{}\n", p.display())).collect();
    output::write_stdout(list.as_bytes())
}

/// Writes `<name>.1` for `cmd` and `<name>-<sub>.1` for each visible subcommand, at
/// every depth; returns the files written.
fn write_pages(dir: &Path, mut cmd: clap::Command) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::invalid(format!("cannot make {}: {e}", dir.display())))?;
    cmd.build();
    let mut written = Vec::new();
    page(dir, &cmd, &mut written)?;
    Ok(written)
}

fn page(dir: &Path, cmd: &clap::Command, written: &mut Vec<PathBuf>) -> Result<()> {
    let name = cmd.get_name().to_owned();
    let mut bytes = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut bytes)
        .map_err(|e| Error::invalid(format!("cannot render the man page of {name}: {e}")))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, bytes)
        .map_err(|e| Error::invalid(format!("cannot write {}: {e}", path.display())))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        page(dir, &sub.clone().name(format!("{name}-{}", sub.get_name())), written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every visible subcommand's name.
    fn subcommands() -> Vec<String> {
        let cmd = crate::cli::command(crate::Program::DispatchKf);
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_owned())
            .collect()
    }

    #[test]
    fn each_shell_script_names_every_subcommand() {
        let names = subcommands();
        assert!(names.len() > 15, "{names:?}");
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let cmd = crate::cli::command(crate::Program::DispatchKf);
            let text = String::from_utf8(script(shell, cmd)).unwrap();
            assert!(text.contains("dispatch-kf"), "{shell:?}");
            for name in &names {
                assert!(text.contains(name.as_str()), "{shell:?} lacks {name}");
            }
        }
    }

    #[test]
    fn man_writes_a_page_for_the_command_and_each_subcommand() {
        let dir = std::env::temp_dir().join(format!("dispatch-kf-man-{}", std::process::id()));
        let written = write_pages(&dir, crate::cli::command(crate::Program::DispatchKf)).unwrap();
        let files: Vec<String> =
            written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert!(files.contains(&"dispatch-kf.1".to_owned()), "{files:?}");
        assert!(files.contains(&"dispatch-kf-sim-serve.1".to_owned()), "{files:?}");
        for name in subcommands() {
            assert!(files.contains(&format!("dispatch-kf-{name}.1")), "{name}: {files:?}");
        }
        assert!(!files.iter().any(|f| f.starts_with("dispatch-kf-man")), "{files:?}");
        let find = std::fs::read_to_string(dir.join("dispatch-kf-find.1")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(find.starts_with(".ie") || find.contains(".TH"), "{find}");
        assert!(find.contains("in\\-flight") || find.contains("in-flight"), "{find}");
    }
}
