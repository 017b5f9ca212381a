//! Fuzz target `dump`: the readers of what the apiserver or `kubectl get -o json` gives,
//! then classification of what they read.
//!
//! The bytes go to `dump::read` and `dump::borrow` (the offline path), then every
//! snapshot read is classified in both modes, with and without Node permission, at a
//! fixed `now`; the same bytes go to `answer::read_list("Pod", ..)` and
//! `answer::read_object` (the live path). Invariants: nothing panics (errors are fine),
//! and the owned and borrowed readers agree: both refuse, or both read snapshots that
//! classify to the same observations.

#![no_main]

use dispatch_kf_model::{ClassifyOptions, Mode, answer, classify, dump};
use jiff::Timestamp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let now: Timestamp = "2026-12-01T16:00:00Z".parse().expect("a valid timestamp");
    let owned = dump::read("fuzz.json", bytes);
    let borrowed = dump::borrow("fuzz.json", bytes);
    match (&owned, &borrowed) {
        (Ok(owned), Ok(borrowed)) => {
            for mode in [Mode::Plain, Mode::Kueue] {
                for nodes_readable in [false, true] {
                    let options = ClassifyOptions { mode, nodes_readable, backend: "kf".into() };
                    let from_owned = classify(owned, &options, now);
                    let from_borrowed = classify(borrowed, &options, now);
                    assert_eq!(from_owned, from_borrowed, "read and borrow classify apart");
                }
            }
            assert_eq!(
                dump::nodes_readable_by_default(owned),
                dump::nodes_readable_by_default(borrowed)
            );
        }
        (Err(owned), Err(borrowed)) => {
            assert_eq!(owned.message(), borrowed.message(), "read and borrow refuse apart");
        }
        _ => panic!("read and borrow disagree: {:?} vs {:?}", owned.is_ok(), borrowed.is_ok()),
    }
    let _ = answer::read_list("Pod", bytes);
    let _ = answer::read_object(bytes);
});
