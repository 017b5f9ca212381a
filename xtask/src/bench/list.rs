//! What both generated dumps share: the `List` they are written as, and the job ids,
//! names and UIDs that make every copy of an object distinct.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use dispatch_core::JobId;
use dispatch_kf_model::names;

/// Writes a `kubectl get -o json` List, one item at a time, so that a dump of
/// gigabytes never sits in memory.
pub(crate) struct ListWriter {
    out: BufWriter<File>,
    first: bool,
}

impl ListWriter {
    /// Starts the List at `path`.
    pub(crate) fn create(path: &Path) -> std::io::Result<ListWriter> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(b"{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n")?;
        Ok(ListWriter { out, first: true })
    }

    /// Adds one item, given as its JSON text.
    pub(crate) fn item(&mut self, text: &str) -> std::io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.out.write_all(text.as_bytes())
    }

    /// Ends the List; returns the file's size in bytes.
    pub(crate) fn finish(mut self, path: &Path) -> std::io::Result<u64> {
        self.out.write_all(b"\n], \"metadata\": {\"resourceVersion\": \"\"}}\n")?;
        self.out.flush()?;
        Ok(std::fs::metadata(path)?.len())
    }
}

/// A canonical JobId for job `j`.
pub(crate) fn job_id(j: usize) -> String {
    const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut id = String::from("01JDQ4V8Z6K3");
    let mut n = j;
    for _ in 0..14 {
        id.push(CROCKFORD[n % 32] as char);
        n /= 32;
    }
    id
}

/// The name dispatch gives submission 1 of job `j`'s TrainJob and JobSet.
pub(crate) fn job_name(j: usize) -> String {
    let id = JobId::parse(&job_id(j)).expect("job_id makes a ULID");
    names::make(&id, 1)
}

/// A UID-shaped string, distinct for each `(a, b)`.
pub(crate) fn fake_uid(a: u64, b: u64) -> String {
    let x = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    format!(
        "{:08x}-{:04x}-4{:03x}-9{:03x}-{:012x}",
        x >> 32,
        x & 0xffff,
        a & 0xfff,
        b & 0xfff,
        x & 0xffff_ffff_ffff
    )
}
