//! Plain readings of objects and the keys the sim's parts share: what a field says,
//! whether an object is being deleted, conditions, owner references, the labels and
//! annotations Kueue and the Trainer agree on. Functions of a JSON value alone; this
//! layer knows nothing of the store, the registry, the controllers or HTTP.

pub(crate) mod conditions;
pub(crate) mod keys;
pub(crate) mod meta;
