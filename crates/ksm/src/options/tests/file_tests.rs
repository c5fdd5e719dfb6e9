//! The `--config` file: its format, how it is laid over the flags, its errors, reloads.

use super::*;

#[test]
fn config_file_in_upstream_format_overrides_flags() {
    // The shape of upstream's server_test.go TestConfigureResourcesAndMetrics.
    let yaml = r#"
"resources":
  "pods": {}
  "services": {}
"metric_allowlist":
  "kube_pod_info": {}
"metric_opt_in_list":
  "kube_pod_status_phase": {}
"labels_allow_list":
  "pods":
    - foo
    - bar
"annotations_allow_list":
  "services":
     - baz
"#;
    let o = with_file(
        &[
            "--resources=configmaps",
            "--metric-allowlist=oldallow",
            "--metric-labels-allowlist=configmaps=[old]",
            "--port=9999",
        ],
        yaml,
    )
    .unwrap();
    assert_eq!(o.resources, s(&["pods", "services"]));
    assert!(o.family_filter.is_included("kube_pod_info", false));
    assert!(!o.family_filter.is_included("oldallow", false));
    // Opted in, but not on the allowlist: allow/deny is checked first.
    assert!(!o.family_filter.is_included("kube_pod_status_phase", true));
    assert_eq!(
        o.family_context("pods").labels,
        KeyAllowlist::Keys(s(&["foo", "bar"]))
    );
    assert_eq!(o.family_context("configmaps").labels, KeyAllowlist::None);
    assert_eq!(
        o.family_context("services").annotations,
        KeyAllowlist::Keys(s(&["baz"]))
    );
    // Keys absent from the file keep the flag's value.
    assert_eq!(o.port, 9999);
}

#[test]
fn config_file_scalars_and_keys() {
    let yaml = "
namespaces: [a, b]
namespaces_denylist: [b]
shard: 1
total_shards: 2
port: 9000
telemetry_port: 9001
host: 127.0.0.1
use_api_server_cache: true
custom_resources_only: false
enable_gzip_encoding: true
object_limit: 10
server_read_timeout: 90s
server_read_header_timeout: 1s
auto-gomemlimit: true
auto-gomemlimit-ratio: 0.5
custom_resource_state_config_file: /crs.yaml
continue_without_custom_resource_state_config_file: true
kubeconfig: /kc
apiserver: https://api
tls_config: /web.yaml
auth_filter: true
";
    let o = with_file(&[], yaml).unwrap();
    assert_eq!(o.namespaces, s(&["a", "b"]));
    assert_eq!(o.field_selector, "metadata.namespace!=b");
    assert_eq!(
        o.sharding,
        ShardingMode::Static(Sharding { shard: 1, total: 2 })
    );
    assert_eq!(o.metrics_address(), "127.0.0.1:9000");
    assert_eq!(o.telemetry_port, 9001);
    assert!(o.use_apiserver_cache && o.enable_gzip_encoding && o.auth_filter);
    assert_eq!(o.object_limit, Some(10));
    assert_eq!(o.timeouts.read, Duration::from_secs(90));
    assert_eq!(o.timeouts.read_header, Duration::from_secs(1));
    assert_eq!(o.timeouts.write, Duration::from_secs(60));
    assert_eq!(
        o.custom_resource_config,
        CustomResourceConfig::File {
            path: "/crs.yaml".into(),
            continue_if_missing: true
        }
    );
    assert_eq!(o.kubeconfig, Some("/kc".into()));
    assert_eq!(o.apiserver.as_deref(), Some("https://api"));
    assert_eq!(o.tls_config, Some("/web.yaml".into()));
}

#[test]
fn config_file_pod_namespace_key_is_namespace() {
    let o = with_file(&[], "pod: ksm-0\nnamespace: monitoring\n").unwrap();
    assert_eq!(
        o.sharding,
        ShardingMode::Auto {
            pod: "ksm-0".into(),
            namespace: "monitoring".into()
        }
    );
}

#[test]
fn config_file_empty_sets_do_not_override_but_empty_namespaces_do() {
    let o = with_file(
        &["--resources=pods", "--namespaces=a"],
        "resources: {}\nnamespaces: []\n",
    )
    .unwrap();
    assert_eq!(o.resources, s(&["pods"]));
    assert!(o.all_namespaces());
    let o = with_file(
        &["--metric-labels-allowlist=pods=[a]"],
        "labels_allow_list: {}\n",
    )
    .unwrap();
    assert_eq!(o.family_context("pods").labels, KeyAllowlist::None);
}

#[test]
fn config_file_sets_may_be_lists_or_null_valued_mappings() {
    let o = with_file(&[], "resources: [pods, nodes]\n").unwrap();
    assert_eq!(o.resources, s(&["nodes", "pods"]));
    let o = with_file(&[], "resources:\n  pods:\n  nodes: {}\n").unwrap();
    assert_eq!(o.resources, s(&["nodes", "pods"]));
}

#[test]
fn config_file_deprecated_crs_key() {
    let o = with_file(&[], "custom_resource_config_file: /old.yaml\n").unwrap();
    assert_eq!(
        o.custom_resource_config,
        CustomResourceConfig::File {
            path: "/old.yaml".into(),
            continue_if_missing: false
        }
    );
    let o = with_file(
        &[],
        "custom_resource_config_file: /old.yaml\ncustom_resource_state_config_file: /new.yaml\n",
    )
    .unwrap();
    assert!(
        matches!(o.custom_resource_config, CustomResourceConfig::File { ref path, .. } if path == std::path::Path::new("/new.yaml"))
    );
    // The flag also beats the deprecated key (upstream applies the alias only when unset).
    let o = with_file(
        &["--custom-resource-state-config-file=/flag.yaml"],
        "custom_resource_config_file: /old.yaml\n",
    )
    .unwrap();
    assert!(
        matches!(o.custom_resource_config, CustomResourceConfig::File { ref path, .. } if path == std::path::Path::new("/flag.yaml"))
    );
}

#[test]
fn config_file_is_strict() {
    let e = with_file(&[], "resources: {pods: {}}\nmetric_allow_list: {}\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("ksm.yaml:2:"), "{e}");
    assert!(e.contains("metric_allow_list"), "{e}");
    let e = with_file(&[], "resources:\n  pods: yes\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("ksm.yaml:"), "{e}");
    let e = with_file(&[], "port: eighty\n").unwrap_err().to_string();
    assert!(e.starts_with("ksm.yaml:1:"), "{e}");
    // Upstream's untagged fields parse and are ignored.
    assert!(with_file(&[], "config: /elsewhere.yaml\nhelp: false\n").is_ok());
}

#[test]
fn config_file_errors_name_file_and_key() {
    let e = with_file(&[], "shard: 3\ntotal_shards: 2\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "ksm.yaml: shard=\"3\": must be at least 0 and less than ksm.yaml: total_shards=2"
    );
    let e = with_file(&["--total-shards=2"], "shard: 3\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "ksm.yaml: shard=\"3\": must be at least 0 and less than --total-shards=2"
    );
    let e = with_file(&[], "resources: {pod: {}}\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("ksm.yaml: resources=\"pod\": resource pod does not exist"),
        "{e}"
    );
    let e = with_file(&[], "server_idle_timeout: 5\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "ksm.yaml: server_idle_timeout=\"5\": invalid duration \"5\": missing unit"
    );
    let e = with_file(&[], "labels_allow_list:\n  pods: ['a*b*']\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "ksm.yaml: labels_allow_list.pods=\"a*b*\": invalid format, only one wildcard per label allowed"
    );
    let e = with_file(&[], "metric_denylist: {'kube_(': {}}\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("ksm.yaml: metric_denylist=\"kube_(\": invalid regular expression"),
        "{e}"
    );
    let e = with_file(&[], "labels_allow_list: {pod: [a]}\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("ksm.yaml: labels_allow_list: resource pod does not exist"),
        "{e}"
    );
}

#[test]
fn config_file_validate_trait() {
    let f = ConfigFile::parse("k.yaml", "server_write_timeout: soon\n").unwrap();
    let e = f.validate().unwrap_err();
    assert_eq!(e.field, "server_write_timeout");
    let f = ConfigFile::parse("k.yaml", "annotations_allow_list: {pods: ['*a*']}\n").unwrap();
    assert_eq!(
        f.validate().unwrap_err().field,
        "annotations_allow_list.pods"
    );
    assert!(ConfigFile::default().validate().is_ok());
}

#[test]
fn reload_merges_over_original_flags() {
    let a = args(&["--resources=pods", "--port=1234"]);
    let load = config_loader(a.clone());
    let first = load("ksm.yaml", b"resources: {nodes: {}}\nport: 9000\n".to_vec()).unwrap();
    assert_eq!(first.resources, s(&["nodes"]));
    assert_eq!(first.port, 9000);
    // The key removed from the file falls back to the flag, not to the previous file value.
    let second = load("ksm.yaml", b"port: 9000\n".to_vec()).unwrap();
    assert_eq!(second.resources, s(&["pods"]));
    let bad = load("ksm.yaml", b"shard: 5\n".to_vec())
        .unwrap_err()
        .to_string();
    assert!(
        bad.starts_with("ksm.yaml: invalid configuration: ksm.yaml: shard=\"5\""),
        "{bad}"
    );
    let bad = load("ksm.yaml", b"nope: 1\n".to_vec())
        .unwrap_err()
        .to_string();
    assert!(bad.starts_with("ksm.yaml:1:"), "{bad}");
    let bad = load("ksm.yaml", vec![0xff]).unwrap_err().to_string();
    assert!(bad.contains("UTF-8"), "{bad}");
}

#[test]
fn load_reads_the_config_file() {
    let dir = std::env::temp_dir().join(format!("ksm-opts-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, "resources: {secrets: {}}\n").unwrap();
    let p = path.display().to_string();
    let o = load(&args(&["--config", &p])).unwrap();
    assert_eq!(o.resources, s(&["secrets"]));
    assert_eq!(o.config_file.as_deref(), Some(path.as_path()));

    std::fs::write(&path, "resources: [\n").unwrap();
    assert!(load(&args(&["--config", &p])).is_err());
    // With --continue-without-config, the flags alone are used.
    let o = load(&args(&[
        "--config",
        &p,
        "--continue-without-config",
        "--resources=pods",
    ]))
    .unwrap();
    assert_eq!(o.resources, s(&["pods"]));

    let missing = dir.join("missing.yaml").display().to_string();
    let e = load(&args(&["--config", &missing]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("missing.yaml") && e.contains("cannot read"),
        "{e}"
    );
    assert!(load(&args(&["--config", &missing, "--continue-without-config"])).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}
