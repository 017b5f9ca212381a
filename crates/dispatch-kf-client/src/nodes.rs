//! Reading the Nodes a job's pods are bound to, in as few requests as the adapter's
//! permissions allow.
//!
//! With `list` on Nodes, one label-selected list by the kubelet's hostname label reads
//! them all, however many ranks the job has; a Node whose hostname label is not its name
//! (a kubelet run with `--hostname-override` names both alike, but a hand-made Node need
//! not) is then read by a get, as is every Node when only `get` is granted. Either way a
//! Node that is not found is left out, which classification reads as gone.

use std::collections::BTreeSet;

use dispatch_core::{CallContext, Result};
use dispatch_kf_model::view::{Pod, View};

use crate::cluster::Cluster;
use crate::probe::Permission;
use crate::resources::NODE;

/// The label a kubelet puts on its Node, valued with the node's hostname, which is also
/// the Node's name unless someone made them differ.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The most names one list's selector carries (some 30 KB of query at most).
const NAMES_PER_LIST: usize = 1_000;

/// How the adapter may read Nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NodeReads {
    /// Not at all: node-lost is then known only from a pod's own finding.
    #[default]
    No,
    /// By a get each (`get` granted, `list` not).
    EachByName,
    /// By a list of those a job's pods name (`get` and `list` granted).
    Listed,
}

impl NodeReads {
    /// Whether any Node is read.
    pub fn readable(self) -> bool {
        self != NodeReads::No
    }
}

impl Cluster {
    /// How this identity may read Nodes, from two access reviews (`get`, then `list`
    /// when `get` is granted).
    pub async fn node_reads(&self, cx: &CallContext, namespace: &str) -> Result<NodeReads> {
        let get = Permission { verb: "get", resource: NODE, subresource: "" };
        if !self.can_i(cx, namespace, &get).await? {
            return Ok(NodeReads::No);
        }
        let list = Permission { verb: "list", ..get };
        Ok(match self.can_i(cx, namespace, &list).await? {
            true => NodeReads::Listed,
            false => NodeReads::EachByName,
        })
    }

    /// The Node of each of `pods` that exists, each read once: by lists of their
    /// hostnames when `reads` is [`NodeReads::Listed`], then a get for each the lists
    /// did not find, eight at a time (`READS_AT_ONCE`); none when Nodes are not
    /// readable.
    pub async fn nodes_of(
        &self,
        cx: &CallContext,
        pods: &[Pod],
        reads: NodeReads,
    ) -> Result<Vec<View>> {
        let names = pods.iter().filter_map(|p| p.node_name.get()).collect();
        self.nodes_named(cx, names, reads).await
    }

    /// The Nodes of `names` that exist, read as [`Cluster::nodes_of`] says.
    pub async fn nodes_named(
        &self,
        cx: &CallContext,
        mut names: BTreeSet<&str>,
        reads: NodeReads,
    ) -> Result<Vec<View>> {
        names.remove("");
        if !reads.readable() {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        if reads == NodeReads::Listed {
            let all: Vec<&str> = names.iter().copied().collect();
            for chunk in all.chunks(NAMES_PER_LIST) {
                let hostnames = chunk.iter().map(|n| (*n).to_owned()).collect();
                let listed = self.list_in(cx, NODE, "", HOSTNAME_LABEL, &hostnames, None).await?;
                // A Node whose hostname is another's name is not that Node.
                found.extend(listed.into_iter().filter(|n| names.contains(n.meta().name())));
            }
        }
        let have: BTreeSet<String> = found.iter().map(|n| n.meta().name().to_owned()).collect();
        let nodes = self.objects(NODE, "");
        let unread = names.into_iter().filter(|n| !have.contains(*n));
        let gets: Vec<_> = unread.map(|name| nodes.get_view_opt(cx, name)).collect();
        found.extend(crate::gets::at_most_a_few_at_once(gets).await?);
        Ok(found)
    }
}
