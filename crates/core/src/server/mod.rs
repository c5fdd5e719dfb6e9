//! Serving: admin endpoints, TLS (including client-certificate and front-proxy
//! authentication), delegated authentication and authorization, and graceful shutdown.
//!
//! A TLS aggregated-API server that checks the front-proxy identity is wired like this:
//!
//! ```no_run
//! # async fn doc() -> Result<(), Box<dyn std::error::Error>> {
//! use std::path::PathBuf;
//! use axum::{Extension, Router, http::{HeaderMap, StatusCode}, routing::get};
//! use ferrocrane_core::server::*;
//!
//! let tls = TlsServerConfig {
//!     cert_file: PathBuf::from("serving.crt"),
//!     key_file: PathBuf::from("serving.key"),
//!     client_ca_file: Some(PathBuf::from("requestheader-ca.crt")),
//!     client_auth: ClientAuth::Optional,
//! }
//! .load()?;
//! let proxy = FrontProxyConfig {
//!     allowed_names: vec!["front-proxy-client".into()],
//!     ..FrontProxyConfig::default()
//! };
//! let app = Router::new().route(
//!     "/apis/custom.metrics.k8s.io/v1beta2",
//!     get(move |peer: Option<Extension<PeerCertificates>>, headers: HeaderMap| async move {
//!         match front_proxy_identity(peer.as_ref().map(|p| &p.0), &headers, &proxy) {
//!             Ok(Some(user)) => (StatusCode::OK, user.username),
//!             Ok(None) => (StatusCode::UNAUTHORIZED, String::new()),
//!             Err(e) => (StatusCode::UNAUTHORIZED, e.to_string()),
//!         }
//!     }),
//! );
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:6443").await?;
//! serve(listener, Some(tls), app, shutdown_signal()).await?;
//! # Ok(()) }
//! ```

mod admin;
pub mod delegated_auth;
mod front_proxy;
mod percent;
mod serve;
mod tls;

#[cfg(test)]
mod tests;

use std::{path::PathBuf, time::Duration};

pub use admin::{AdminState, Readiness, ReadyGate, admin_router};
pub use delegated_auth::UserInfo;
pub use front_proxy::{AuthnError, FrontProxyConfig, front_proxy_identity};
pub use percent::{UrlPart, percent_decode};
pub use serve::{ServeOptions, serve, serve_with, shutdown_signal};
pub use tls::{
    ClientAuth, PeerCertificates, SELF_SIGNED_CERT_NAME, SELF_SIGNED_KEY_NAME, TlsServerConfig,
    client_common_name, crypto_provider, ensure_self_signed_cert, generate_self_signed, read_certs,
    read_key,
};

/// Errors of this module; each names the file or flag at fault so a failed start prints one
/// actionable line.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    #[error("{0}: invalid PEM: {1}")]
    Pem(PathBuf, String),
    #[error("TLS configuration: {0}")]
    Tls(String),
    #[error("in-flight requests did not finish within {0:?}")]
    DrainTimeout(Duration),
}
