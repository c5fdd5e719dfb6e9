//! Client-side QPS/burst limiting for the Kubernetes client, like client-go's
//! `--kube-api-qps`/`--kube-api-burst`, so a relist storm (thousands of objects, many
//! resources) cannot overload or get us throttled by API Priority and Fairness.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll, ready},
    time::Duration,
};

use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// A token bucket that hands out reservations rather than refusals: every caller gets a token,
/// possibly in the future, which keeps callers in FIFO order without polling.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket. `burst` below 1 is raised to 1 (otherwise nothing could ever pass).
    /// `qps` must be positive; callers treat non-positive as "no limit" and build no bucket.
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: qps,
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Takes one token and returns how long the caller must wait before using it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

/// Tower layer applying a shared [`TokenBucket`] to every request.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    bucket: Option<Arc<Mutex<TokenBucket>>>,
}

impl RateLimitLayer {
    /// `qps <= 0` (or not finite) disables limiting, for tests and for users who rely on
    /// server-side fairness alone.
    pub fn new(qps: f32, burst: u32) -> Self {
        let qps = f64::from(qps);
        let bucket = (qps.is_finite() && qps > 0.0)
            .then(|| Arc::new(Mutex::new(TokenBucket::new(qps, burst, Instant::now()))));
        Self { bucket }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            bucket: self.bucket.clone(),
            wait: None,
            permitted: false,
        }
    }
}

/// The service made by [`RateLimitLayer`]. Waits in `poll_ready`, so a `Buffer` in front of it
/// (kube's `Client` has one) queues callers instead of spinning.
pub struct RateLimit<S> {
    inner: S,
    bucket: Option<Arc<Mutex<TokenBucket>>>,
    wait: Option<Pin<Box<Sleep>>>,
    permitted: bool,
}

impl<S: Clone> Clone for RateLimit<S> {
    fn clone(&self) -> Self {
        // A clone shares the bucket but not this instance's pending reservation.
        Self {
            inner: self.inner.clone(),
            bucket: self.bucket.clone(),
            wait: None,
            permitted: false,
        }
    }
}

impl<S, Req> Service<Req> for RateLimit<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if let Some(bucket) = &self.bucket
            && !self.permitted
        {
            if self.wait.is_none() {
                let now = Instant::now();
                let delay = bucket
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .reserve(now);
                if delay.is_zero() {
                    self.permitted = true;
                } else {
                    self.wait = Some(Box::pin(tokio::time::sleep_until(now + delay)));
                }
            }
            if let Some(wait) = &mut self.wait {
                ready!(wait.as_mut().poll(cx));
                self.wait = None;
                self.permitted = true;
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.permitted = false;
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[test]
    fn bucket_allows_burst_then_paces() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 3, t0);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::from_millis(100));
        // Reservations queue up behind each other.
        assert_eq!(b.reserve(t0), Duration::from_millis(200));
        // After a long idle period the bucket is full again, never more than burst.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.reserve(later), Duration::ZERO);
        }
        assert!(b.reserve(later) > Duration::ZERO);
    }

    #[test]
    fn zero_burst_still_passes_one() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(1.0, 0, t0);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::from_secs(1));
    }

    #[test]
    fn time_going_backwards_is_harmless() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let mut b = TokenBucket::new(5.0, 1, t0);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        let earlier = t0 - Duration::from_secs(5);
        assert_eq!(b.reserve(earlier), Duration::from_millis(200));
    }

    #[tokio::test(start_paused = true)]
    async fn service_waits_for_tokens() {
        let layer = RateLimitLayer::new(10.0, 2);
        let svc = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(Instant::now())
        }));
        let start = Instant::now();
        let mut times = Vec::new();
        for _ in 0..4 {
            times.push(svc.clone().oneshot(()).await.unwrap() - start);
        }
        assert_eq!(times[0], Duration::ZERO);
        assert_eq!(times[1], Duration::ZERO);
        assert!(times[2] >= Duration::from_millis(100), "{times:?}");
        assert!(times[3] >= Duration::from_millis(200), "{times:?}");
        assert!(times[3] < Duration::from_millis(250), "{times:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn disabled_limit_passes_through() {
        let layer = RateLimitLayer::new(0.0, 0);
        let svc = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(Instant::now())
        }));
        let start = Instant::now();
        for _ in 0..100 {
            assert_eq!(svc.clone().oneshot(()).await.unwrap(), start);
        }
    }
}
