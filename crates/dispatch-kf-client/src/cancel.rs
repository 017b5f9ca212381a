//! A call's cancellation on tokio: `dispatch-core` names the shape
//! ([`Cancellation`]); this gives it with `tokio_util`'s token, so the caller keeps the
//! token and every request of the call stops when it is cancelled.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use dispatch_core::{CallContext, Cancellation};
use tokio_util::sync::CancellationToken;

#[derive(Debug)]
struct Token(CancellationToken);

impl Cancellation for Token {
    fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    fn cancelled(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.0.cancelled())
    }
}

/// `cx` made cancellable: cancelling the returned token cancels the call.
pub fn cancellable(cx: CallContext) -> (CallContext, CancellationToken) {
    let token = CancellationToken::new();
    (CallContext { cancel: Some(Arc::new(Token(token.clone()))), ..cx }, token)
}
