//! HTTP basic authentication from the web config's `basic_auth_users` (user → bcrypt hash),
//! in front of every path of both listeners, as exporter-toolkit puts it.
//!
//! A bcrypt check costs tens of milliseconds by design, and Prometheus sends the same
//! credentials on every scrape, so a verified (user, password) pair is remembered: later
//! scrapes cost a map lookup. bcrypt runs on the blocking pool, never on the async workers.
//!
//! Everything else is a bcrypt check, one at a time: an unknown user's password is checked
//! against a configured user's hash and then refused anyway, so the answer takes as long as a
//! wrong password and does not tell which users exist; and a flood of wrong passwords costs
//! at most one core, the others queueing for a moment and then answered 429.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

/// Users and their bcrypt hashes, validated at load.
#[derive(Debug)]
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    /// Pairs already verified; bounded by the distinct valid credentials presented.
    verified: Mutex<HashSet<(String, String)>>,
    /// One bcrypt check at a time (see the module docs).
    bcrypt_slot: Arc<tokio::sync::Semaphore>,
    /// How long a check waits for the slot before the request is answered 429.
    bcrypt_queue_wait: Duration,
}

impl BasicAuth {
    /// `users`: user → bcrypt hash. A hash bcrypt cannot read is named by its user.
    pub fn new(users: BTreeMap<String, String>) -> Result<Self, String> {
        for (user, hash) in &users {
            if user.is_empty() {
                return Err("a user name must not be empty".into());
            }
            hash.parse::<bcrypt::HashParts>()
                .map_err(|e| format!("{user}: not a bcrypt hash ({e})"))?;
        }
        Ok(BasicAuth {
            users,
            verified: Mutex::default(),
            bcrypt_slot: Arc::new(tokio::sync::Semaphore::new(1)),
            bcrypt_queue_wait: Duration::from_secs(2),
        })
    }

    /// Whether an `Authorization` header carries a known user's password. Runs bcrypt, so
    /// off the async workers (see [`require`]).
    pub fn allows(&self, authorization: Option<&HeaderValue>) -> bool {
        match self.check_cached(authorization) {
            Checked::Known(ok) => ok,
            Checked::NeedsBcrypt(pair) => self.verify(pair),
        }
    }

    /// Everything but bcrypt: malformed headers and remembered pairs.
    fn check_cached(&self, authorization: Option<&HeaderValue>) -> Checked {
        let Some(pair) = authorization.and_then(credentials) else {
            return Checked::Known(false);
        };
        if self.lock().contains(&pair) {
            return Checked::Known(true);
        }
        Checked::NeedsBcrypt(pair)
    }

    fn verify(&self, pair: (String, String)) -> bool {
        let known = self.users.get(&pair.0);
        // An unknown user costs the same bcrypt as a known one (a decoy: any user's hash).
        let Some(hash) = known.or_else(|| self.users.values().next()) else {
            return false;
        };
        let ok = bcrypt::verify(&pair.1, hash).unwrap_or(false) && known.is_some();
        if ok {
            self.lock().insert(pair);
        }
        ok
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(String, String)>> {
        // A panic elsewhere while holding the lock leaves a set that is still valid.
        self.verified.lock().unwrap_or_else(|e| e.into_inner())
    }
}

enum Checked {
    Known(bool),
    NeedsBcrypt((String, String)),
}

/// `Basic base64(user:password)` → (user, password).
fn credentials(value: &HeaderValue) -> Option<(String, String)> {
    let encoded = value.to_str().ok()?.strip_prefix("Basic ")?.trim();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// axum middleware: 401 with a `WWW-Authenticate: Basic` challenge unless the request
/// authenticates.
pub async fn require(State(auth): State<Arc<BasicAuth>>, req: Request, next: Next) -> Response {
    // A repeated scrape is a map lookup here; only a new pair goes to the blocking pool.
    let allowed = match auth.check_cached(req.headers().get(header::AUTHORIZATION)) {
        Checked::Known(ok) => ok,
        Checked::NeedsBcrypt(pair) => {
            let slot = tokio::time::timeout(
                auth.bcrypt_queue_wait,
                auth.bcrypt_slot.clone().acquire_owned(),
            )
            .await;
            let Ok(Ok(slot)) = slot else {
                return too_many_password_checks();
            };
            let checker = auth.clone();
            tokio::task::spawn_blocking(move || {
                let _slot = slot;
                checker.verify(pair)
            })
            .await
            .unwrap_or(false)
        }
    };
    if allowed {
        return next.run(req).await;
    }
    let mut res = (StatusCode::UNAUTHORIZED, Body::from("Unauthorized\n")).into_response();
    res.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic"));
    res
}

fn too_many_password_checks() -> Response {
    let mut res = (
        StatusCode::TOO_MANY_REQUESTS,
        Body::from("too many password checks at once; retry\n"),
    )
        .into_response();
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    fn basic(user: &str, password: &str) -> HeaderValue {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        HeaderValue::from_str(&format!("Basic {token}")).unwrap()
    }

    fn alice() -> BasicAuth {
        // Cost 4, the lowest bcrypt allows, keeps the test fast.
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        BasicAuth::new([("alice".to_string(), hash)].into()).unwrap()
    }

    #[test]
    fn only_the_right_password_of_a_known_user_passes() {
        let auth = alice();
        assert!(auth.allows(Some(&basic("alice", "s3cret"))));
        // The second time comes from the cache, with the same answer.
        assert!(auth.allows(Some(&basic("alice", "s3cret"))));
        assert!(!auth.allows(Some(&basic("alice", "wrong"))));
        assert!(!auth.allows(Some(&basic("bob", "s3cret"))));
        assert!(!auth.allows(None));
        assert!(!auth.allows(Some(&HeaderValue::from_static("Bearer x"))));
        assert!(!auth.allows(Some(&HeaderValue::from_static("Basic !!!"))));
    }

    #[test]
    fn bad_hashes_are_named_at_load() {
        let e =
            BasicAuth::new([("carol".to_string(), "plaintext".to_string())].into()).unwrap_err();
        assert!(e.starts_with("carol: not a bcrypt hash"), "{e}");
        assert!(BasicAuth::new([(String::new(), bcrypt::hash("x", 4).unwrap())].into()).is_err());
    }

    #[tokio::test]
    async fn the_middleware_challenges_and_lets_through() {
        let app = Router::new()
            .route("/metrics", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(alice()),
                require,
            ));
        let call = |auth: Option<HeaderValue>| {
            let mut req = Request::builder().uri("/metrics");
            if let Some(a) = auth {
                req = req.header(header::AUTHORIZATION, a);
            }
            app.clone().oneshot(req.body(Body::empty()).unwrap())
        };
        let denied = call(None).await.unwrap();
        assert_eq!(denied.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(denied.headers()[header::WWW_AUTHENTICATE], "Basic");
        let ok = call(Some(basic("alice", "s3cret"))).await.unwrap();
        assert_eq!(ok.status(), StatusCode::OK);
    }

    /// Issue 13: an unknown user is not refused faster than a wrong password (that would
    /// tell which users exist): both cost a bcrypt check.
    #[test]
    fn unknown_users_cost_a_bcrypt_check_too() {
        let auth = alice();
        assert!(matches!(
            auth.check_cached(Some(&basic("mallory", "s3cret"))),
            Checked::NeedsBcrypt(_)
        ));
        // alice's password under another name: the decoy check matches, the answer is no.
        assert!(!auth.verify(("mallory".into(), "s3cret".into())));
        assert!(!auth.lock().contains(&("mallory".into(), "s3cret".into())));
    }

    /// Password checks run one at a time; one that cannot get the slot in time is answered
    /// 429, and a remembered pair still passes without waiting.
    #[tokio::test]
    async fn password_checks_are_throttled() {
        let mut auth = alice();
        auth.bcrypt_queue_wait = Duration::from_millis(100);
        assert!(auth.allows(Some(&basic("alice", "s3cret"))));
        let auth = Arc::new(auth);
        let app = Router::new()
            .route("/metrics", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(auth.clone(), require));
        let call = |h: HeaderValue| {
            let req = Request::builder()
                .uri("/metrics")
                .header(header::AUTHORIZATION, h)
                .body(Body::empty())
                .unwrap();
            app.clone().oneshot(req)
        };
        let busy = auth.bcrypt_slot.clone().acquire_owned().await.unwrap();
        let refused = call(basic("alice", "guess")).await.unwrap();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        let remembered = call(basic("alice", "s3cret")).await.unwrap();
        assert_eq!(remembered.status(), StatusCode::OK);
        drop(busy);
        let wrong = call(basic("alice", "guess")).await.unwrap();
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    }
}
