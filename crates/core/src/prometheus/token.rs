//! Bearer token file that follows rotation.
//!
//! Projected service-account tokens are rewritten by the kubelet (via an atomic symlink swap)
//! roughly every hour; a client that reads the file once stops authenticating after the first
//! rotation. Re-reading on every request would be correct but wasteful, so the file is re-read
//! when its metadata changes, and at least every [`MAX_AGE`] in case a rewrite kept mtime and size.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use super::PrometheusError;

/// Upper bound on how long a cached token is trusted without re-reading (client-go uses 1 minute).
const MAX_AGE: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Cached {
    token: String,
    modified: Option<SystemTime>,
    len: u64,
    read_at: Instant,
}

#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    cached: Mutex<Option<Cached>>,
}

impl TokenFile {
    /// Reads the token once so a missing or empty file fails client construction, not the first
    /// query minutes later.
    pub(crate) fn new(path: &Path) -> Result<Self, PrometheusError> {
        let tf = TokenFile {
            path: path.to_owned(),
            cached: Mutex::new(None),
        };
        tf.token()?;
        Ok(tf)
    }

    fn read_fresh(&self) -> Result<Cached, PrometheusError> {
        let err = |reason: String| PrometheusError::File {
            path: self.path.clone(),
            reason,
        };
        let meta = std::fs::metadata(&self.path).map_err(|e| err(format!("cannot stat: {e}")))?;
        let raw =
            std::fs::read_to_string(&self.path).map_err(|e| err(format!("cannot read: {e}")))?;
        let token = raw.trim().to_owned();
        if token.is_empty() {
            return Err(err("bearer token file is empty".into()));
        }
        Ok(Cached {
            token,
            modified: meta.modified().ok(),
            len: meta.len(),
            read_at: Instant::now(),
        })
    }

    /// The current token. A failed re-read after a successful one keeps serving the old token
    /// (with a warning): a transient hiccup during rotation should not fail every query.
    pub(crate) fn token(&self) -> Result<String, PrometheusError> {
        let mut guard = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = guard.as_ref() {
            let fresh_enough = c.read_at.elapsed() < MAX_AGE;
            let unchanged = std::fs::metadata(&self.path)
                .map(|m| m.modified().ok() == c.modified && m.len() == c.len)
                .unwrap_or(false);
            if fresh_enough && unchanged {
                return Ok(c.token.clone());
            }
        }
        match self.read_fresh() {
            Ok(c) => {
                let token = c.token.clone();
                *guard = Some(c);
                Ok(token)
            }
            Err(e) => match guard.as_ref() {
                Some(old) => {
                    tracing::warn!(error = %e, "keeping the previous bearer token");
                    Ok(old.token.clone())
                }
                None => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rewrites_and_survives_removal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        std::fs::write(&path, "first\n").expect("write");
        let tf = TokenFile::new(&path).expect("reads");
        assert_eq!(tf.token().expect("token"), "first");
        // Different length, so the metadata check notices even within one mtime tick.
        std::fs::write(&path, "second-token").expect("write");
        assert_eq!(tf.token().expect("token"), "second-token");
        std::fs::remove_file(&path).expect("rm");
        assert_eq!(tf.token().expect("old token kept"), "second-token");
    }

    #[test]
    fn missing_or_empty_file_fails_construction() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nope");
        let e = TokenFile::new(&missing).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, " \n").expect("write");
        let e = TokenFile::new(&empty).unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
    }
}
