//! `--tls-config`: the Prometheus exporter-toolkit web configuration file, as
//! kube-state-metrics reads it for both its listeners.
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/tls/tls.crt
//!   key_file: /etc/tls/tls.key
//!   client_auth_type: RequireAndVerifyClientCert   # optional
//!   client_ca_file: /etc/tls/ca.crt                # optional
//!   min_version: TLS12                             # optional
//! ```
//!
//! Supported: `cert_file`, `key_file`, `client_ca_file`, `client_auth_type`
//! (`NoClientCert`, `VerifyClientCertIfGiven`, `RequireAndVerifyClientCert`), `min_version`
//! and `max_version` where rustls can honour them (TLS 1.2 and 1.3; it has no 1.0/1.1, so a
//! lower minimum only means "1.2"). A file without `cert_file`/`key_file` serves plain HTTP,
//! as exporter-toolkit does. `basic_auth_users` (user → bcrypt hash) puts HTTP basic
//! authentication in front of both listeners. Keys this build cannot honour (
//! `cipher_suites`, `curve_preferences`, `client_allowed_sans`, inline `cert`/`key`,
//! `RequestClientCert`/`RequireAnyClientCert`, a TLS 1.3 minimum or a TLS 1.2 maximum,
//! `http_server_config`, `rate_limit`) are rejected at startup with the key named, never
//! silently ignored. The file is read once at startup (exporter-toolkit re-reads it per
//! handshake; here a certificate rotation needs a restart).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ferrocrane_core::config::{ConfigError, ValidationError, parse_yaml_str};
use ferrocrane_core::server::{ClientAuth, TlsServerConfig};

use crate::basic_auth::BasicAuth;
use serde::Deserialize;

/// The whole file; every key exporter-toolkit knows is accepted by the parser so that an
/// unsupported one gets a specific message rather than "unknown field".
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebConfigFile {
    #[serde(default)]
    tls_server_config: TlsSection,
    #[serde(default)]
    http_server_config: Option<serde_json::Value>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
    #[serde(default)]
    rate_limit: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsSection {
    #[serde(default)]
    cert_file: String,
    #[serde(default)]
    key_file: String,
    #[serde(default)]
    cert: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    client_auth_type: String,
    #[serde(default)]
    client_ca_file: String,
    #[serde(default)]
    client_ca: String,
    #[serde(default)]
    client_allowed_sans: Vec<String>,
    #[serde(default)]
    cipher_suites: Vec<String>,
    #[serde(default)]
    curve_preferences: Vec<String>,
    #[serde(default)]
    min_version: String,
    #[serde(default)]
    max_version: String,
    #[serde(default)]
    prefer_server_cipher_suites: Option<bool>,
}

/// What the web config asks of both listeners.
#[derive(Debug, Default)]
pub struct WebConfig {
    /// `None` means plain HTTP (no certificate configured).
    pub tls: Option<TlsServerConfig>,
    /// `basic_auth_users`, when any.
    pub basic_auth: Option<BasicAuth>,
}

/// Parses a web config file's text. Relative paths are resolved against the file's
/// directory, as exporter-toolkit does.
pub fn parse_web_config(name: &str, dir: &Path, text: &str) -> Result<WebConfig, ConfigError> {
    let mut file: WebConfigFile = if text.trim().is_empty() {
        WebConfigFile::default()
    } else {
        parse_yaml_str(name, text)?
    };
    let basic_auth = match file.basic_auth_users.take().filter(|u| !u.is_empty()) {
        None => None,
        Some(users) => Some(
            BasicAuth::new(users).map_err(|message| ConfigError::Invalid {
                file: name.to_owned(),
                error: ValidationError::new("basic_auth_users", &message),
            })?,
        ),
    };
    Ok(WebConfig {
        tls: tls_config(name, dir, file)?,
        basic_auth,
    })
}

fn tls_config(
    name: &str,
    dir: &Path,
    file: WebConfigFile,
) -> Result<Option<TlsServerConfig>, ConfigError> {
    let invalid = |field: &str, message: &str| ConfigError::Invalid {
        file: name.to_owned(),
        error: ValidationError::new(field, message),
    };
    let unsupported = |field: &str| {
        invalid(
            field,
            "is not supported by ksm; remove it (see docs/ksm.md, TLS) or terminate TLS in a proxy",
        )
    };
    if file.http_server_config.is_some() {
        return Err(unsupported("http_server_config"));
    }
    if file.rate_limit.is_some() {
        return Err(unsupported("rate_limit"));
    }
    let t = file.tls_server_config;
    for (field, set) in [
        ("tls_server_config.cert", !t.cert.is_empty()),
        ("tls_server_config.key", !t.key.is_empty()),
        ("tls_server_config.client_ca", !t.client_ca.is_empty()),
        (
            "tls_server_config.client_allowed_sans",
            !t.client_allowed_sans.is_empty(),
        ),
        (
            "tls_server_config.cipher_suites",
            !t.cipher_suites.is_empty(),
        ),
        (
            "tls_server_config.curve_preferences",
            !t.curve_preferences.is_empty(),
        ),
        (
            "tls_server_config.prefer_server_cipher_suites",
            t.prefer_server_cipher_suites.is_some(),
        ),
    ] {
        if set {
            return Err(unsupported(field));
        }
    }
    match t.min_version.as_str() {
        "" | "TLS10" | "TLS11" | "TLS12" => {}
        "TLS13" => {
            return Err(invalid(
                "tls_server_config.min_version",
                "TLS13 as a minimum is not supported by ksm (TLS 1.2 and 1.3 are served)",
            ));
        }
        _ => {
            return Err(invalid(
                "tls_server_config.min_version",
                "unknown TLS version: use TLS10, TLS11, TLS12 or TLS13",
            ));
        }
    }
    match t.max_version.as_str() {
        "" | "TLS13" => {}
        "TLS10" | "TLS11" | "TLS12" => {
            return Err(invalid(
                "tls_server_config.max_version",
                "a maximum below TLS13 is not supported by ksm",
            ));
        }
        _ => {
            return Err(invalid(
                "tls_server_config.max_version",
                "unknown TLS version: use TLS10, TLS11, TLS12 or TLS13",
            ));
        }
    }
    if t.cert_file.is_empty() && t.key_file.is_empty() {
        if !t.client_ca_file.is_empty() || !t.client_auth_type.is_empty() {
            return Err(invalid(
                "tls_server_config",
                "client certificate settings need cert_file and key_file",
            ));
        }
        return Ok(None);
    }
    if t.cert_file.is_empty() {
        return Err(invalid("tls_server_config.cert_file", "missing cert_file"));
    }
    if t.key_file.is_empty() {
        return Err(invalid("tls_server_config.key_file", "missing key_file"));
    }
    let client_auth = match t.client_auth_type.as_str() {
        "" | "NoClientCert" => ClientAuth::None,
        "VerifyClientCertIfGiven" => ClientAuth::Optional,
        "RequireAndVerifyClientCert" => ClientAuth::Required,
        "RequestClientCert" | "RequireAnyClientCert" => {
            return Err(invalid(
                "tls_server_config.client_auth_type",
                "accepting unverified client certificates is not supported by ksm; use \
                 VerifyClientCertIfGiven or RequireAndVerifyClientCert with client_ca_file",
            ));
        }
        _ => {
            return Err(invalid(
                "tls_server_config.client_auth_type",
                "invalid ClientAuth: use NoClientCert, VerifyClientCertIfGiven or \
                 RequireAndVerifyClientCert",
            ));
        }
    };
    if client_auth == ClientAuth::None && !t.client_ca_file.is_empty() {
        return Err(invalid(
            "tls_server_config.client_ca_file",
            "client CA's have been configured without a client_auth_type",
        ));
    }
    if client_auth != ClientAuth::None && t.client_ca_file.is_empty() {
        return Err(invalid(
            "tls_server_config.client_ca_file",
            "required when client_auth_type verifies client certificates",
        ));
    }
    let path = |p: &str| -> PathBuf { dir.join(p) };
    Ok(Some(TlsServerConfig {
        cert_file: path(&t.cert_file),
        key_file: path(&t.key_file),
        client_ca_file: (!t.client_ca_file.is_empty()).then(|| path(&t.client_ca_file)),
        client_auth,
    }))
}

/// Reads `--tls-config`.
pub fn load_web_config(path: &Path) -> Result<WebConfig, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse_web_config(&name, dir, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<TlsServerConfig>, String> {
        parse_web_config("web.yaml", Path::new("/etc/ksm"), text)
            .map(|c| c.tls)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn basic_auth_users_are_loaded_and_checked() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let c = parse_web_config(
            "web.yaml",
            Path::new("/etc/ksm"),
            &format!("basic_auth_users:\n  alice: '{hash}'\n"),
        )
        .unwrap();
        assert!(c.tls.is_none());
        assert!(c.basic_auth.is_some());
        let e = parse_web_config(
            "web.yaml",
            Path::new("."),
            "basic_auth_users:\n  bob: plain\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("basic_auth_users: bob: not a bcrypt hash"),
            "{e}"
        );
    }

    #[test]
    fn empty_file_or_no_certificate_means_plain_http() {
        assert_eq!(parse(""), Ok(None));
        assert_eq!(parse("tls_server_config: {}\n"), Ok(None));
    }

    #[test]
    fn certificate_and_client_auth() {
        let c = parse(
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: /abs/tls.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  min_version: TLS12\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.cert_file, PathBuf::from("/etc/ksm/tls.crt"));
        assert_eq!(c.key_file, PathBuf::from("/abs/tls.key"));
        assert_eq!(c.client_ca_file, Some(PathBuf::from("/etc/ksm/ca.crt")));
        assert_eq!(c.client_auth, ClientAuth::Required);
        let c = parse("tls_server_config:\n  cert_file: a\n  key_file: b\n")
            .unwrap()
            .unwrap();
        assert_eq!((c.client_auth, c.client_ca_file), (ClientAuth::None, None));
    }

    #[test]
    fn bad_or_unsupported_settings_name_the_key() {
        for (text, needle) in [
            (
                "tls_server_config:\n  cert_file: a\n",
                "tls_server_config.key_file: missing key_file",
            ),
            (
                "tls_server_config:\n  key_file: a\n",
                "tls_server_config.cert_file: missing cert_file",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Bogus\n",
                "tls_server_config.client_auth_type: invalid ClientAuth",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n",
                "tls_server_config.client_ca_file: client CA's have been configured",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
                "tls_server_config.client_ca_file: required",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
                "tls_server_config.cipher_suites: is not supported",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n",
                "tls_server_config.min_version",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: SSL3\n",
                "unknown TLS version",
            ),
            ("tls_server_config:\n  certfile: a\n", "certfile"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains("web.yaml"), "{e}");
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }
}
