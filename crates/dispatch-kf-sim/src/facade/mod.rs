//! Layer 6, the facade: [`Sim`](sim::Sim), the handle a test or the demo holds (setup,
//! reads, the clock, faults), what a test makes happen to pods and nodes
//! (`happenings`), and the demo cluster (`demo`).

pub(crate) mod demo;
pub(crate) mod happenings;
pub(crate) mod sim;
