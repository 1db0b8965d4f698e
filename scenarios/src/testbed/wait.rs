//! Waiting for a condition in tests, with a deadline instead of a fixed sleep.

use std::future::Future;
use std::time::Duration;

/// Polls `check` every 50 ms until it returns `Some`, for at most `limit`; panics naming
/// `what` when the time is up.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
