//! A dump given a piece at a time (`dump::Reader`, what `dispatch-kf classify` uses)
//! reads as the same dump given whole (`dump::read`, what the snapshots and properties
//! use): wherever the pieces begin and end, the same views are kept and classify to the
//! same observations, and the same bytes are refused with the same words.

mod conventions;

use std::sync::OnceLock;

use conventions::options_for;
use dispatch_core::ObjectObs;
use dispatch_kf_model::view::Shared;
use dispatch_kf_model::{Snapshot, classify, dump};
use jiff::Timestamp;
use proptest::prelude::*;

fn now() -> Timestamp {
    "2026-11-29T12:00:00Z".parse().unwrap()
}

/// Every committed dump, as bytes.
fn dumps() -> &'static [(String, Vec<u8>)] {
    static CELL: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    CELL.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps");
        let mut out: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .map(|e| {
                (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
            })
            .collect();
        out.sort();
        out
    })
}

/// `bytes` given to a reader in pieces of the sizes `cuts` names, in turn.
fn in_pieces(file: &str, bytes: &[u8], cuts: &[usize]) -> Result<Snapshot<Shared>, String> {
    let mut reader = dump::Reader::new(file);
    let (mut rest, mut sizes) = (bytes, cuts.iter().cycle());
    while !rest.is_empty() {
        let n = sizes.next().map_or(rest.len(), |&n| n.clamp(1, rest.len()));
        reader.feed(&rest[..n]).map_err(|e| e.message().to_owned())?;
        rest = &rest[n..];
    }
    reader.finish().map_err(|e| e.message().to_owned())
}

fn observations<S: dispatch_kf_model::view::Str>(
    file: &str,
    whole: &Snapshot,
    snapshot: &Snapshot<S>,
) -> Vec<ObjectObs> {
    classify(snapshot, &options_for(file, whole), now())
}

/// Reads `bytes` whole and in pieces: both refuse with the same words, or both read
/// the same objects.
fn same_either_way(file: &str, bytes: &[u8], cuts: &[usize]) {
    let whole = dump::read(file, bytes).map_err(|e| e.message().to_owned());
    let pieces = in_pieces(file, bytes, cuts);
    match (&whole, &pieces) {
        (Ok(whole), Ok(pieces)) => {
            assert_eq!(observations(file, whole, pieces), observations(file, whole, whole));
            assert_eq!(
                dump::nodes_readable_by_default(pieces),
                dump::nodes_readable_by_default(whole)
            );
        }
        (Err(whole), Err(pieces)) => assert_eq!(whole, pieces, "{file}"),
        _ => panic!("{file}: read whole {whole:?}, in pieces {:?}", pieces.as_ref().err()),
    }
}

#[test]
fn every_dump_reads_the_same_whole_and_a_byte_at_a_time() {
    for (file, bytes) in dumps() {
        same_either_way(file, bytes, &[1]);
        same_either_way(file, bytes, &[usize::MAX]);
    }
}

#[test]
fn a_file_cut_short_is_refused_as_serde_json_refuses_it_wherever_it_stops() {
    let (file, bytes) = &dumps()[0];
    for end in (0..bytes.len()).step_by(7) {
        same_either_way(file, &bytes[..end], &[3, 50, 1]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_dump_in_pieces_of_any_sizes_reads_as_the_dump_whole(
        which: prop::sample::Index,
        cuts in prop::collection::vec(1usize..4_000, 1..8),
    ) {
        let (file, bytes) = &dumps()[which.index(dumps().len())];
        same_either_way(file, bytes, &cuts);
    }

    #[test]
    fn a_dump_with_a_byte_changed_reads_alike_in_pieces_and_whole(
        which: prop::sample::Index,
        at: prop::sample::Index,
        byte: u8,
        cuts in prop::collection::vec(1usize..600, 1..5),
    ) {
        let (file, bytes) = &dumps()[which.index(dumps().len())];
        let mut bytes = bytes.clone();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        same_either_way(file, &bytes, &cuts);
    }

    #[test]
    fn arbitrary_bytes_read_alike_in_pieces_and_whole(
        bytes in prop::collection::vec(any::<u8>(), 0..120),
        cuts in prop::collection::vec(1usize..9, 1..5),
    ) {
        same_either_way("b.json", &bytes, &cuts);
    }
}

/// What is refused as not JSON is what serde_json refuses, where serde_json places it.
/// What serde_json reads, skipping every value, is refused only as no Kubernetes
/// object, or for what a view reads and serde_json does not when it skips: a key given
/// twice (serde's derived readers refuse that), a string kept that is not UTF-8.
///
/// serde_json words some faults two ways, as it reads a value or skips it (`,}` is a
/// trailing comma or a key that is not a string), and places a control character in a
/// string one byte apart; a string a view keeps that is not UTF-8 is refused where it
/// stands, and serde_json, skipping it, refuses what follows. `words` asks for its words as it reads every value
/// (`serde_json::Value`), which the top level is read as, and leaves the place alone
/// for a control character.
fn refused_as_serde_json_refuses(bytes: &[u8], words: bool) {
    let ours = dump::read("b.json", bytes).map(|_| ());
    match (serde_json::from_slice::<serde::de::IgnoredAny>(bytes), ours) {
        (Err(e), Err(ours)) => {
            let message = ours.message();
            let place = format!(" at line {}, column {}: ", e.line(), e.column());
            assert!(message.starts_with("b.json is not JSON: "), "{message}");
            // A kept string that is not UTF-8, or a duplicate key (which serde_json's
            // skim does not refuse), is met before the place serde_json stops at.
            let met_first = ["control character", "unicode code point", "duplicate field"];
            if !met_first.iter().any(|first| message.contains(first)) {
                assert!(message.contains(&place), "{message} is not{place}");
            }
            if words {
                let text =
                    serde_json::from_slice::<serde_json::Value>(bytes).unwrap_err().to_string();
                let what = text.split(" at line ").next().unwrap();
                assert!(
                    message.starts_with(&format!("b.json is not JSON: {what} at ")),
                    "{message} vs {what}"
                );
            }
        }
        (Err(e), Ok(())) => panic!("read what serde_json refuses: {e}"),
        (Ok(_), Err(ours)) => assert!(
            ours.message().contains("is not a Kubernetes object")
                || ours.message().contains("duplicate field")
                || ours.message().contains("invalid unicode code point"),
            "{}",
            ours.message()
        ),
        (Ok(_), Ok(())) => {}
    }
}

#[test]
fn broken_top_levels_are_refused_in_serde_json_s_words() {
    for bytes in [
        &b""[..],
        b"   ",
        b"{",
        b"{\"kind\"",
        b"{\"kind\":",
        b"{\"kind\": \"List\"",
        b"{\"kind\": \"List\",",
        b"{\"kind\": \"List\",}",
        b"{\"kind\": \"List\" \"items\": []}",
        b"{\"kind\" \"List\"}",
        b"{\"items\": [",
        b"{\"items\": [{}",
        b"{\"items\": [{},]}",
        b"{\"items\": [{} {}]}",
        b"{\"items\": [1, 2}",
        b"{\n  \"kind\": \"List\",\n  oops\n}",
        b"{\"kind\": \"List\"} x",
        b"{\"kind\": \"List\"}\n\n  ]",
        b"{1: 2}",
        b"{\"a\": 1e}",
        b"{\"a\": \"\xff\"}",
        b"{\"a\": tru}",
        b"\xef\xbb\xbf{}",
        b"[1, 2",
        b"{\"kind\": \"List\", \"items\": [], \"kind\": \"List\"}",
    ] {
        refused_as_serde_json_refuses(bytes, true);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_dump_with_a_byte_changed_is_refused_as_serde_json_refuses_it(
        which: prop::sample::Index,
        at: prop::sample::Index,
        byte in prop::sample::select(&b"{}[]:,\"\\ \n0a-\xff"[..]),
    ) {
        let (_, bytes) = &dumps()[which.index(dumps().len())];
        let mut bytes = bytes.clone();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        refused_as_serde_json_refuses(&bytes, false);
    }

    #[test]
    fn arbitrary_bytes_are_refused_as_serde_json_refuses_them(
        bytes in prop::collection::vec(prop::sample::select(&b"{}[]:,\" \nakis1"[..]), 0..40),
    ) {
        refused_as_serde_json_refuses(&bytes, false);
    }
}
