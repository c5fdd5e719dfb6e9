//! rustls client configuration for talking to Prometheus over HTTPS.
//!
//! Built by hand with the `ring` provider because the workspace enables reqwest's
//! `rustls-no-provider`: one crypto provider for the whole suite, chosen explicitly rather than by
//! whichever dependency installs a process default first.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::PrometheusError;

/// What the TLS layer needs from [`super::PrometheusConfig`].
pub(crate) struct TlsSettings<'a> {
    pub ca_file: Option<&'a Path>,
    pub client_cert_file: Option<&'a Path>,
    pub client_key_file: Option<&'a Path>,
    pub insecure_skip_verify: bool,
    /// Whether system roots are needed at all; loading them is skipped for plain-HTTP URLs.
    pub want_native_roots: bool,
}

fn read(path: &Path) -> Result<Vec<u8>, PrometheusError> {
    std::fs::read(path).map_err(|e| PrometheusError::File {
        path: path.to_owned(),
        reason: format!("cannot read: {e}"),
    })
}

fn file_err(path: &Path, reason: impl std::fmt::Display) -> PrometheusError {
    PrometheusError::File {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

/// Reads every certificate of a PEM bundle; an empty bundle is an error because it would silently
/// make every server untrusted (or present no client identity).
pub(crate) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, PrometheusError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(path, format!("invalid PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(file_err(path, "no PEM certificate found"));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, PrometheusError> {
    let pem = read(path)?;
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| file_err(path, format!("invalid PEM private key: {e}")))
}

fn roots(settings: &TlsSettings<'_>) -> Result<RootCertStore, PrometheusError> {
    let mut store = RootCertStore::empty();
    if let Some(ca) = settings.ca_file {
        for cert in read_certs(ca)? {
            store
                .add(cert)
                .map_err(|e| file_err(ca, format!("unusable CA certificate: {e}")))?;
        }
    } else if settings.want_native_roots {
        let native = rustls_native_certs::load_native_certs();
        for e in &native.errors {
            tracing::warn!(error = %e, "could not load some system CA certificates");
        }
        let (added, ignored) = store.add_parsable_certificates(native.certs);
        if added == 0 {
            tracing::warn!(
                ignored,
                "no usable system CA certificates; HTTPS to Prometheus will fail without a CA file"
            );
        }
    }
    Ok(store)
}

/// Builds the rustls config: CA file or system roots, optional client identity, ALPN for h2.
pub(crate) fn client_config(settings: &TlsSettings<'_>) -> Result<ClientConfig, PrometheusError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| PrometheusError::Config(format!("TLS setup: {e}")))?;
    let builder = if settings.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert {
                algorithms: provider.signature_verification_algorithms,
            }))
    } else {
        builder.with_root_certificates(roots(settings)?)
    };
    let mut config = match (settings.client_cert_file, settings.client_key_file) {
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert)?;
            let key_der = read_key(key)?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| file_err(key, format!("client certificate and key unusable: {e}")))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(PrometheusError::Config(
                "client certificate and client key must be given together".into(),
            ));
        }
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The `insecure_skip_verify` verifier. It skips only the chain/name check; handshake signatures
/// are still verified so the connection is at least bound to the presented certificate's key.
#[derive(Debug)]
struct AcceptAnyServerCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
