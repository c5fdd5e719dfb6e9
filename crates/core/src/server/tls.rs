//! TLS material for the servers: rustls configuration from PEM files, client-certificate
//! verification, and the self-signed fallback an aggregated API server uses when no
//! certificate is mounted.

use std::{
    fs,
    net::IpAddr,
    path::{Path, PathBuf},
    sync::Arc,
};

use rustls::{
    RootCertStore, ServerConfig,
    crypto::CryptoProvider,
    server::{WebPkiClientVerifier, danger::ClientCertVerifier},
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use super::ServerError;

/// How the server treats client certificates.
///
/// `Optional` is what an aggregated API server needs: kube-apiserver's front proxy presents a
/// certificate, but kubelet probes and in-cluster callers do not, and must still reach
/// `/healthz` or be authenticated by other means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientAuth {
    /// Never ask for a client certificate.
    #[default]
    None,
    /// Ask, verify it against the client CA if given, but let callers without one in.
    Optional,
    /// Refuse the handshake unless a certificate verified by the client CA is presented.
    Required,
}

/// Files a TLS server is configured from (the usual `--tls-cert-file`, `--tls-private-key-file`,
/// `--client-ca-file` trio).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsServerConfig {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// PEM bundle of CAs that client certificates must chain to.
    pub client_ca_file: Option<PathBuf>,
    /// Whether client certificates are asked for and required.
    pub client_auth: ClientAuth,
}

/// The crypto provider for every TLS config we build. Explicit so that a process where two
/// crates installed different process-default providers still behaves the same.
pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsServerConfig {
    /// Reads the files and builds a rustls config advertising ALPN `h2` and `http/1.1`.
    pub fn load(&self) -> Result<Arc<ServerConfig>, ServerError> {
        let certs = read_certs(&self.cert_file)?;
        let key = read_key(&self.key_file)?;
        let provider = crypto_provider();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ServerError::Tls(format!("protocol versions: {e}")))?;

        let builder = match self.client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            ClientAuth::Optional | ClientAuth::Required => {
                let Some(ca_file) = &self.client_ca_file else {
                    return Err(ServerError::Tls(format!(
                        "client auth {:?} needs a client CA file",
                        self.client_auth
                    )));
                };
                let verifier = client_verifier(ca_file, self.client_auth, provider)?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_single_cert(certs, key).map_err(|e| {
            ServerError::Tls(format!(
                "{} / {}: {e}",
                self.cert_file.display(),
                self.key_file.display()
            ))
        })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn client_verifier(
    ca_file: &Path,
    mode: ClientAuth,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, ServerError> {
    let mut roots = RootCertStore::empty();
    for cert in read_certs(ca_file)? {
        roots
            .add(cert)
            .map_err(|e| ServerError::Tls(format!("{}: {e}", ca_file.display())))?;
    }
    let mut builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    if mode == ClientAuth::Optional {
        builder = builder.allow_unauthenticated();
    }
    builder
        .build()
        .map_err(|e| ServerError::Tls(format!("{}: {e}", ca_file.display())))
}

/// Reads every certificate of a PEM file; an empty file is an error because a server with no
/// certificate (or a CA bundle with no CA) can only be a misconfiguration.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ServerError> {
    let data = read_file(path)?;
    let certs = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ServerError::Pem(path.to_path_buf(), e.to_string()))?;
    if certs.is_empty() {
        return Err(ServerError::Pem(
            path.to_path_buf(),
            "no CERTIFICATE block found".into(),
        ));
    }
    Ok(certs)
}

/// Reads the first private key of a PEM file.
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ServerError> {
    let data = read_file(path)?;
    PrivateKeyDer::from_pem_slice(&data)
        .map_err(|e| ServerError::Pem(path.to_path_buf(), e.to_string()))
}

fn read_file(path: &Path) -> Result<Vec<u8>, ServerError> {
    fs::read(path).map_err(|e| ServerError::Io(path.to_path_buf(), e))
}

/// File names Kubernetes' `GenerateSelfSignedCertKey` callers use inside `--cert-dir`, kept so
/// that an existing volume from the Go adapter is reused as is.
pub const SELF_SIGNED_CERT_NAME: &str = "apiserver.crt";
/// See [`SELF_SIGNED_CERT_NAME`].
pub const SELF_SIGNED_KEY_NAME: &str = "apiserver.key";

/// Makes sure `dir` holds `apiserver.crt` / `apiserver.key`, generating a CA-signed pair if
/// either is missing, and returns a [`TlsServerConfig`] pointing at them.
///
/// Existing files are reused so a restarted pod keeps the certificate a caBundle may pin. The
/// certificate file holds the leaf followed by its throwaway CA (as Kubernetes does), so the
/// file itself can serve as a trust bundle for clients whose verifiers refuse a self-signed leaf.
pub fn ensure_self_signed_cert(
    dir: &Path,
    host: &str,
    alternate_ips: &[IpAddr],
    alternate_dns: &[String],
) -> Result<TlsServerConfig, ServerError> {
    let cert_file = dir.join(SELF_SIGNED_CERT_NAME);
    let key_file = dir.join(SELF_SIGNED_KEY_NAME);
    let config = TlsServerConfig {
        cert_file: cert_file.clone(),
        key_file: key_file.clone(),
        client_ca_file: None,
        client_auth: ClientAuth::None,
    };
    if cert_file.is_file() && key_file.is_file() {
        return Ok(config);
    }
    fs::create_dir_all(dir).map_err(|e| ServerError::Io(dir.to_path_buf(), e))?;
    let (cert_pem, key_pem) = generate_self_signed(host, alternate_ips, alternate_dns)?;
    write_file(&cert_file, cert_pem.as_bytes(), 0o644)?;
    write_file(&key_file, key_pem.as_bytes(), 0o600)?;
    Ok(config)
}

/// Generates a serving certificate for `host` (plus alternate names) signed by a fresh CA.
/// Returns (leaf + CA chain PEM, leaf key PEM).
pub fn generate_self_signed(
    host: &str,
    alternate_ips: &[IpAddr],
    alternate_dns: &[String],
) -> Result<(String, String), ServerError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
    };
    let rc = |e: rcgen::Error| ServerError::Tls(format!("generating self-signed cert: {e}"));
    let now = time_now();

    let ca_key = KeyPair::generate().map_err(rc)?;
    let mut ca_params = CertificateParams::default();
    let mut ca_dn = DistinguishedName::new();
    ca_dn.push(
        DnType::CommonName,
        format!("{host}-ca@{}", now.unix_timestamp()),
    );
    ca_params.distinguished_name = ca_dn;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(1));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    ca_params.not_before = now - time::Duration::hours(1);
    ca_params.not_after = now + time::Duration::days(365);
    let ca_cert = ca_params.self_signed(&ca_key).map_err(rc)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf_key = KeyPair::generate().map_err(rc)?;
    let mut names = Vec::new();
    if let Ok(ip) = host.parse::<IpAddr>() {
        names.push(SanType::IpAddress(ip));
    } else {
        names.push(SanType::DnsName(host.to_string().try_into().map_err(rc)?));
    }
    for ip in alternate_ips {
        names.push(SanType::IpAddress(*ip));
    }
    for dns in alternate_dns {
        names.push(SanType::DnsName(dns.clone().try_into().map_err(rc)?));
    }
    let mut leaf_params = CertificateParams::default();
    let mut leaf_dn = DistinguishedName::new();
    leaf_dn.push(
        DnType::CommonName,
        format!("{host}@{}", now.unix_timestamp()),
    );
    leaf_params.distinguished_name = leaf_dn;
    leaf_params.subject_alt_names = names;
    leaf_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf_params.not_before = now - time::Duration::hours(1);
    leaf_params.not_after = now + time::Duration::days(365);
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).map_err(rc)?;

    Ok((
        format!("{}{}", leaf.pem(), ca_cert.pem()),
        leaf_key.serialize_pem(),
    ))
}

fn time_now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<(), ServerError> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .map_err(|e| ServerError::Io(path.to_path_buf(), e))?;
    file.write_all(data)
        .map_err(|e| ServerError::Io(path.to_path_buf(), e))
}

/// The verified client certificate chain of the connection a request arrived on, leaf first.
///
/// Inserted as a request extension by [`super::serve`] only when the client presented a
/// certificate that the configured verifier accepted; absent for plain HTTP and for TLS
/// connections without a client certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

impl PeerCertificates {
    /// The end-entity certificate.
    pub fn leaf(&self) -> Option<&CertificateDer<'static>> {
        self.0.first()
    }

    /// Subject common name of the leaf.
    pub fn common_name(&self) -> Option<String> {
        self.leaf().and_then(client_common_name)
    }
}

/// Subject CN of a DER certificate; `None` when the certificate does not parse or has no CN,
/// which callers must treat as "not an allowed name" rather than an error to report to clients.
pub fn client_common_name(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let cn = parsed.subject().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_name_of_generated_cert() {
        let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "front-proxy-client");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            client_common_name(cert.der()).as_deref(),
            Some("front-proxy-client")
        );
    }

    #[test]
    fn common_name_of_garbage_is_none() {
        assert_eq!(
            client_common_name(&CertificateDer::from(vec![1, 2, 3])),
            None
        );
        assert_eq!(client_common_name(&CertificateDer::from(Vec::new())), None);
    }

    #[test]
    fn self_signed_is_generated_once_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = ensure_self_signed_cert(
            dir.path(),
            "localhost",
            &["127.0.0.1".parse().unwrap()],
            &["metrics-adapter.svc".to_string()],
        )
        .unwrap();
        assert!(cfg.cert_file.ends_with("apiserver.crt"));
        let first = fs::read(&cfg.cert_file).unwrap();
        assert_eq!(read_certs(&cfg.cert_file).unwrap().len(), 2);
        cfg.load().unwrap();
        let again = ensure_self_signed_cert(dir.path(), "localhost", &[], &[]).unwrap();
        assert_eq!(again, cfg);
        assert_eq!(
            fs::read(&cfg.cert_file).unwrap(),
            first,
            "reused, not regenerated"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&cfg.key_file).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "key must not be group/world readable");
        }
    }

    #[test]
    fn load_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = TlsServerConfig {
            cert_file: dir.path().join("nope.crt"),
            key_file: dir.path().join("nope.key"),
            client_ca_file: None,
            client_auth: ClientAuth::None,
        };
        let err = missing.load().unwrap_err().to_string();
        assert!(err.contains("nope.crt"), "{err}");

        let empty = dir.path().join("empty.crt");
        fs::write(&empty, "not pem").unwrap();
        let err = read_certs(&empty).unwrap_err().to_string();
        assert!(err.contains("empty.crt"), "{err}");
    }

    #[test]
    fn client_auth_without_ca_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = ensure_self_signed_cert(dir.path(), "localhost", &[], &[]).unwrap();
        cfg.client_auth = ClientAuth::Required;
        assert!(cfg.load().is_err());
    }
}
