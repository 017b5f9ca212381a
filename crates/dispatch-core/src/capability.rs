//! What a backend can do: a [`Support`] per [`Capability`].

/// A capability the supervisor asks every backend about.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Capability {
    /// Runs a container image the job names.
    ContainerImage,
    /// Carries out a requeue rule itself.
    NativeRequeue,
    /// Carries out a restart rule itself.
    NativeRestart,
    /// Can hold and release an object.
    Hold,
    /// Delivers a signal before terminating a job.
    PreTerminationSignal,
    /// Keeps the accounting of ended objects.
    AccountingHistory,
    /// Gives each execution its attempt identity.
    AttemptInjection,
    /// Nothing re-admits an object without the supervisor's permission.
    ReadmissionGate,
    /// Starts the program in the job's working directory.
    WorkingDirectory,
    /// Honours processes per node.
    ProcsPerNode,
    /// Writes output to a stable location.
    OutputPath,
    /// Keeps output after the object is gone.
    OutputRetained,
    /// Serves the output of the current execution.
    OutputRead,
    /// Follows the output as it is written.
    OutputFollow,
}

impl Capability {
    /// Every capability, in the supervisor's order.
    pub const ALL: [Capability; 14] = [
        Capability::ContainerImage,
        Capability::NativeRequeue,
        Capability::NativeRestart,
        Capability::Hold,
        Capability::PreTerminationSignal,
        Capability::AccountingHistory,
        Capability::AttemptInjection,
        Capability::ReadmissionGate,
        Capability::WorkingDirectory,
        Capability::ProcsPerNode,
        Capability::OutputPath,
        Capability::OutputRetained,
        Capability::OutputRead,
        Capability::OutputFollow,
    ];
}

/// Whether a capability holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// It does.
    Yes,
    /// It does not.
    No,
    /// The backend cannot tell.
    Unknown,
}

/// How the backend knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// By design.
    Declared,
    /// By trying it on the cluster.
    Probed,
    /// From what the platform documents.
    Catalogue,
}

/// A backend's answer for one capability, with how it knows and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Support {
    /// The answer.
    pub answer: Answer,
    /// How the backend knows.
    pub source: Source,
    /// Why, or what would change it.
    pub reason: String,
}

impl Support {
    /// A support with `answer`, `source` and `reason`.
    pub fn new(answer: Answer, source: Source, reason: impl Into<String>) -> Support {
        Support { answer, source, reason: reason.into() }
    }

    /// Whether the answer is yes.
    pub fn is_yes(&self) -> bool {
        self.answer == Answer::Yes
    }
}
