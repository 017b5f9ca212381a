//! HTTP: the server (TLS, connections, streams), one request's way through the
//! apiserver (authenticate, route, authorize, faults, handler, log), request parsing,
//! and the handlers of each verb. Handlers write through the registry; nothing below
//! this layer names a request type.

pub(crate) mod api;
pub(crate) mod collection;
pub(crate) mod delete;
pub(crate) mod discovery;
pub(crate) mod logs;
pub(crate) mod openapi;
pub(crate) mod read;
pub(crate) mod request;
pub(crate) mod server;
pub(crate) mod tls;
pub(crate) mod watch;
pub(crate) mod write;
