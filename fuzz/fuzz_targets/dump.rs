//! Fuzz target `dump`: the readers of what the apiserver or `kubectl get -o json` gives,
//! then classification of what they read.
//!
//! The bytes go to `dump::read` (held whole) and to a `dump::Reader` (given in pieces
//! whose size the first byte picks: the offline path), then every snapshot read is
//! classified in both modes, with and without Node permission, at a fixed `now`; the
//! same bytes go to `answer::read_list("Pod", ..)` and `answer::read_object` (the live
//! path). Invariants: nothing panics (errors are fine), and the two offline readers
//! agree: both refuse with the same words, or both read snapshots that classify to the
//! same observations.

#![no_main]

use dispatch_kf_model::{ClassifyOptions, Mode, classify, dump};
use dispatch_kf_model::internal::answer;
use jiff::Timestamp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let now: Timestamp = "2026-12-01T16:00:00Z".parse().expect("a valid timestamp");
    let whole = dump::read("fuzz.json", bytes);
    let piece = usize::from(bytes.first().copied().unwrap_or(1)).max(1);
    let mut reader: dump::Reader = dump::Reader::new("fuzz.json");
    let pieces = bytes.chunks(piece).try_for_each(|p| reader.feed(p)).and_then(|()| reader.finish());
    match (&whole, &pieces) {
        (Ok(whole), Ok(pieces)) => {
            for mode in [Mode::Plain, Mode::Kueue] {
                for nodes_readable in [false, true] {
                    let options = ClassifyOptions { mode, nodes_readable, backend: "kf".into() };
                    let from_whole = classify(whole, &options, now);
                    let from_pieces = classify(pieces, &options, now);
                    assert_eq!(from_whole, from_pieces, "whole and in pieces classify apart");
                }
            }
            assert_eq!(
                dump::nodes_readable_by_default(whole),
                dump::nodes_readable_by_default(pieces)
            );
        }
        (Err(whole), Err(pieces)) => {
            assert_eq!(whole.message(), pieces.message(), "whole and in pieces refuse apart");
        }
        _ => panic!("whole and in pieces disagree: {:?} vs {:?}", whole.is_ok(), pieces.is_ok()),
    }
    let _ = answer::read_list("Pod", bytes);
    let _ = answer::read_object(bytes);
});
