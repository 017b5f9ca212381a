//! When a Node's pods are lost with it: a fact judged once per Node (`Index::new`) for
//! all the pods bound to it, which the rules and the notes read.

use crate::keys;
use crate::lenient::Str;
use crate::object::{Condition, Taint};
use crate::view::{Node, condition};

/// Why a Node's pods are lost with it: its `Ready` condition is not True, else it
/// carries the out-of-service taint. Judged once per Node (`Index::new`), for all the
/// pods bound to it.
pub(crate) enum NodeLoss<'a, S> {
    /// The `Ready` condition, not True.
    NotReady(&'a Condition<S>),
    /// The out-of-service taint.
    OutOfService(&'a Taint<S>),
}

// By hand: a derive would ask `S: Copy` of the text the node holds by reference.
impl<S> Clone for NodeLoss<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for NodeLoss<'_, S> {}

/// What makes `node` lost for its pods, if anything.
pub(crate) fn node_loss<S: Str>(node: &Node<S>) -> Option<NodeLoss<'_, S>> {
    if let Some(ready) = condition(&node.conditions, "Ready").filter(|c| !c.is_true()) {
        return Some(NodeLoss::NotReady(ready));
    }
    let taint = node.taints.iter().find(|t| t.key.get() == Some(keys::TAINT_OUT_OF_SERVICE))?;
    Some(NodeLoss::OutOfService(taint))
}
