//! The commands that write: `start`, `stop`, `stop-job`, `open`, `hold`, `release`.
//! Factory runs its preflight probe for them, as for any writing Backend.

use dispatch_core::{Backend, JobId, Result, StartRequest};

use crate::connect::{ClusterArgs, DEFAULT_TIMEOUT, Need, block_on, format_ref, parse_ref};
use crate::output::{self, Format};

/// `start --request Q`: Start one submission; prints the object reference.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  dispatch-kf start --settings settings.json --request request.json"
)]
pub(crate) struct StartArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The start request (JSON).
    #[arg(long, value_name = "FILE")]
    request: String,
    /// Output format: the reference as text, its kubectl name, or JSON or YAML.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
}

pub(crate) fn start(args: StartArgs) -> Result<()> {
    let request: StartRequest =
        dispatch_kf_model::read_request(&output::read_input(&args.request)?)
            .map_err(|e| e.context(&args.request))?;
    block_on(async {
        let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
        let backend = args.cluster.backend(Need::Write, &cx).await?;
        let object = backend.start(&cx, &request).await?;
        match args.output {
            Some(f @ (Format::Json | Format::Yaml)) => output::print_structured(&object, f),
            Some(Format::Name) => {
                output::write_stdout(format!("{}\n", output::kubectl_name(&object)).as_bytes())
            }
            _ => output::write_stdout(format!("{}\n", format_ref(&object)).as_bytes()),
        }
    })
}

/// An object reference argument, shared by `stop` and the hold family.
#[derive(clap::Args)]
pub(crate) struct RefArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// `[Kind:]<namespace>/<name>@<uid>`, as start prints it.
    reference: String,
}

/// `stop REF`: deletes the object in the background, if it is still that instance.
pub(crate) fn stop(args: RefArgs) -> Result<()> {
    on_ref(args, |backend, cx, object| Box::pin(async move { backend.stop(&cx, &object).await }))
}

/// `open REF`: lifts the start gate.
pub(crate) fn open(args: RefArgs) -> Result<()> {
    on_ref(args, |backend, cx, object| Box::pin(async move { backend.open(&cx, &object).await }))
}

/// `hold --instance K REF` and `release --instance K REF`.
#[derive(clap::Args)]
pub(crate) struct HoldArgs {
    #[command(flatten)]
    target: RefArgs,
    /// The hold instance (1 or more).
    #[arg(long)]
    instance: u64,
}

pub(crate) fn hold(args: HoldArgs) -> Result<()> {
    let k = args.instance;
    on_ref(args.target, move |backend, cx, object| {
        Box::pin(async move { backend.hold(&cx, &object, k).await })
    })
}

pub(crate) fn release(args: HoldArgs) -> Result<()> {
    let k = args.instance;
    on_ref(args.target, move |backend, cx, object| {
        Box::pin(async move { backend.release(&cx, &object, k).await })
    })
}

type Call = std::pin::Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// Makes the Backend, reads the reference, and runs `call` on it.
fn on_ref(
    args: RefArgs,
    call: impl FnOnce(
        dispatch_kf::KubeflowBackend,
        dispatch_core::CallContext,
        dispatch_core::ObjectRef,
    ) -> Call,
) -> Result<()> {
    block_on(async {
        let cx = args.cluster.call(DEFAULT_TIMEOUT)?;
        let backend = args.cluster.backend(Need::Write, &cx).await?;
        let object = parse_ref(&args.reference, &backend.settings().name)?;
        call(backend, cx, object).await
    })
}

/// `stop-job JOB`: stops every object of the job and waits until none remains.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  dispatch-kf stop-job --settings settings.json 01JDQ4V8Z6K3M0B7X2N5R9T1CE"
)]
pub(crate) struct StopJobArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The job (a ULID).
    job: String,
}

pub(crate) fn stop_job(args: StopJobArgs) -> Result<()> {
    let job = JobId::parse(&args.job)?;
    block_on(output::until_interrupted(Some(STOP_JOB_INTERRUPTED), async {
        let settings = args.cluster.settings(Need::Write).await?;
        let cx = args.cluster.call(settings.timeouts.stop_job)?;
        let backend = args.cluster.backend(Need::Write, &cx).await?;
        let waiting = format!("stop-job: deleting the objects of {job} and waiting for them to go");
        output::with_progress(&waiting, backend.stop_job(&cx, &job)).await
    }))
}

/// `stop-job`'s line on Ctrl-C: deleting is in the background, so what was sent goes on.
const STOP_JOB_INTERRUPTED: &str = "interrupted: deletions already sent go on in the \
    cluster; run stop-job again to wait until no object remains";
