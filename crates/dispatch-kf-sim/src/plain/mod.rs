//! Layer 1, plain: functions of values and the leaf types every layer above shares.
//! Readings of a JSON object and the keys the parts share (`object`), the served kinds
//! (`resources`), Status errors, label selectors, structural schemas, managedFields,
//! patches, identities and their rules (`auth`), and fault rules. Nothing here holds
//! state or knows of the store, the registry, the controllers or HTTP.

pub(crate) mod apierror;
pub(crate) mod auth;
pub(crate) mod faults;
pub(crate) mod managed;
pub(crate) mod object;
pub(crate) mod patch;
pub(crate) mod resources;
pub(crate) mod schema;
pub(crate) mod selector;
