//! Pure, deterministic render and classification for dispatch's Kubeflow Trainer
//! backend: no I/O, no clock, no randomness.
//!
//! Time enters as a `now` parameter and tokens as arguments made by the caller, so the
//! same inputs always give byte-identical objects and observations. Nothing here talks
//! to a cluster: the client reads, this crate decides, the Backend composes the two.
//!
//! # Classifying a dump
//!
//! [`dump::read`] takes what `kubectl get trainjobs,jobsets,jobs,pods -o json` printed
//! (one List, or several documents); [`classify()`] turns the [`Snapshot`] into one
//! observation per TrainJob, then one per orphan. Here, a real dump of a job whose two
//! ranks were OOM-killed, then a preemption by real Kueue in Kueue mode:
//!
//! ```
//! use dispatch_core::{CauseKind, ObjectState, Provenance};
//! use dispatch_kf_model::{ClassifyOptions, Detail, Mode, classify, dump};
//!
//! let now = "2026-12-01T16:00:00Z".parse().unwrap();
//! let bytes = include_bytes!("../../../fixtures/dumps/cluster-current-oom.json");
//! let snapshot = dump::read("cluster-current-oom.json", bytes)?;
//! let options = ClassifyOptions {
//!     mode: Mode::Plain,
//!     // The dump holds no Node: read it as without permission to read Nodes.
//!     nodes_readable: dump::nodes_readable_by_default(&snapshot),
//!     backend: "kf".into(),
//!     detail: Detail::WithNotes,
//! };
//! let observations = classify(&snapshot, &options, now);
//! let [oom] = observations.as_slice() else { panic!("{observations:?}") };
//! assert_eq!(oom.state, ObjectState::Ended);
//! assert_eq!(oom.cause.kind, CauseKind::OutOfMemory);
//! assert_eq!(oom.cause.provenance, Some(Provenance::Scheduler));
//! assert_eq!(oom.execution.as_ref().map(|e| e.admission), Some(1));
//! // The same inputs give the same observations, to the byte.
//! assert_eq!(classify(&snapshot, &options, now), observations);
//!
//! let bytes = include_bytes!("../../../fixtures/dumps/cluster-current-kueue-preempted.json");
//! let snapshot = dump::read("cluster-current-kueue-preempted.json", bytes)?;
//! let kueue = ClassifyOptions { mode: Mode::Kueue, ..options };
//! let preempted = &classify(&snapshot, &kueue, now)[0];
//! assert_eq!(preempted.cause.kind, CauseKind::Preempted);
//!
//! // What is not a Kubernetes object is refused, naming the file.
//! let error = dump::read("notes.txt", b"not json").unwrap_err();
//! assert!(error.is(dispatch_core::Kind::Invalid) && error.message().contains("notes.txt"));
//! # Ok::<(), dispatch_core::Error>(())
//! ```
//!
//! A dump too large to hold whole goes to a [`dump::Reader`] a piece at a time, as it
//! comes off a disk (here, 4 KiB at a time): it keeps each object's views as soon as the
//! object is read, and reads what [`dump::read`] reads.
//!
//! ```
//! use std::io::Read;
//! use dispatch_kf_model::dump;
//!
//! let bytes = include_bytes!("../../../fixtures/dumps/cluster-current-oom.json");
//! let mut file: &[u8] = bytes; // or an open file, as dispatch-kf classify reads it
//! let mut reader: dump::Reader = dump::Reader::new("cluster-current-oom.json");
//! loop {
//!     let room = reader.buffer();
//!     let piece = room.len().min(4096);
//!     let n = file.read(&mut room[..piece]).unwrap();
//!     if n == 0 {
//!         break;
//!     }
//!     reader.filled(n)?;
//! }
//! let snapshot = reader.finish()?;
//! assert_eq!(snapshot.pods.len(), dump::read("cluster-current-oom.json", bytes)?.pods.len());
//! # Ok::<(), dispatch_core::Error>(())
//! ```
//!
//! # Rendering a request
//!
//! [`read_request`] reads a start request; [`render`] turns it, on the runtime it names
//! (a [`SourceRuntime`] as the cluster holds it), into the two objects Start creates: a
//! private copy of the runtime and a TrainJob on it, its start gate closed. The attempt
//! token's random part is a parameter ([`TokenSuffix`]). A request or runtime the
//! adapter cannot run is refused with its sentinel, and nothing is rendered.
//!
//! ```
//! use dispatch_kf_model::{Purpose, Settings, SourceRuntime, TokenSuffix, read_request, render};
//!
//! let settings = Settings::read(include_bytes!("../../../fixtures/render/settings-plain.json"))?;
//! let request =
//!     read_request(include_bytes!("../../../fixtures/render/accept-minimal-plain/request.json"))?;
//! let runtime = SourceRuntime::read(include_bytes!("../../../fixtures/render/runtime-torch.json"))?;
//! let suffix = TokenSuffix::parse("0123456789abcdef")?;
//! let rendered = render(&settings, &request, runtime.as_ref(), &suffix, Purpose::Job)?;
//! assert_eq!(rendered.train_job["metadata"]["name"], "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1");
//! assert_eq!(rendered.runtime_copy["kind"], "TrainingRuntime");
//!
//! // Without the runtime it names (`None`: it does not exist), the request is refused.
//! let refused = render(&settings, &request, None, &suffix, Purpose::Job).unwrap_err();
//! assert!(refused.message().contains("torch-distributed"), "{refused}");
//! # Ok::<(), dispatch_core::Error>(())
//! ```
//!
//! # What else is here
//!
//! [`names`] and [`keys`] hold every name, label and annotation the adapter shares with
//! the cluster; [`view`] the plain structs classification reads, and the lenient fields
//! they are made of; [`signal`] an execution's end as an Event, once each. What only
//! this workspace's own crates use (the hold family's edits, the readmission rule, the
//! apiserver's answers read into views...) is under [`internal`], with no promise of
//! stability.

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// The crate's surface, all of it: the modules a caller names (each a namespace of
// functions and constants, called as `dump::read` or `names::make`), then the items
// of private modules that a caller uses or that a public signature shows. Everything
// else is the crate's own.

pub mod dump; // `kubectl get -o json` output read into a `Snapshot`
pub mod internal; // what only this workspace's own crates use: no promise of stability
pub mod keys; // every label, annotation and name shared with the cluster
pub mod names; // the names of a job's objects, made and parsed
pub mod signal; // an execution's end or interruption as an Event, once each
pub mod view; // one plain struct per kind classification reads

mod classify;
mod lenient;
mod mode;
mod object;
mod prologue;
mod render;
mod runtime;
mod settings;
mod snapshot;

// Classification: a snapshot of objects, the mode and `now` to observations.
pub use classify::{ClassifyOptions, Detail, classify, classify_train_jobs, gone};
pub use mode::Mode;
pub use snapshot::Snapshot;

// Render: a start request and a source runtime to a runtime copy and a TrainJob;
// `runtime_ref` reads the runtime a spec names, for Start and Capabilities alike.
pub use render::{Purpose, Rendered, TokenSuffix, read_request, render, runtime_ref};
pub use runtime::{RuntimeKind, RuntimeRef, SourceRuntime};

// Settings: one adapter instance's configuration.
pub use settings::{Kubeconfig, KueueSettings, Lease, Settings, Timeouts};
