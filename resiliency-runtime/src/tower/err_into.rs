//! [`ErrInto`]: an inner service's future with its error boxed, as the layers' services return
//! it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::BoxError;

pin_project! {
    /// The inner service's future, its error boxed.
    pub(crate) struct ErrInto<F> {
        #[pin]
        inner: F,
    }
}

impl<F> ErrInto<F> {
    pub(crate) fn new(inner: F) -> Self {
        ErrInto { inner }
    }
}

impl<F, Res, Err> Future for ErrInto<F>
where
    F: Future<Output = Result<Res, Err>>,
    Err: Into<BoxError>,
{
    type Output = Result<Res, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx).map_err(Into::into)
    }
}
