use super::*;
use crate::config::PromDuration;

fn parse(args: &[&str]) -> Args {
    let mut v = vec!["metrics-adapter"];
    v.extend_from_slice(args);
    Args::try_parse_from(v).unwrap()
}

#[test]
fn upstream_defaults() {
    let a = parse(&[]);
    assert_eq!(a.prometheus.url, "https://localhost");
    assert_eq!(a.prometheus.verb, "GET");
    assert_eq!(a.metrics_relist_interval, Duration::from_secs(600));
    assert_eq!(a.max_age().unwrap(), Duration::from_secs(600));
    assert_eq!(a.serving.secure_port, 443);
    assert_eq!(
        a.serving.cert_dir,
        PathBuf::from("apiserver.local.config/certificates")
    );
    assert_eq!(
        a.auth.always_allow_paths,
        vec!["/healthz", "/readyz", "/livez"]
    );
    assert!(a.command.is_none());
}

#[test]
fn the_charts_flags_parse() {
    // charts/ferrocrane/templates/adapter/deployment.yaml
    let a = parse(&[
        "--prometheus-url=http://prometheus-operated.monitoring.svc:9090",
        "--config=/etc/adapter/config.yaml",
        "--secure-port=6443",
        "--cert-dir=/tmp/cert",
        "--tls-cert-file=/var/run/serving-cert/tls.crt",
        "--tls-private-key-file=/var/run/serving-cert/tls.key",
        "--metrics-relist-interval=1m",
        "--metrics-max-age=5m",
        "--log-level=info",
        "--log-format=json",
    ]);
    assert_eq!(a.serving.secure_port, 6443);
    assert_eq!(a.max_age().unwrap(), Duration::from_secs(300));
    a.validate().unwrap();
}

#[test]
fn upstream_flags_parse() {
    let a = parse(&[
        "--prometheus-header=X-Scope-OrgID=tenant-a",
        "--prometheus-header",
        "Authorization=Basic x=y",
        "--prometheus-verb=POST",
        "--prometheus-token-file=/t",
        "--prometheus-ca-file=/ca",
        "--prometheus-client-tls-cert-file=/c",
        "--prometheus-client-tls-key-file=/k",
        "--requestheader-client-ca-file=/rh-ca",
        "--requestheader-allowed-names=front-proxy-client,aggregator",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--authentication-kubeconfig=/a",
        "--authorization-kubeconfig=/z",
        "--lister-kubeconfig=/l",
        "--kubeconfig=/kc",
        "--v=6",
        "--logtostderr",
        "--prometheus-query-timeout=5s",
    ]);
    assert_eq!(
        a.auth.requestheader_allowed_names,
        vec!["front-proxy-client", "aggregator"]
    );
    let cfg = a
        .prometheus
        .client_config(Path::new("/nonexistent"))
        .unwrap();
    assert_eq!(cfg.verb, Verb::Post);
    assert_eq!(
        cfg.headers,
        vec![
            ("X-Scope-OrgID".to_owned(), "tenant-a".to_owned()),
            ("Authorization".to_owned(), "Basic x=y".to_owned())
        ]
    );
    assert_eq!(cfg.timeout, Duration::from_secs(5));
    assert_eq!(cfg.max_response_bytes, Some(512 << 20), "the default cap");
    assert_eq!(cfg.bearer_token_file, Some(PathBuf::from("/t")));
    assert_eq!(cfg.client_key_file, Some(PathBuf::from("/k")));
}

#[test]
fn bad_flags_name_the_flag() {
    let a = parse(&["--metrics-relist-interval=10m", "--metrics-max-age=1m"]);
    let e = a.validate().unwrap_err().to_string();
    assert!(e.contains("--metrics-max-age"), "{e}");
    let a = parse(&["--prometheus-verb=PUT"]);
    assert!(
        a.validate()
            .unwrap_err()
            .to_string()
            .contains("--prometheus-verb")
    );
    let a = parse(&["--prometheus-header==v"]);
    assert!(
        a.validate()
            .unwrap_err()
            .to_string()
            .contains("--prometheus-header")
    );
    let a = parse(&["--prometheus-client-tls-cert-file=/c"]);
    assert!(a.validate().is_err());
    let a = parse(&["--tls-cert-file=/c"]);
    assert!(a.validate().is_err());
    let a = parse(&["--prometheus-max-response-size=huge"]);
    let e = a
        .prometheus
        .client_config(Path::new("/nonexistent"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--prometheus-max-response-size"), "{e}");
    let a = parse(&["--prometheus-max-response-size=0"]);
    let cfg = a.prometheus.client_config(Path::new("/n")).unwrap();
    assert_eq!(cfg.max_response_bytes, None, "0 turns the cap off");
    let e = Args::try_parse_from(["m", "--metrics-relist-interval=10 minutes"]).unwrap_err();
    assert!(e.to_string().contains("metrics-relist-interval"), "{e}");
}

/// The duration flags read Go durations, as upstream's `time.Duration` flags do. What the
/// Prometheus-syntax parser they used before accepted, less days, weeks and years, reads the same.
#[test]
fn duration_flags_are_go_durations() {
    for h in ["", "1h", "25h"] {
        for m in ["", "0m", "5m"] {
            for s in ["", "30s"] {
                for ms in ["", "500ms"] {
                    let text = format!("{h}{m}{s}{ms}");
                    if !text.is_empty() {
                        let before = PromDuration::parse(&text).map(|d| d.0);
                        assert_eq!(parse_duration(&text), before, "{text}");
                    }
                }
            }
        }
    }
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
    assert_eq!(
        parse_duration("1d"),
        Err(r#"time: unknown unit "d" in duration "1d""#.to_owned())
    );
    assert_eq!(
        parse_duration("-1m"),
        Err(r#""-1m" is negative"#.to_owned())
    );
    let a = parse(&["--metrics-relist-interval=1.5m"]);
    assert_eq!(a.metrics_relist_interval, Duration::from_secs(90));
}

#[test]
fn check_config_subcommand() {
    let a = parse(&[
        "check-config",
        "--config",
        "c.yaml",
        "--prometheus-url",
        "http://127.0.0.1:9090",
    ]);
    let Some(Command::CheckConfig(c)) = a.command else {
        panic!("no subcommand");
    };
    assert_eq!(c.config, PathBuf::from("c.yaml"));
    assert_eq!(c.prometheus.url, "http://127.0.0.1:9090");
}

#[test]
fn auth_kubeconfig_with_inline_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("auth.kubeconfig");
    std::fs::write(
        &kc,
        r#"
apiVersion: v1
kind: Config
clusters:
- name: prom
  cluster:
    server: https://ignored
    certificate-authority-data: Q0EtUEVN
users:
- name: u
  user:
    token: s3cret
    client-certificate: certs/client.crt
    client-key: /abs/client.key
contexts:
- name: c
  context: {cluster: prom, user: u}
current-context: c
"#,
    )
    .unwrap();
    let scratch = dir.path().join("scratch");
    let a = parse(&[
        "--prometheus-auth-config",
        kc.to_str().unwrap(),
        "--prometheus-url=https://prom:9090",
    ]);
    let cfg = a.prometheus.client_config(&scratch).unwrap();
    let ca = cfg.ca_file.unwrap();
    assert_eq!(std::fs::read_to_string(ca).unwrap(), "CA-PEM");
    let token = cfg.bearer_token_file.unwrap();
    assert_eq!(std::fs::read_to_string(token).unwrap(), "s3cret");
    assert_eq!(
        cfg.client_cert_file,
        Some(dir.path().join("certs/client.crt"))
    );
    assert_eq!(cfg.client_key_file, Some(PathBuf::from("/abs/client.key")));
    assert_eq!(cfg.url, "https://prom:9090");

    let a = parse(&["--prometheus-auth-config", "/nonexistent/kc"]);
    let e = a
        .prometheus
        .client_config(&scratch)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/kc"), "{e}");
}

#[test]
fn query_layer_flags_reach_the_client() {
    let cfg = parse(&[])
        .prometheus
        .client_config(Path::new("/nonexistent"))
        .unwrap();
    assert_eq!(cfg.series_limit, None);
    assert_eq!(
        cfg.partial_response,
        ferrocrane_core::prometheus::PartialResponse::Deny,
        "complete answers unless asked otherwise"
    );
    let cfg = parse(&[
        "--prometheus-series-limit=5000",
        "--prometheus-partial-response=true",
        "--prometheus-max-get-length=1024",
    ])
    .prometheus
    .client_config(Path::new("/nonexistent"))
    .unwrap();
    assert_eq!(cfg.series_limit, Some(5000));
    assert_eq!(
        cfg.partial_response,
        ferrocrane_core::prometheus::PartialResponse::Allow
    );
    assert_eq!(cfg.max_get_url_len, 1024);
}
