//! [`Document`]: one file's top-level object read a piece at a time, so that its items
//! are kept as views the moment each is read and its bytes can go.
//!
//! The top level (`{`, keys, `:`, `,`, `[`, `]`, `}`) is read here; every value, and so
//! every item of `items` and `capturedPods`, is read by `serde_json` into the lenient
//! views, from the first byte of the value to its last. A value that the input given so
//! far cuts short is read again once more input has come ([`Document::advance`] says how
//! far it got). Each value is read as text (`serde_json::from_str`) from the longest
//! run of the input that is UTF-8, checked once; a value with a byte that is not UTF-8
//! is read from its bytes, as `serde_json::from_slice` reads it, so that what is refused
//! is what serde_json refuses.
//!
//! The errors name the file, and the line and column in it, in serde_json's words.

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, Visitor};

use dispatch_core::Error;

use crate::lenient::{FromJson, Obj, Text};
use crate::object::{Meta, RawObject, RawSpec, RawStatus, ViewKind};
use crate::snapshot::Snapshot;
use crate::view::{Pod, View};

/// A key of the top-level object that is read; any other is skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    ApiVersion,
    Kind,
    Metadata,
    Spec,
    Status,
    Items,
    CapturedPods,
    Other,
}

impl Field {
    const READ: [(&'static str, Field); 7] = [
        ("apiVersion", Field::ApiVersion),
        ("kind", Field::Kind),
        ("metadata", Field::Metadata),
        ("spec", Field::Spec),
        ("status", Field::Status),
        ("items", Field::Items),
        ("capturedPods", Field::CapturedPods),
    ];

    /// The bit of this key in [`Document::seen`]; none for the keys skipped.
    fn bit(self) -> u8 {
        match Field::READ.iter().position(|(_, f)| *f == self) {
            Some(i) => 1 << i,
            None => 0,
        }
    }

    fn name(self) -> &'static str {
        Field::READ.iter().find(|(_, f)| *f == self).map_or("", |(name, _)| name)
    }
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Key;
        impl Visitor<'_> for Key {
            type Value = Field;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(Field::READ.iter().find(|(name, _)| *name == v).map_or(Field::Other, |r| r.1))
            }
        }
        d.deserialize_str(Key)
    }
}

/// One of the two arrays of objects the top level may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Array {
    /// `items`: the List's objects.
    Items,
    /// `capturedPods`: deleted pods' last states.
    CapturedPods,
}

/// Where the reader stands in the top-level object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the first byte that is not whitespace.
    Start,
    /// The document is not an object: it is kept whole and judged at the end.
    NotObject,
    /// After `{`: a key, or `}`.
    FirstKey,
    /// After a `,` between members: a key.
    Key,
    /// After a key: `:`.
    Colon(Field),
    /// After `:`: the value.
    Value(Field),
    /// After an array's `[`: an object, or `]`.
    FirstElement(Array),
    /// After a `,` in an array: an object.
    Element(Array),
    /// After an element: `,` or `]`.
    AfterElement(Array),
    /// After a member's value: `,` or `}`.
    AfterValue,
    /// After the closing `}`: only whitespace.
    End,
}

/// A line (from 1) and column (bytes since the line's start), as serde_json counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    line: usize,
    column: usize,
}

impl Position {
    const START: Position = Position { line: 1, column: 0 };

    /// The position after `bytes`, which begin here.
    fn after(self, bytes: &[u8]) -> Position {
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                Position { line: self.line + newlines(bytes), column: bytes.len() - last - 1 }
            }
            None => Position { line: self.line, column: self.column + bytes.len() },
        }
    }

    /// A position serde_json gave for a value that begins here.
    fn then(self, line: usize, column: usize) -> Position {
        match line {
            0 | 1 => Position { line: self.line, column: self.column + column },
            _ => Position { line: self.line + line - 1, column },
        }
    }
}

/// How many `\n` `bytes` holds: counted in blocks of 128 (each of which holds at most
/// 128, so a byte counts it), which the compiler turns into vector instructions; every
/// byte of a dump passes here once.
fn newlines(bytes: &[u8]) -> usize {
    let blocks = bytes.chunks_exact(128);
    let rest = blocks.remainder().iter().filter(|&&b| b == b'\n').count();
    let count = |block: &[u8]| block.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>() as usize;
    blocks.map(count).sum::<usize>() + rest
}

/// One file's top-level object, read a piece at a time.
pub(crate) struct Document<S> {
    /// The file's name, for errors.
    file: String,
    state: State,
    /// The keys read so far ([`Field::bit`]): a key given twice is refused, as serde's
    /// derived readers refuse it.
    seen: u8,
    /// Where the input given next begins.
    base: Position,
    /// Where the document's first byte that is not whitespace is.
    start: Position,
    api_version: Text<S>,
    kind: Text<S>,
    metadata: Obj<Meta<S>>,
    spec: Obj<RawSpec<S>>,
    status: Obj<RawStatus<S>>,
    /// The objects of `items`, each split into its view as it is read.
    items: Snapshot<S>,
    /// The pods of `capturedPods`.
    captured: Vec<Pod<S>>,
}

/// The result of reading one value from the input given so far.
enum Read<T> {
    /// The value and how many bytes it took.
    Value(T, usize),
    /// The input ends within the value.
    More,
}

impl<S: FromJson> Document<S> {
    /// A document of the file named `file`, nothing read yet.
    pub(crate) fn new(file: &str) -> Self {
        Document {
            file: file.to_owned(),
            state: State::Start,
            seen: 0,
            base: Position::START,
            start: Position::START,
            api_version: Text::default(),
            kind: Text::default(),
            metadata: Obj::default(),
            spec: Obj::default(),
            status: Obj::default(),
            items: Snapshot::default(),
            captured: Vec::new(),
        }
    }

    /// Reads what `input` (the bytes after those consumed so far) completes, and
    /// returns how many of its bytes are consumed: the caller gives the rest again,
    /// with what follows, and says when no more follows (`last`). A document that is
    /// not an object consumes nothing: it is judged whole at the end.
    pub(crate) fn advance(&mut self, input: &[u8], last: bool) -> Result<usize, Error> {
        let mut text = Utf8::new(input);
        let mut at = 0;
        loop {
            while input.get(at).is_some_and(|b| matches!(b, b' ' | b'\n' | b'\t' | b'\r')) {
                at += 1;
            }
            let Some(&byte) = input.get(at) else {
                return match self.state {
                    // Nothing is consumed before the `{`: a document that turns out
                    // not to be an object is judged whole.
                    State::Start => Ok(0),
                    State::End => Ok(at),
                    _ if last => Err(self.eof(input)),
                    _ => Ok(at),
                };
            };
            macro_rules! refuse {
                ($what:expr) => {
                    return Err(self.syntax(input, at + 1, $what))
                };
            }
            macro_rules! read_or_wait {
                ($read:expr) => {
                    match $read {
                        Read::Value(value, len) => (value, len),
                        Read::More if last => return Err(self.eof(input)),
                        Read::More => return Ok(at),
                    }
                };
            }
            match self.state {
                State::NotObject => return Ok(0),
                State::Start if byte == b'{' => {
                    self.start = self.position(input, at + 1);
                    self.state = State::FirstKey;
                    at += 1;
                }
                State::Start => {
                    self.state = State::NotObject;
                    return Ok(0);
                }
                State::FirstKey if byte == b'}' => {
                    self.state = State::End;
                    at += 1;
                }
                State::Key if byte == b'}' => refuse!("trailing comma"),
                State::FirstKey | State::Key if byte == b'"' => {
                    let (field, len) = read_or_wait!(self.value::<Field>(&mut text, at, last)?);
                    at += len;
                    if self.seen & field.bit() != 0 {
                        let what = format!("duplicate field `{}`", field.name());
                        return Err(self.syntax(input, at, &what));
                    }
                    self.seen |= field.bit();
                    self.state = State::Colon(field);
                }
                State::FirstKey | State::Key => refuse!("key must be a string"),
                State::Colon(field) if byte == b':' => {
                    self.state = State::Value(field);
                    at += 1;
                }
                State::Colon(_) => refuse!("expected `:`"),
                State::Value(Field::Items) if byte == b'[' => {
                    self.state = State::FirstElement(Array::Items);
                    at += 1;
                }
                State::Value(Field::CapturedPods) if byte == b'[' => {
                    self.state = State::FirstElement(Array::CapturedPods);
                    at += 1;
                }
                State::Value(field) => {
                    let ((), len) = read_or_wait!(self.member(field, &mut text, at, last)?);
                    at += len;
                    self.state = State::AfterValue;
                }
                State::FirstElement(_) if byte == b']' => {
                    self.state = State::AfterValue;
                    at += 1;
                }
                State::Element(_) if byte == b']' => refuse!("trailing comma"),
                State::FirstElement(array) | State::Element(array) => {
                    // Boxed: the item is moved up from serde as a pointer, not whole.
                    let (Obj(item), len) =
                        read_or_wait!(self.value::<Obj<Box<RawObject<S>>>>(&mut text, at, last)?);
                    match (array, item.map(|item| View::from(*item))) {
                        (Array::Items, Some(view)) => self.items.push(view),
                        (Array::CapturedPods, Some(View::Pod(pod))) => self.captured.push(pod),
                        _ => {}
                    }
                    at += len;
                    self.state = State::AfterElement(array);
                }
                State::AfterElement(array) => match byte {
                    b',' => {
                        self.state = State::Element(array);
                        at += 1;
                    }
                    b']' => {
                        self.state = State::AfterValue;
                        at += 1;
                    }
                    _ => refuse!("expected `,` or `]`"),
                },
                State::AfterValue => match byte {
                    b',' => {
                        self.state = State::Key;
                        at += 1;
                    }
                    b'}' => {
                        self.state = State::End;
                        at += 1;
                    }
                    _ => refuse!("expected `,` or `}`"),
                },
                State::End => refuse!("trailing characters"),
            }
        }
    }

    /// Moves past `consumed`, the bytes [`Document::advance`] consumed.
    pub(crate) fn skip(&mut self, consumed: &[u8]) {
        self.base = self.base.after(consumed);
    }

    /// The snapshot, once the whole input has been given; `rest` is what
    /// [`Document::advance`] did not consume (all of a document that is not an
    /// object).
    pub(crate) fn finish(self, rest: &[u8]) -> Result<Snapshot<S>, Error> {
        if matches!(self.state, State::Start | State::NotObject) {
            return Err(self.judge(rest));
        }
        let Some(kind) = self.kind.get() else {
            return Err(self.not_kubernetes("it has no string \"kind\""));
        };
        let mut snapshot = if kind.ends_with("List") {
            self.items
        } else if self.api_version.get().is_none() {
            return Err(self.not_kubernetes("it has no string \"apiVersion\""));
        } else {
            let mut one = Snapshot::default();
            one.push(View::from(RawObject {
                kind: ViewKind::of(kind),
                metadata: self.metadata,
                spec: self.spec,
                status: self.status,
            }));
            one
        };
        snapshot.captured_pods.extend(self.captured);
        Ok(snapshot)
    }

    /// Reads the value of a top-level member that is not an array of objects; an
    /// `items` or `capturedPods` of another shape holds no object.
    fn member(
        &mut self,
        field: Field,
        text: &mut Utf8<'_>,
        at: usize,
        last: bool,
    ) -> Result<Read<()>, Error> {
        fn keep<T>(read: Read<T>, slot: &mut T) -> Read<()> {
            match read {
                Read::Value(value, len) => {
                    *slot = value;
                    Read::Value((), len)
                }
                Read::More => Read::More,
            }
        }
        let read = match field {
            Field::ApiVersion => keep(self.value(text, at, last)?, &mut self.api_version),
            Field::Kind => keep(self.value(text, at, last)?, &mut self.kind),
            Field::Metadata => keep(self.value(text, at, last)?, &mut self.metadata),
            Field::Spec => keep(self.value(text, at, last)?, &mut self.spec),
            Field::Status => keep(self.value(text, at, last)?, &mut self.status),
            Field::Items | Field::CapturedPods | Field::Other => {
                keep(self.value::<IgnoredAny>(text, at, last)?, &mut IgnoredAny)
            }
        };
        Ok(read)
    }

    /// Reads one value that begins at `at`, as text while the input is UTF-8, else as
    /// bytes.
    fn value<T: for<'de> Deserialize<'de>>(
        &self,
        text: &mut Utf8<'_>,
        at: usize,
        last: bool,
    ) -> Result<Read<T>, Error> {
        let input = text.input;
        let bytes = &input[at..];
        let as_text = text.from(at);
        let as_bytes = || one(serde_json::Deserializer::from_slice(bytes), bytes, last);
        let read = match as_text.is_empty() {
            true => as_bytes(),
            false => match one(serde_json::Deserializer::from_str(as_text), bytes, last) {
                Err(e) if e.is_eof() && as_text.len() < bytes.len() => as_bytes(),
                read => read,
            },
        };
        read.map_err(|e| self.not_json(input, at, &e))
    }

    /// The document's first byte that is not whitespace.
    fn not_kubernetes(&self, why: &str) -> Error {
        let Position { line, column } = self.start;
        Error::invalid(format!(
            "{} is not a Kubernetes object or List at line {line}, column {column}: {why}",
            self.file
        ))
    }

    /// A document that is not an object: not JSON, or JSON of another shape.
    fn judge(&self, whole: &[u8]) -> Error {
        match serde_json::from_slice::<IgnoredAny>(whole) {
            Err(e) => self.not_json(whole, 0, &e),
            Ok(_) => {
                let first = whole.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(0);
                let Position { line, column } = self.position(whole, first + 1);
                Error::invalid(format!(
                    "{} is not a Kubernetes object or List at line {line}, column {column}: \
                     the document is not a JSON object",
                    self.file
                ))
            }
        }
    }

    /// serde_json's error for a value that begins at `at` of `input`.
    fn not_json(&self, input: &[u8], at: usize, e: &serde_json::Error) -> Error {
        let text = e.to_string();
        let what = text.split(" at line ").next().unwrap_or(&text);
        let Position { line, column } = self.position(input, at).then(e.line(), e.column());
        self.refusal(what, line, column)
    }

    /// A top-level error at `at` of `input`, as serde_json words it.
    fn syntax(&self, input: &[u8], at: usize, what: &str) -> Error {
        let Position { line, column } = self.position(input, at.min(input.len()));
        self.refusal(what, line, column)
    }

    /// The input ends within the top-level object.
    fn eof(&self, input: &[u8]) -> Error {
        let what = match self.state {
            State::Value(_) | State::Key | State::Element(_) => "EOF while parsing a value",
            State::FirstElement(_) | State::AfterElement(_) => "EOF while parsing a list",
            _ => "EOF while parsing an object",
        };
        self.syntax(input, input.len(), what)
    }

    fn refusal(&self, what: &str, line: usize, column: usize) -> Error {
        Error::invalid(format!(
            "{} is not JSON: {what} at line {line}, column {column}: give kubectl's -o json output",
            self.file
        ))
    }

    /// The position of `input[at]`, `input` being what follows the bytes consumed.
    fn position(&self, input: &[u8], at: usize) -> Position {
        self.base.after(&input[..at])
    }
}

/// Reads one value with `de`, whose input is `bytes` or the UTF-8 run that begins it.
/// A value that ends where the input does is cut short unless the input is `last`
/// (a number may go on).
fn one<'de, R, T>(
    de: serde_json::Deserializer<R>,
    bytes: &[u8],
    last: bool,
) -> serde_json::Result<Read<T>>
where
    R: serde_json::de::Read<'de>,
    T: Deserialize<'de>,
{
    let mut values = de.into_iter::<T>();
    match values.next() {
        Some(Ok(value)) => {
            let len = values.byte_offset();
            Ok(if len == bytes.len() && !last { Read::More } else { Read::Value(value, len) })
        }
        Some(Err(e)) if e.is_eof() && !last => Ok(Read::More),
        Some(Err(e)) => Err(e),
        // Only whitespace: not met, as a value is read from a byte that is not.
        None => Ok(Read::More),
    }
}

/// The input, and the longest run of it that is UTF-8 from where reading last began,
/// found once and used while reading stays within it.
struct Utf8<'a> {
    input: &'a [u8],
    from: usize,
    text: &'a str,
}

impl<'a> Utf8<'a> {
    fn new(input: &'a [u8]) -> Self {
        Utf8 { input, from: 0, text: valid_prefix(input) }
    }

    /// The run of UTF-8 that begins at `at`, which reading of a value begins at (after
    /// an ASCII byte of JSON's own, so on a character's first byte).
    fn from(&mut self, at: usize) -> &'a str {
        if at < self.from || at >= self.from + self.text.len() {
            self.from = at;
            self.text = valid_prefix(&self.input[at..]);
        }
        self.text.get(at - self.from..).unwrap_or("")
    }
}

/// The longest prefix of `bytes` that is UTF-8.
fn valid_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}
