//! Reading `kubectl get ... -o json` output into a [`Snapshot`].
//!
//! A file holds a `List` (`kind` ending in `List`, with `items`) or one object. Items of
//! kinds classification does not read are skipped, as are items that are not objects.
//! A `List` may carry a top-level `capturedPods` array beside `items`: the last state of
//! deleted pods, as a Watch would have captured them (kubectl never prints it; fixtures
//! and tools use it to stand for the Backend's captured evidence). Several files merge
//! into one snapshot, in the order given; objects are not deduplicated.
//!
//! The bytes are read straight into the lenient views ([`crate::view`]), never into a
//! `serde_json::Value`, one item at a time (`dump/document.rs`): [`read`] reads bytes held
//! whole; a [`Reader`] is given a file a piece at a time, keeps each item as its views
//! the moment it is read, and holds no more of the file than the piece being read, so a
//! dump of any size costs what its views keep. The views of a `Reader` share their text
//! ([`Shared`]): each string the dump repeats is kept once.

mod document;

use dispatch_core::Error;

use crate::lenient::{FromJson, Interner, Shared};
use crate::snapshot::Snapshot;
use document::Document;

/// Reads one file's bytes; `file` names it in errors.
///
/// A file that is not JSON, or whose JSON is not a Kubernetes object or List, is
/// `Invalid`, naming the file and the line and column.
pub fn read(file: &str, bytes: &[u8]) -> Result<Snapshot, Error> {
    let mut document = Document::new(file);
    let consumed = document.advance(bytes, true)?;
    document.finish(&bytes[consumed..])
}

/// Reads one file given a piece at a time, as [`read`] reads it whole: the caller
/// writes each piece into [`Reader::buffer`] and says how much with
/// [`Reader::filled`] (or hands it over with [`Reader::feed`]), then takes the
/// snapshot with [`Reader::finish`]. Where the pieces begin and end changes nothing of
/// what is read, nor of what is refused.
///
/// The reader holds the bytes not yet read (the end of a piece that stops within an
/// item) and the views; the rest of each piece goes as soon as it is read. An item
/// longer than the buffer grows it.
pub struct Reader<S = Shared> {
    document: Document<S>,
    interner: Interner,
    /// The bytes given and not yet consumed are `window[start..end]`.
    window: Vec<u8>,
    start: usize,
    end: usize,
    /// An item that the bytes given cut short is read again once this many are held:
    /// twice as many as when it was tried, so an item is read at most twice over.
    retry_at: usize,
}

impl<S: FromJson> Reader<S> {
    /// The first size of the buffer.
    const WINDOW: usize = 64 << 10;

    /// A reader of the file named `file` (for errors), nothing given yet.
    pub fn new(file: &str) -> Self {
        Reader {
            document: Document::new(file),
            interner: Interner::default(),
            window: vec![0; Self::WINDOW],
            start: 0,
            end: 0,
            retry_at: 0,
        }
    }

    /// The room for the next piece of the file: write it at the start, then call
    /// [`Reader::filled`] with its length.
    pub fn buffer(&mut self) -> &mut [u8] {
        if self.start > 0 {
            self.window.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.retry_at = self.retry_at.saturating_sub(self.start);
            self.start = 0;
        }
        if self.end == self.window.len() {
            self.window.resize(self.window.len() * 2, 0);
        }
        &mut self.window[self.end..]
    }

    /// Takes the `n` bytes just written at the start of [`Reader::buffer`], and reads
    /// what they complete.
    pub fn filled(&mut self, n: usize) -> Result<(), Error> {
        self.end = (self.end + n).min(self.window.len());
        if self.end < self.retry_at {
            return Ok(());
        }
        self.advance(false)
    }

    /// Hands over the next piece of the file (a copy into the buffer, then
    /// [`Reader::filled`]).
    pub fn feed(&mut self, mut piece: &[u8]) -> Result<(), Error> {
        while !piece.is_empty() {
            let room = self.buffer();
            let n = room.len().min(piece.len());
            room[..n].copy_from_slice(&piece[..n]);
            piece = &piece[n..];
            self.filled(n)?;
        }
        Ok(())
    }

    /// The snapshot of the whole file, once every piece has been given.
    pub fn finish(mut self) -> Result<Snapshot<S>, Error> {
        self.advance(true)?;
        self.document.finish(&self.window[self.start..self.end])
    }

    fn advance(&mut self, last: bool) -> Result<(), Error> {
        let Reader { document, interner, window, start, end, retry_at } = self;
        let input = &window[*start..*end];
        let consumed = interner.lend(|| document.advance(input, last))?;
        document.skip(&input[..consumed]);
        *start += consumed;
        *retry_at = *start + 2 * (*end - *start);
        Ok(())
    }
}

/// Refinement R6 (`docs/classification.md#refinements-from-real-clusters`): whether an
/// offline input is classified as if Nodes could be read, when the user did not say.
/// `kubectl get trainjobs,jobsets,pods -o json` leaves Nodes out, and every pod of it
/// would be bound to a Node that "is gone": an input that holds no Node at all is read
/// as without permission to read Nodes. `dispatch-kf classify --nodes-readable` says
/// otherwise.
pub fn nodes_readable_by_default<S>(snapshot: &Snapshot<S>) -> bool {
    !snapshot.nodes.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_core::Kind;

    #[test]
    fn a_file_that_is_not_json_is_invalid_naming_file_and_position() {
        let err = read("dump.json", b"{\n  \"kind\": \"List\",\n  oops\n}").unwrap_err();
        assert!(err.is(Kind::Invalid));
        assert!(err.message().starts_with("dump.json is not JSON: "), "{}", err.message());
        assert!(err.message().contains("line 3, column 3"), "{}", err.message());
    }

    #[test]
    fn json_that_is_not_a_kubernetes_object_is_invalid_naming_file_and_position() {
        for (bytes, why) in [
            (&b"\n  [1, 2]"[..], "line 2, column 3: the document is not a JSON object"),
            (b"{\"a\": 1}", "line 1, column 1: it has no string \"kind\""),
            (b"{\"kind\": \"Pod\"}", "it has no string \"apiVersion\""),
            (b"\"text\"", "not a JSON object"),
        ] {
            let err = read("x.json", bytes).unwrap_err();
            assert!(err.is(Kind::Invalid));
            assert!(err.message().starts_with("x.json is not a Kubernetes object or List"));
            assert!(err.message().contains(why), "{}", err.message());
        }
    }

    #[test]
    fn a_single_object_and_a_list_both_read() {
        let one = read("a", br#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}"#);
        assert_eq!(one.unwrap().pods.len(), 1);
        let list = read(
            "b",
            br#"{"apiVersion": "v1", "items": [{"kind": "Node"}, 7, {"kind": "Secret"}], "kind": "List",
                "capturedPods": [{"kind": "Pod"}, {"kind": "Node"}]}"#,
        )
        .unwrap();
        assert_eq!((list.nodes.len(), list.captured_pods.len()), (1, 1));
    }

    #[test]
    fn an_input_without_a_node_is_read_as_without_permission_to_read_nodes() {
        let pods = read("a", br#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}"#);
        assert!(!nodes_readable_by_default(&pods.unwrap()));
        let node = read("b", br#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}"#);
        assert!(nodes_readable_by_default(&node.unwrap()));
    }
}
