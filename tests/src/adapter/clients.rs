//! HTTPS clients for an adapter's serving certificate, as the aggregator or a forged front
//! proxy would call it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use crate::cluster::Cluster;

fn pki(cluster: &Cluster, file: &str) -> Result<PathBuf> {
    Ok(cluster
        .env
        .path("FRONT_PROXY_CA")?
        .parent()
        .context("pki dir")?
        .join(file))
}

/// A client trusting the adapter's serving CA; with `front_proxy`, presenting
/// kube-apiserver's front-proxy client certificate (as the aggregator does).
pub fn adapter_https_client(
    cluster: &Cluster,
    ca: &str,
    front_proxy: bool,
) -> Result<reqwest::Client> {
    adapter_https_client_resolving(cluster, ca, front_proxy, None)
}

/// [`adapter_https_client`], resolving one host name to a loopback address (a certificate
/// without an IP address is verified by its name).
pub fn adapter_https_client_resolving(
    cluster: &Cluster,
    ca: &str,
    front_proxy: bool,
    resolve: Option<(&str, std::net::SocketAddr)>,
) -> Result<reqwest::Client> {
    let builder = trusting(ca)?;
    let config = if front_proxy {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(pki(cluster, "front-proxy-client.crt")?)?
                .collect::<Result<_, _>>()?;
        let key = PrivateKeyDer::from_pem_file(pki(cluster, "front-proxy-client.key")?)?;
        builder.with_client_auth_cert(certs, key)?
    } else {
        builder.with_no_client_auth()
    };
    client_from(config, resolve)
}

/// A client trusting the adapter's serving CA and presenting the client certificate
/// `cert_pem` (with its key), whoever signed it: a forged front proxy, say.
pub fn adapter_https_client_presenting(
    ca: &str,
    cert_pem: &str,
    key_pem: &str,
) -> Result<reqwest::Client> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert_pem.as_bytes()).collect::<Result<_, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())?;
    let config = trusting(ca)?.with_client_auth_cert(certs, key)?;
    client_from(config, None)
}

fn trusting(
    ca: &str,
) -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(c?)?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots))
}

fn client_from(
    config: rustls::ClientConfig,
    resolve: Option<(&str, std::net::SocketAddr)>,
) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .timeout(Duration::from_secs(10));
    if let Some((host, addr)) = resolve {
        builder = builder.resolve(host, addr);
    }
    Ok(builder.build()?)
}
