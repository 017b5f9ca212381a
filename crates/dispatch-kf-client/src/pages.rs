//! A list read a page at a time, each page handed out before the next is asked for,
//! so that a reader of a whole cluster holds one page, not the cluster.
//!
//! The apiserver answers a list in the order its storage keeps objects: by
//! `<namespace>/<name>`, byte by byte ([`storage_order`]). When a page's continue token
//! expires (410), the list starts again from its first page, and what was handed out
//! already (every object up to the last one handed out, in that order) is skipped; up
//! to [`LIST_RESTARTS`] times, as [`Objects::list`] restarts.

use std::cmp::Ordering;

use dispatch_core::{CallContext, Result};
use dispatch_kf_model::view::View;

use crate::objects::Objects;
#[cfg(doc)]
use crate::objects::{LIST_PAGE, LIST_RESTARTS};

/// How the apiserver orders a list: by namespace and name as one path,
/// `<namespace>/<name>`, byte by byte (so namespace `team-a` comes before `team`, as
/// `-` comes before `/`).
pub fn storage_order(a: &View, b: &View) -> Ordering {
    storage_order_of(
        (a.meta().namespace(), a.meta().name()),
        (b.meta().namespace(), b.meta().name()),
    )
}

/// [`storage_order`] of two (namespace, name) pairs.
pub fn storage_order_of(a: (&str, &str), b: (&str, &str)) -> Ordering {
    path(a).cmp(path(b))
}

/// `<namespace>/<name>`, as bytes.
fn path<'a>((ns, name): (&'a str, &'a str)) -> impl Iterator<Item = u8> + 'a {
    ns.as_bytes().iter().chain(b"/").chain(name.as_bytes()).copied()
}

/// A list of one kind, read a page at a time.
pub struct Pages<'a> {
    objects: Objects<'a>,
    selector: String,
    continue_token: String,
    /// The namespace and name of the last object handed out.
    last: Option<(String, String)>,
    done: bool,
    restarts: usize,
}

impl<'a> Objects<'a> {
    /// The objects `selector` selects (empty: all), [`LIST_PAGE`] a request, a page at
    /// a time.
    pub fn pages(self, selector: &str) -> Pages<'a> {
        Pages {
            objects: self,
            selector: selector.to_owned(),
            continue_token: String::new(),
            last: None,
            done: false,
            restarts: 0,
        }
    }
}

impl Pages<'_> {
    /// The next page, in the apiserver's order; `None` once the list is read. A page may
    /// come empty only when it is the last.
    pub async fn next(&mut self, cx: &CallContext) -> Result<Option<Vec<View>>> {
        while !self.done {
            let page = match self.objects.page(cx, &self.selector, &self.continue_token).await {
                Ok(page) => page,
                Err(failed) => {
                    self.objects.expired_again(failed, &mut self.restarts)?;
                    self.continue_token.clear();
                    continue;
                }
            };
            self.continue_token = page.continue_token;
            self.done = self.continue_token.is_empty();
            let fresh: Vec<View> = match &self.last {
                None => page.items,
                Some((ns, name)) => page
                    .items
                    .into_iter()
                    .filter(|v| {
                        let key = (v.meta().namespace(), v.meta().name());
                        storage_order_of(key, (ns, name)) == Ordering::Greater
                    })
                    .collect(),
            };
            if let Some(v) = fresh.last() {
                self.last = Some((v.meta().namespace().to_owned(), v.meta().name().to_owned()));
            }
            if !fresh.is_empty() || self.done {
                return Ok(Some(fresh));
            }
        }
        Ok(None)
    }
}
