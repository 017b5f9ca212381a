//! The command's settings (`docs/cli.md#settings-a-kubeconfig-is-enough`): where they
//! come from, and the kubectl-style overrides of the command line. A read needs no
//! settings file: the kubeconfig's current context and its namespace are enough, as
//! for any kubectl plugin.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dispatch_core::{Error, Result};
use dispatch_kf_client::ClusterConfig;
use dispatch_kf_model::Kubeconfig;
use dispatch_kf_model::Settings;
use serde_json::{Map, Value, json};

use crate::output;

/// The settings file under the platform's configuration folder.
const CONFIG_FILE: &str = "dispatch-kf/settings.yaml";
/// The backend's name when no settings file names one.
pub(crate) const DEFAULT_NAME: &str = "kubeflow";
/// The runtime when neither a settings file nor `--runtime` names one: the Trainer's
/// stock PyTorch runtime.
const DEFAULT_RUNTIME: &str = "ClusterTrainingRuntime/torch-distributed";

/// Where the settings come from.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A settings file.
    File(PathBuf),
    /// No file: the defaults, the rest from the kubeconfig.
    Defaults,
}

/// `--settings` (or `DISPATCH_KF_SETTINGS`, which clap reads into it), else the
/// configuration folder's `dispatch-kf/settings.yaml` when it exists, else the
/// defaults.
pub(crate) fn locate(given: Option<&str>, config_dir: Option<&Path>) -> Source {
    if let Some(path) = given {
        return Source::File(PathBuf::from(path));
    }
    match config_dir.map(|dir| dir.join(CONFIG_FILE)) {
        Some(file) if file.is_file() => Source::File(file),
        _ => Source::Defaults,
    }
}

/// What the command line says over the settings.
#[derive(Debug, Default)]
pub(crate) struct Overrides<'a> {
    /// `--kubeconfig`.
    pub(crate) kubeconfig: Option<&'a str>,
    /// `--context`.
    pub(crate) context: Option<&'a str>,
    /// `-n/--namespace`.
    pub(crate) namespace: Option<&'a str>,
    /// `--runtime KIND/NAME`, each; they replace the settings' runtimes.
    pub(crate) runtimes: &'a [String],
}

/// The settings of `source` with `overrides` over them; a namespace neither gives is the
/// kubeconfig context's (`default` without one), as kubectl takes it.
pub(crate) async fn resolve(source: &Source, overrides: &Overrides<'_>) -> Result<Settings> {
    let (mut doc, what) = match source {
        Source::File(path) => {
            let shown = path.display().to_string();
            let bytes = output::read_input(&shown)?;
            (Settings::read_document(&bytes).map_err(|e| e.context(&shown))?, shown)
        }
        Source::Defaults => (defaults(), "the default settings (no settings file)".to_owned()),
    };
    if let Some(top) = doc.as_object_mut() {
        apply(top, overrides)?;
        if !top.contains_key("namespace") {
            let namespace = kubeconfig_of(top).default_namespace().await?;
            top.insert("namespace".into(), namespace.into());
        }
    }
    Settings::from_value(&doc).map_err(|e| e.context(&what))
}

/// The settings document when there is no file: a name and the default runtime.
fn defaults() -> Value {
    let runtime = runtime_doc(DEFAULT_RUNTIME).unwrap_or_default();
    json!({"name": DEFAULT_NAME, "runtimes": [runtime]})
}

/// Puts the command line's overrides into the settings document.
fn apply(top: &mut Map<String, Value>, overrides: &Overrides<'_>) -> Result<()> {
    for (key, value) in [("path", overrides.kubeconfig), ("context", overrides.context)] {
        if let Some(value) = value {
            let kubeconfig = top.entry("kubeconfig").or_insert_with(|| json!({}));
            if let Some(kubeconfig) = kubeconfig.as_object_mut() {
                kubeconfig.insert(key.into(), value.into());
            }
        }
    }
    if let Some(namespace) = overrides.namespace {
        top.insert("namespace".into(), namespace.into());
    }
    if !overrides.runtimes.is_empty() {
        let runtimes: Vec<Value> =
            overrides.runtimes.iter().map(|r| runtime_doc(r)).collect::<Result<_>>()?;
        top.insert("runtimes".into(), runtimes.into());
        // A probe runtime the file named among runtimes the command line replaced.
        top.remove("probeRuntime");
    }
    Ok(())
}

/// `KIND/NAME` as a runtime of the settings.
fn runtime_doc(text: &str) -> Result<Value> {
    match text.split_once('/') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(json!({"kind": kind, "name": name}))
        }
        _ => Err(Error::invalid(format!(
            "--runtime {text:?} is not KIND/NAME, such as {DEFAULT_RUNTIME}"
        ))),
    }
}

/// The cluster configuration the settings document names, to read its namespace.
fn kubeconfig_of(top: &Map<String, Value>) -> ClusterConfig {
    let field = |key: &str| top.get("kubeconfig")?.get(key)?.as_str().map(str::to_owned);
    let kubeconfig = Kubeconfig { path: field("path"), context: field("context") };
    ClusterConfig::of(Some(&kubeconfig), Duration::from_secs(30))
}

/// The platform's configuration folder (`$XDG_CONFIG_HOME` or `~/.config` on Linux).
pub(crate) fn config_dir() -> Option<PathBuf> {
    dirs::config_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_comes_first_then_the_config_folders_file_then_the_defaults() {
        let dir = std::env::temp_dir().join(format!("dispatch-kf-locate-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("dispatch-kf")).unwrap();
        assert_eq!(locate(None, Some(&dir)), Source::Defaults, "no file yet");
        assert_eq!(locate(None, None), Source::Defaults);
        std::fs::write(dir.join(CONFIG_FILE), "name: x\n").unwrap();
        assert_eq!(locate(None, Some(&dir)), Source::File(dir.join(CONFIG_FILE)));
        assert_eq!(locate(Some("s.json"), Some(&dir)), Source::File("s.json".into()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_defaults_with_a_namespace_are_valid_settings_on_the_stock_runtime() {
        let mut doc = defaults();
        let overrides = Overrides { namespace: Some("team-a"), ..Overrides::default() };
        apply(doc.as_object_mut().unwrap(), &overrides).unwrap();
        let settings = Settings::from_value(&doc).unwrap();
        assert_eq!((settings.name.as_str(), settings.namespace.as_str()), ("kubeflow", "team-a"));
        assert_eq!(settings.runtimes[0].to_string(), DEFAULT_RUNTIME);
    }

    #[test]
    fn overrides_replace_the_files_runtimes_kubeconfig_and_namespace() {
        let mut doc = json!({"name": "kf", "namespace": "a", "kubeconfig": {"path": "/k"},
            "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "old"}],
            "probeRuntime": {"kind": "ClusterTrainingRuntime", "name": "old"}});
        let runtimes = ["TrainingRuntime/mine".to_owned(), DEFAULT_RUNTIME.to_owned()];
        let overrides = Overrides {
            context: Some("ctx"),
            namespace: Some("b"),
            runtimes: &runtimes,
            ..Overrides::default()
        };
        apply(doc.as_object_mut().unwrap(), &overrides).unwrap();
        let settings = Settings::from_value(&doc).unwrap();
        assert_eq!(settings.namespace, "b");
        let kubeconfig = settings.kubeconfig.unwrap();
        assert_eq!(
            (kubeconfig.path.as_deref(), kubeconfig.context.as_deref()),
            (Some("/k"), Some("ctx"))
        );
        let names: Vec<String> = settings.runtimes.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["TrainingRuntime/mine", DEFAULT_RUNTIME]);
        assert_eq!(settings.probe_runtime.to_string(), "TrainingRuntime/mine", "the first");
    }

    #[test]
    fn a_runtime_that_is_not_kind_slash_name_is_invalid_naming_the_flag() {
        for bad in ["torch", "/x", "ClusterTrainingRuntime/", "a/b/c"] {
            let err = runtime_doc(bad).unwrap_err();
            assert!(err.is(dispatch_core::Kind::Invalid));
            assert!(err.message().starts_with("--runtime"), "{}", err.message());
        }
    }
}
