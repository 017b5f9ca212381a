//! Gets side by side: a read that must get many objects by name (a job's Nodes, the
//! submissions its pods name that its lists missed) makes them a few at a time.

use std::future::Future;

use dispatch_core::Result;
use dispatch_kf_model::view::View;

/// How many gets of one read are in flight at once: a job on hundreds of Nodes makes
/// as many gets, and all at once they would meet the apiserver's flow control (429)
/// or run the process out of file descriptors.
pub(crate) const READS_AT_ONCE: usize = 8;

/// The objects `reads` find, [`READS_AT_ONCE`] in flight at a time; the first failure
/// is the answer.
pub(crate) async fn at_most_a_few_at_once(
    reads: Vec<impl Future<Output = Result<Option<View>>>>,
) -> Result<Vec<View>> {
    use futures::{StreamExt as _, TryStreamExt as _};
    let found: Vec<Option<View>> =
        futures::stream::iter(reads).buffer_unordered(READS_AT_ONCE).try_collect().await?;
    Ok(found.into_iter().flatten().collect())
}
