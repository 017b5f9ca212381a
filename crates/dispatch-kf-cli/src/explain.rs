//! `dispatch-kf explain [trainjob/]NAME`: why any TrainJob of a namespace is where it
//! is, dispatch's or not, read live as Find reads (`docs/cli.md#explain-any-trainjob`).
//! Without a name, every TrainJob of the namespace, or of every namespace with `-A`.
//! It needs no settings: a kubeconfig and read permissions are enough.

use std::time::Duration;

use dispatch_core::{Error, Result};
use dispatch_kf::{Explain, ModeChoice, explain_pages};
use dispatch_kf_client::{Cluster, ClusterConfig, Scope};
use dispatch_kf_model::Kubeconfig;
use dispatch_kf_model::Mode;
use dispatch_kf_model::keys;

use crate::connect::{DEFAULT_TIMEOUT, KubectlArgs, block_on, call_context};
use crate::output::Format;
use crate::paged::PagePrinter;
use crate::settings::DEFAULT_NAME;

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ModeArg {
    /// Each TrainJob its own: Kueue when it carries the label kueue.x-k8s.io/queue-name
    /// and the cluster serves Kueue's API, plain otherwise.
    Auto,
    /// No Kueue: the gate and holds are `spec.suspend` on the TrainJob.
    Plain,
    /// Kueue admits the TrainJobs; holds are on the Workload.
    Kueue,
}

/// Why TrainJobs are where they are, whoever made them.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf explain -n team-a trainjob/llama-ft\n  \
    dispatch-kf explain -A -o wide")]
pub(crate) struct Args {
    #[command(flatten)]
    kubectl: KubectlArgs,
    /// Every TrainJob of every namespace.
    #[arg(short = 'A', long, conflicts_with_all = ["namespace", "name"])]
    all_namespaces: bool,
    /// How the TrainJobs are admitted.
    #[arg(long, value_enum, default_value = "auto")]
    mode: ModeArg,
    /// The call's deadline (Go notation: 30s, 5m).
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// Output format: table on a terminal, JSON otherwise (an array of observations).
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// The TrainJob, `NAME` or `trainjob/NAME` (as `-o name` prints it); without it,
    /// every TrainJob of the namespace.
    #[arg(value_name = "[trainjob/]NAME")]
    name: Option<String>,
}

/// The resource names a TrainJob goes by before the `/` (`kubectl get` takes them all).
const RESOURCE_NAMES: [&str; 2] = ["trainjob", "trainjobs"];

/// The name of `[trainjob/]NAME`; another resource is `Invalid`.
fn train_job_name(text: &str) -> Result<&str> {
    let name = match text.split_once('/') {
        None => text,
        Some((resource, name)) => {
            let bare = resource.strip_suffix(&format!(".{}", keys::TRAINER_GROUP));
            if !RESOURCE_NAMES.contains(&bare.unwrap_or(resource)) {
                return Err(Error::invalid(format!(
                    "{text:?}: explain reads TrainJobs only ([trainjob/]NAME), not {resource}"
                )));
            }
            name
        }
    };
    if name.is_empty() || name.contains('/') {
        return Err(Error::invalid(format!("{text:?} is not [trainjob/]NAME")));
    }
    Ok(name)
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> Result<()> {
    let name = args.name.as_deref().map(train_job_name).transpose()?;
    let mode = match args.mode {
        ModeArg::Auto => ModeChoice::Auto,
        ModeArg::Plain => ModeChoice::Fixed(Mode::Plain),
        ModeArg::Kueue => ModeChoice::Fixed(Mode::Kueue),
    };
    block_on(async {
        let cx = call_context(args.timeout.as_deref(), DEFAULT_TIMEOUT)?;
        let kubectl = &args.kubectl;
        let kubeconfig =
            Kubeconfig { path: kubectl.kubeconfig.clone(), context: kubectl.context.clone() };
        let config = ClusterConfig::of(Some(&kubeconfig), Duration::from_secs(30));
        let namespace = match (&kubectl.namespace, args.all_namespaces) {
            (_, true) => None,
            (Some(namespace), false) => Some(namespace.clone()),
            (None, false) => Some(config.default_namespace().await?),
        };
        let scope = match (name, namespace.as_deref()) {
            (Some(name), Some(namespace)) => Scope::Named { namespace, name },
            (None, Some(namespace)) => Scope::Namespace(namespace),
            (_, None) => Scope::Everywhere,
        };
        let cluster = Cluster::connect(&config).await?;
        let request = Explain { scope, mode, backend: DEFAULT_NAME };
        let format = Format::or_default(args.output);
        let mut pages =
            PagePrinter::new(format, scope == Scope::Everywhere, jiff::Timestamp::now());
        explain_pages(&cluster, &cx, request, |page| pages.page(&page)).await?;
        if !pages.finish()? && matches!(format, Format::Table | Format::Wide) {
            // As kubectl get says it, on standard error: the table has no rows.
            match namespace {
                Some(namespace) => eprintln!("No TrainJobs found in {namespace} namespace."),
                None => eprintln!("No TrainJobs found."),
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_bare_or_as_kubectl_names_a_train_job_and_nothing_else() {
        for text in [
            "llama",
            "trainjob/llama",
            "trainjobs/llama",
            "trainjob.trainer.kubeflow.org/llama",
            "trainjobs.trainer.kubeflow.org/llama",
        ] {
            assert_eq!(train_job_name(text).unwrap(), "llama", "{text}");
        }
        for bad in ["pod/llama", "jobset/llama", "trainjob/", "", "trainjob/a/b", "x.y/llama"] {
            let err = train_job_name(bad).unwrap_err();
            assert!(err.is(dispatch_core::Kind::Invalid), "{bad}: {err}");
        }
    }
}
