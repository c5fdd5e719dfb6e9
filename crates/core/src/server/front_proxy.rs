//! Request-header authentication for aggregated API servers.
//!
//! kube-apiserver forwards requests for an APIService to us over TLS, presenting its
//! front-proxy client certificate and stating who the original caller was in `X-Remote-*`
//! headers. The headers are only trustworthy when the connection carries that certificate
//! (already verified by the TLS layer against the requestheader CA) with an allowed CN;
//! anyone else could set them. This mirrors the Kubernetes `requestheader` authenticator.

use std::collections::BTreeMap;

use http::HeaderMap;

use super::delegated_auth::UserInfo;
use super::percent::{UrlPart, percent_decode};
use super::tls::PeerCertificates;

/// Which certificate names and headers identify the front proxy. Kubernetes publishes these in
/// the `kube-system/extension-apiserver-authentication` ConfigMap (`requestheader-*` keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontProxyConfig {
    /// Common names accepted on the proxy's client certificate; empty accepts any certificate
    /// the requestheader CA verified (Kubernetes semantics).
    pub allowed_names: Vec<String>,
    /// Headers tried in order for the user name; the first non-empty one wins.
    pub username_headers: Vec<String>,
    /// Headers whose values (every occurrence) are groups.
    pub group_headers: Vec<String>,
    /// Header prefixes whose suffix is an extra-attribute key.
    pub extra_prefixes: Vec<String>,
}

impl Default for FrontProxyConfig {
    /// The header names kube-apiserver is usually started with.
    fn default() -> Self {
        Self {
            allowed_names: Vec::new(),
            username_headers: vec!["X-Remote-User".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_prefixes: vec!["X-Remote-Extra-".into()],
        }
    }
}

/// Why a request that looked like it came from the front proxy was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthnError {
    #[error("client certificate has no subject common name")]
    NoCommonName,
    #[error("client certificate common name {0:?} is not an allowed front-proxy name")]
    NameNotAllowed(String),
    #[error("header {0} is not valid UTF-8")]
    InvalidHeader(String),
}

/// Authenticates a request as forwarded by kube-apiserver's front proxy.
///
/// * `Ok(None)`: no client certificate, or a valid proxy certificate but no user header — this
///   authenticator has nothing to say and `X-Remote-*` headers are ignored (a caller may
///   authenticate otherwise, e.g. with a bearer token and TokenReview).
/// * `Err(_)`: a certificate was presented but it is not one of the front proxy's; the request
///   must be rejected (401), not treated as anonymous.
/// * `Ok(Some(user))`: the original caller.
pub fn front_proxy_identity(
    peer: Option<&PeerCertificates>,
    headers: &HeaderMap,
    config: &FrontProxyConfig,
) -> Result<Option<UserInfo>, AuthnError> {
    let Some(leaf) = peer.and_then(PeerCertificates::leaf) else {
        return Ok(None);
    };
    if !config.allowed_names.is_empty() {
        let cn = super::tls::client_common_name(leaf).ok_or(AuthnError::NoCommonName)?;
        if !config.allowed_names.contains(&cn) {
            return Err(AuthnError::NameNotAllowed(cn));
        }
    }

    let mut username = None;
    for name in &config.username_headers {
        for value in headers.get_all(name.as_str()) {
            let v = header_str(name, value)?;
            if !v.is_empty() {
                username = Some(v.to_string());
                break;
            }
        }
        if username.is_some() {
            break;
        }
    }
    let Some(username) = username else {
        return Ok(None);
    };

    let mut groups = Vec::new();
    for name in &config.group_headers {
        for value in headers.get_all(name.as_str()) {
            let v = header_str(name, value)?;
            if !v.is_empty() {
                groups.push(v.to_string());
            }
        }
    }

    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        // HeaderName is always lower-case, so compare prefixes case-insensitively.
        let Some(prefix) = config
            .extra_prefixes
            .iter()
            .find(|p| name.as_str().len() > p.len() && starts_with_ignore_case(name.as_str(), p))
        else {
            continue;
        };
        // Extra keys may contain characters not allowed in header names (e.g. `/` in
        // `authentication.kubernetes.io/pod-name`), so the proxy percent-encodes them.
        let key =
            percent_decode(&name.as_str()[prefix.len()..], UrlPart::PathSegment).to_lowercase();
        let v = header_str(name.as_str(), value)?;
        if !v.is_empty() {
            extra.entry(key).or_default().push(v.to_string());
        }
    }

    Ok(Some(UserInfo {
        username,
        groups,
        extra,
        ..UserInfo::default()
    }))
}

fn header_str<'a>(name: &str, value: &'a http::HeaderValue) -> Result<&'a str, AuthnError> {
    value
        .to_str()
        .map(str::trim)
        .map_err(|_| AuthnError::InvalidHeader(name.to_string()))
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::CertificateDer;
    use std::sync::Arc;

    fn cert_with_cn(cn: Option<&str>) -> PeerCertificates {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, cn);
        } else {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, "org");
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        PeerCertificates(Arc::new(vec![CertificateDer::from(cert.der().to_vec())]))
    }

    fn config() -> FrontProxyConfig {
        FrontProxyConfig {
            allowed_names: vec!["front-proxy-client".into()],
            ..Default::default()
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn full_identity() {
        let peer = cert_with_cn(Some("front-proxy-client"));
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Group", "devs"),
            ("X-Remote-Extra-Scopes", "a"),
            ("X-Remote-Extra-Scopes", "b"),
            (
                "X-Remote-Extra-Authentication.kubernetes.io%2fPod-Name",
                "p",
            ),
        ]);
        let user = front_proxy_identity(Some(&peer), &h, &config())
            .unwrap()
            .unwrap();
        assert_eq!(user.username, "alice");
        assert_eq!(user.groups, vec!["system:authenticated", "devs"]);
        assert_eq!(user.extra["scopes"], vec!["a", "b"]);
        assert_eq!(
            user.extra["authentication.kubernetes.io/pod-name"],
            vec!["p"]
        );
    }

    #[test]
    fn headers_without_certificate_are_ignored() {
        let h = headers(&[
            ("X-Remote-User", "admin"),
            ("X-Remote-Group", "system:masters"),
        ]);
        assert_eq!(front_proxy_identity(None, &h, &config()), Ok(None));
        let empty = PeerCertificates(Arc::new(vec![]));
        assert_eq!(front_proxy_identity(Some(&empty), &h, &config()), Ok(None));
    }

    #[test]
    fn wrong_common_name_is_an_error() {
        let peer = cert_with_cn(Some("kubelet"));
        let h = headers(&[("X-Remote-User", "admin")]);
        assert_eq!(
            front_proxy_identity(Some(&peer), &h, &config()),
            Err(AuthnError::NameNotAllowed("kubelet".into()))
        );
        let no_cn = cert_with_cn(None);
        assert_eq!(
            front_proxy_identity(Some(&no_cn), &h, &config()),
            Err(AuthnError::NoCommonName)
        );
    }

    #[test]
    fn empty_allowed_names_accepts_any_verified_cert() {
        let peer = cert_with_cn(None);
        let h = headers(&[("X-Remote-User", "bob")]);
        let cfg = FrontProxyConfig::default();
        let user = front_proxy_identity(Some(&peer), &h, &cfg)
            .unwrap()
            .unwrap();
        assert_eq!(user.username, "bob");
        assert!(user.groups.is_empty());
        assert!(user.extra.is_empty());
    }

    #[test]
    fn username_header_order_and_empty_values() {
        let peer = cert_with_cn(Some("front-proxy-client"));
        let cfg = FrontProxyConfig {
            username_headers: vec!["X-First".into(), "X-Second".into()],
            ..config()
        };
        let h = headers(&[("X-First", ""), ("X-Second", "carol")]);
        let user = front_proxy_identity(Some(&peer), &h, &cfg)
            .unwrap()
            .unwrap();
        assert_eq!(user.username, "carol");

        // A valid proxy cert without any user header authenticates nobody.
        let h = headers(&[("X-Remote-Group", "g")]);
        assert_eq!(front_proxy_identity(Some(&peer), &h, &cfg), Ok(None));
    }

    #[test]
    fn non_utf8_header_is_an_error() {
        let peer = cert_with_cn(Some("front-proxy-client"));
        let mut h = HeaderMap::new();
        h.insert(
            "x-remote-user",
            http::HeaderValue::from_bytes(b"\xffbad").unwrap(),
        );
        assert!(matches!(
            front_proxy_identity(Some(&peer), &h, &config()),
            Err(AuthnError::InvalidHeader(_))
        ));
    }
}
