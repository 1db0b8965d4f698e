//! Retry policy (exponential backoff with full jitter, `Retry-After` honoured) and the
//! client-side rate limit (token bucket).

use crate::ambient::Ambient;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// When and how often failed requests are tried again.
///
/// Retried: no answer (connection error, timeout), 5xx and 429. GET, PATCH and DELETE are
/// repeated as they are; a POST whose outcome is unknown is only repeated after a lookup found
/// that it did not happen (see [`super::Idempotency`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Backoff before retry n (n = 1, 2, ...) is uniform in `[0, min(max_delay, base_delay * 2^(n-1))]`.
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` answer is waited for, but at most this long.
    pub max_retry_after: Duration,
    /// After a POST whose outcome is unknown (timeout, dropped connection, 5xx), wait at least
    /// this long before looking the resource up, so a request still being executed by the API
    /// can land first.
    pub settle_before_lookup: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(30),
            settle_before_lookup: Duration::from_secs(1),
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// The pause before retry number `retry` (1-based), given the server's `Retry-After`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, ambient: &Ambient) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.max_retry_after);
        }
        let ceiling = doubling(retry, self.base_delay, self.max_delay);
        if ceiling.is_zero() {
            return Duration::ZERO;
        }
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(ambient.up_to(nanos))
    }
}

/// `base` for the first attempt `n` = 1, doubling with each further one, at most `max`.
pub fn doubling(n: u32, base: Duration, max: Duration) -> Duration {
    let exp = n.saturating_sub(1).min(30);
    base.saturating_mul(1u32 << exp).min(max)
}

/// Client-side rate limit: a token bucket of `burst` tokens refilled at
/// `requests_per_second`. Every request attempt (retries included) takes one token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub requests_per_second: f64,
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            requests_per_second: 20.0,
            burst: 40,
        }
    }
}

#[derive(Debug)]
pub(crate) struct TokenBucket {
    rate: f64,
    burst: f64,
    /// Tokens available at `at`; negative when requests are queued (reserved ahead).
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    pub(crate) fn new(limit: RateLimit) -> TokenBucket {
        let rate = if limit.requests_per_second.is_finite() && limit.requests_per_second > 0.0 {
            limit.requests_per_second
        } else {
            f64::MAX
        };
        let burst = f64::from(limit.burst.max(1));
        TokenBucket {
            rate,
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Takes a token and says how long to wait for it (reserved ahead: the queue).
    fn reserve(&self) -> Duration {
        let mut st = self.state.lock();
        let now = Instant::now();
        let refill = now.saturating_duration_since(st.1).as_secs_f64() * self.rate;
        st.0 = (st.0 + refill).min(self.burst);
        st.1 = now;
        st.0 -= 1.0;
        if st.0 >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-st.0 / self.rate)
        }
    }

    /// Waits until a token is available. Tokens are reserved in call order, so waiters are
    /// served first come, first served; cancelling a wait does not return its token.
    pub(crate) async fn acquire(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The rate limit with a priority lane: requests of the priority lane (node
/// initialization and lifecycle) do not queue behind the others (a burst of Service work):
/// they wait only for an allowance of their own, a quarter of the rate, and the shared
/// queue pays for them afterwards, so the total stays within the limit (give or take the
/// allowance's burst).
#[derive(Debug)]
pub(crate) struct Limiter {
    shared: TokenBucket,
    priority: TokenBucket,
}

impl Limiter {
    pub(crate) fn new(limit: RateLimit) -> Limiter {
        let quarter = RateLimit {
            requests_per_second: limit.requests_per_second / 4.0,
            burst: (limit.burst / 4).max(1),
        };
        Limiter {
            shared: TokenBucket::new(limit),
            priority: TokenBucket::new(quarter),
        }
    }

    /// Requests per second of the limit.
    pub(crate) fn rate(&self) -> f64 {
        self.shared.rate
    }

    pub(crate) async fn acquire(&self, priority: bool) {
        if priority {
            // Debited from the shared queue without waiting in it.
            let _ = self.shared.reserve();
            self.priority.acquire().await;
        } else {
            let started = Instant::now();
            self.shared.acquire().await;
            let waited = started.elapsed();
            let _ = THROTTLED.try_with(|t| t.set(t.get() + waited));
        }
    }
}

tokio::task_local! {
    /// The time the requests of a [`throttled`] future waited for the rate limit.
    static THROTTLED: std::cell::Cell<Duration>;
}

/// Runs `work`, and says how long its requests waited for the client-side rate limit (the
/// CCM's own budget, as opposed to the API's answers).
pub async fn throttled<F: std::future::Future>(work: F) -> (F::Output, Duration) {
    THROTTLED
        .scope(std::cell::Cell::new(Duration::ZERO), async move {
            let out = work.await;
            (out, THROTTLED.with(std::cell::Cell::get))
        })
        .await
}

/// What `Retry-After` applies to: the resource family of a path (`/v1/load-balancers/pools/x`
/// → `load-balancers`, `/v1/servers/y` → `servers`).
pub(crate) fn endpoint_class(path: &str) -> &str {
    let rest = path.strip_prefix("/v1/").unwrap_or(path);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    &rest[..end]
}

type Gate = Arc<tokio::sync::Mutex<Option<Instant>>>;

/// Endpoint classes the API asked to wait (a 429 with `Retry-After`): while one is held,
/// its requests pass one at a time, the first after the wait, so a storm of 429s costs one
/// request per `Retry-After` per class instead of one per waiting request.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    gates: Mutex<std::collections::BTreeMap<String, Gate>>,
}

/// The right to send the one request that tries a held class again.
pub(crate) type Probe = Option<tokio::sync::OwnedMutexGuard<Option<Instant>>>;

impl Holds {
    /// Waits until a request of `class` may go; holds the class's gate while it is the one
    /// trying again after a wait.
    pub(crate) async fn pass(&self, class: &str) -> Probe {
        let gate = self.gates.lock().get(class).cloned()?;
        let guard = gate.lock_owned().await;
        let until = (*guard)?;
        tokio::time::sleep_until(until).await;
        Some(guard)
    }

    /// The API answered 429 asking to wait `wait`.
    pub(crate) fn hold(&self, class: &str, probe: Probe, wait: Duration) {
        let until = Instant::now() + wait;
        match probe {
            Some(mut guard) => *guard = Some(until),
            None => {
                let gate = self
                    .gates
                    .lock()
                    .entry(class.to_string())
                    .or_default()
                    .clone();
                // A request in flight when another set the hold: the later wait wins.
                if let Ok(mut g) = gate.try_lock_owned() {
                    *g = Some(g.map_or(until, |u| u.max(until)));
                }
            }
        }
    }

    /// Any answer but a 429: a class that was held is free again.
    pub(crate) fn release(&self, probe: Probe) {
        if let Some(mut guard) = probe {
            *guard = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_capped_and_jittered() {
        let p = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        let a = Ambient::system();
        for _ in 0..100 {
            assert!(p.delay(1, None, &a) <= Duration::from_millis(100));
            assert!(p.delay(2, None, &a) <= Duration::from_millis(200));
            assert!(p.delay(10, None, &a) <= Duration::from_millis(350));
        }
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(2)), &a),
            Duration::from_secs(2)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(600)), &a),
            Duration::from_secs(30)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn priority_requests_skip_the_queue_and_the_queue_pays_for_them() {
        let l = Limiter::new(RateLimit {
            requests_per_second: 10.0,
            burst: 4,
        });
        // 103 requests queued (4 of them from the burst): the next one would wait 10 s.
        for _ in 0..103 {
            let _ = l.shared.reserve();
        }
        let start = Instant::now();
        l.acquire(true).await;
        assert_eq!(start.elapsed(), Duration::ZERO, "no wait behind the queue");
        // The queue paid for it: the next ordinary request waits one token more.
        assert_eq!(l.shared.reserve(), Duration::from_millis(10_100));
        // The allowance is a quarter of the rate: its burst (1), then 2.5 per second.
        l.acquire(true).await;
        assert_eq!(start.elapsed(), Duration::from_millis(400));
    }

    #[tokio::test]
    async fn bucket_lets_a_burst_through_then_paces() {
        let b = TokenBucket::new(RateLimit {
            requests_per_second: 100.0,
            burst: 3,
        });
        let start = Instant::now();
        for _ in 0..3 {
            b.acquire().await;
        }
        assert!(start.elapsed() < Duration::from_millis(5));
        for _ in 0..5 {
            b.acquire().await;
        }
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(49) && took <= Duration::from_millis(200),
            "{took:?}"
        );
    }
}
