//! `preflight` and `capabilities`: what Factory learned, every capability with its
//! answer, source and reason, and whether the Backend writes.

use std::collections::BTreeMap;

use dispatch_core::{Backend, Capability, Error, JobSpec, Result, Support};
use dispatch_kf_model::internal::capabilities::Writability;
use serde_json::json;

use crate::connect::{ClusterArgs, DEFAULT_TIMEOUT, Need, block_on};

/// The default deadline of `preflight`: its probe waits for the cluster, and in plain
/// mode on a cluster that serves Kueue, for `timeouts.workload` too.
const PREFLIGHT_TIMEOUT: dispatch_core::Timespan = dispatch_core::Timespan::from_secs(120);
use crate::output::{self, Format};

/// `preflight`: Factory's checks and probe.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  dispatch-kf preflight --settings settings.json")]
pub(crate) struct PreflightArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Output format: a table, or JSON or YAML.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
}

pub(crate) fn preflight(args: PreflightArgs) -> Result<()> {
    block_on(async {
        let cx = args.cluster.call(PREFLIGHT_TIMEOUT)?;
        let probing = args.cluster.backend(Need::Probe, &cx);
        let waiting = "preflight: checking the cluster and running the probe";
        let backend = output::with_progress(waiting, probing).await?;
        let p = backend.preflight();
        print(&p.capabilities, Some(&p.access), args.output)
    })
}

/// `capabilities [--spec FILE]`: with a spec, its runtime's answers.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  dispatch-kf capabilities --settings settings.json --spec spec.json"
)]
pub(crate) struct CapabilitiesArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// A job spec (JSON), whose runtime is checked.
    #[arg(long, value_name = "FILE")]
    spec: Option<String>,
    /// Output format: a table, or JSON or YAML.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
}

pub(crate) fn capabilities(args: CapabilitiesArgs) -> Result<()> {
    let spec: Option<JobSpec> = match &args.spec {
        Some(file) => Some(
            serde_json::from_slice(&output::read_input(file)?)
                .map_err(|e| Error::invalid(format!("{file} is not a job spec: {e}")))?,
        ),
        None => None,
    };
    block_on(async {
        let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
        let backend = args.cluster.backend(Need::Write, &cx).await?;
        let answers = backend.capabilities(&cx, spec.as_ref()).await?;
        print(&answers, Some(&backend.preflight().access), args.output)
    })
}

fn access_words(access: &Writability) -> String {
    match access {
        Writability::Writable => "writable".to_owned(),
        Writability::ReadOnly => "read-only".to_owned(),
        Writability::ObserveOnly { missing } => format!("observe-only: {missing}"),
    }
}

fn print(
    answers: &BTreeMap<Capability, Support>,
    access: Option<&Writability>,
    format: Option<Format>,
) -> Result<()> {
    match format {
        Some(f @ (Format::Json | Format::Yaml)) => {
            let doc = json!({"access": access.map(access_words), "capabilities": answers});
            output::print_structured(&doc, f)
        }
        _ => {
            let mut text = String::new();
            if let Some(access) = access {
                text.push_str(&format!("access: {}\n\n", access_words(access)));
            }
            let width = answers.keys().map(|c| format!("{c:?}").len()).max().unwrap_or(10);
            text.push_str(&format!(
                "{:width$}  {:7}  {:9}  REASON\n",
                "CAPABILITY", "ANSWER", "SOURCE"
            ));
            for (capability, support) in answers {
                let word = |v: serde_json::Value| v.as_str().unwrap_or_default().to_owned();
                text.push_str(&format!(
                    "{:width$}  {:7}  {:9}  {}\n",
                    format!("{capability:?}"),
                    word(json!(support.answer)),
                    word(json!(support.source)),
                    support.reason
                ));
            }
            output::write_stdout(text.as_bytes())
        }
    }
}
