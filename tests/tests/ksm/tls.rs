//! `--tls-config` against the real control plane: both listeners serve HTTPS with the
//! configured certificate, and with `RequireAndVerifyClientCert` a client without a
//! certificate signed by the client CA is refused. Certificates are made with the openssl
//! CLI and requests sent with curl, so nothing of ksm's own TLS code is on the client side.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::{Cluster, ServiceProcess, two_ports, wait_until};

use ferrocrane_e2e::ksm::temp_dir;

fn run(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA.
fn make_certs(dir: &Path) -> Result<()> {
    let d = |f: &str| dir.join(f).display().to_string();
    run(Command::new("openssl").args([
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=e2e-ca",
        "-keyout",
        &d("ca.key"),
        "-out",
        &d("ca.crt"),
    ]))?;
    for (name, ext) in [
        (
            "server",
            "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        ),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ] {
        std::fs::write(dir.join(format!("{name}.ext")), ext)?;
        run(Command::new("openssl").args([
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            &format!("/CN=e2e-{name}"),
            "-keyout",
            &d(&format!("{name}.key")),
            "-out",
            &d(&format!("{name}.csr")),
        ]))?;
        run(Command::new("openssl").args([
            "x509",
            "-req",
            "-in",
            &d(&format!("{name}.csr")),
            "-CA",
            &d("ca.crt"),
            "-CAkey",
            &d("ca.key"),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &d(&format!("{name}.ext")),
            "-out",
            &d(&format!("{name}.crt")),
        ]))?;
    }
    Ok(())
}

/// The web config's basic auth user, as curl's `--user`.
const USER: &str = "prometheus:scrape-s3cret";

/// curl over HTTPS trusting only the test CA; `client` adds the client certificate and the
/// basic auth credentials.
fn curl(dir: &Path, url: &str, client: bool) -> Result<String> {
    curl_with(dir, url, client, client)
}

fn curl_with(dir: &Path, url: &str, client_cert: bool, basic_auth: bool) -> Result<String> {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--fail", "--max-time", "10", "--cacert"])
        .arg(dir.join("ca.crt"));
    if basic_auth {
        cmd.args(["--user", USER]);
    }
    if client_cert {
        cmd.arg("--cert")
            .arg(dir.join("client.crt"))
            .arg("--key")
            .arg(dir.join("client.key"));
    }
    run(cmd.arg(url))
}

#[tokio::test]
async fn metrics_and_telemetry_over_https_with_client_certificates() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("ksm-tls").await?;
    let dir = temp_dir()?;
    make_certs(&dir)?;
    // Relative paths are resolved against the web config's directory.
    let (user, password) = USER.split_once(':').unwrap_or_default();
    let hash = bcrypt::hash(password, 4)?;
    std::fs::write(
        dir.join("web.yaml"),
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n\
             basic_auth_users:\n  {user}: '{hash}'\n"
        ),
    )?;
    let (port, telemetry_port) = two_ports()?;
    let mut ksm = ServiceProcess::start(
        "ksm",
        &[
            format!("--kubeconfig={}", cluster.kubeconfig()?.display()),
            "--host=127.0.0.1".to_string(),
            format!("--port={port}"),
            "--telemetry-host=127.0.0.1".to_string(),
            format!("--telemetry-port={telemetry_port}"),
            "--resources=namespaces".to_string(),
            format!("--tls-config={}", dir.join("web.yaml").display()),
        ],
    )?;
    let ready = format!("https://127.0.0.1:{telemetry_port}/readyz");
    let dir_for_wait = dir.clone();
    wait_until("ksm ready over HTTPS", Duration::from_secs(60), || {
        let ready = ready.clone();
        let dir = dir_for_wait.clone();
        async move { Ok(curl(&dir, &ready, true).ok().map(|_| ())) }
    })
    .await
    .with_context(|| ksm.logs())?;
    ksm.ensure_running()?;

    let body = curl(&dir, &format!("https://127.0.0.1:{port}/metrics"), true)?;
    assert!(
        body.contains(&format!(
            "kube_namespace_created{{namespace=\"{}\"}}",
            ns.name
        )),
        "{body}"
    );
    let telemetry = curl(
        &dir,
        &format!("https://127.0.0.1:{telemetry_port}/metrics"),
        true,
    )?;
    assert!(
        telemetry.contains("kube_state_metrics_total_shards 1"),
        "{telemetry}"
    );

    // No client certificate: the handshake is refused on both listeners.
    for url in [
        format!("https://127.0.0.1:{port}/metrics"),
        format!("https://127.0.0.1:{telemetry_port}/metrics"),
    ] {
        assert!(
            curl(&dir, &url, false).is_err(),
            "{url} served without a client cert"
        );
    }
    // A client certificate without the basic auth password gets 401 on both listeners.
    for url in [
        format!("https://127.0.0.1:{port}/metrics"),
        format!("https://127.0.0.1:{telemetry_port}/readyz"),
    ] {
        let e = curl_with(&dir, &url, true, false)
            .err()
            .with_context(|| format!("{url} served without basic auth"))?;
        assert!(format!("{e:#}").contains("401"), "{url}: {e:#}");
    }
    // Plain HTTP is not served.
    let plain = Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "5"])
        .arg(format!("http://127.0.0.1:{port}/metrics"))
        .output()?;
    assert!(!plain.status.success(), "plain HTTP answered");
    Ok(())
}

#[tokio::test]
async fn a_bad_tls_config_stops_startup_naming_the_key() -> Result<()> {
    let cluster = Cluster::get()?;
    let dir = temp_dir()?;
    std::fs::write(
        dir.join("web.yaml"),
        "tls_server_config:\n  cert_file: server.crt\n",
    )?;
    let (port, telemetry_port) = two_ports()?;
    let out = Command::new(ferrocrane_e2e::binary("ksm")?)
        .args([
            format!("--kubeconfig={}", cluster.kubeconfig()?.display()),
            "--host=127.0.0.1".to_string(),
            format!("--port={port}"),
            "--telemetry-host=127.0.0.1".to_string(),
            format!("--telemetry-port={telemetry_port}"),
            format!("--tls-config={}", dir.join("web.yaml").display()),
        ])
        .output()?;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("web.yaml") && stderr.contains("tls_server_config.key_file"),
        "{stderr}"
    );
    Ok(())
}
