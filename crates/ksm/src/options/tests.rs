use super::*;
use crate::families::KeyAllowlist;
use clap::CommandFactory;

mod file_tests;

fn args(flags: &[&str]) -> Args {
    let mut argv = vec!["ksm"];
    argv.extend_from_slice(flags);
    Args::try_parse_from(argv).expect("flags parse")
}

fn opts(flags: &[&str]) -> Options {
    resolve(&args(flags)).expect("valid options")
}

fn err(flags: &[&str]) -> String {
    resolve(&args(flags)).unwrap_err().to_string()
}

fn with_file(flags: &[&str], yaml: &str) -> Result<Options, OptionsError> {
    let file = ConfigFile::parse("ksm.yaml", yaml)?;
    resolve_with_config(&args(flags), "ksm.yaml", &file)
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn clap_definition_is_consistent() {
    Args::command().debug_assert();
}

#[test]
fn resource_constants_are_sorted_and_consistent() {
    assert!(DEFAULT_RESOURCES.windows(2).all(|w| w[0] < w[1]));
    assert!(OPTIONAL_RESOURCES.windows(2).all(|w| w[0] < w[1]));
    assert!(ALL_RESOURCES.windows(2).all(|w| w[0] < w[1]));
    let mut union: Vec<&str> = DEFAULT_RESOURCES
        .iter()
        .chain(OPTIONAL_RESOURCES.iter())
        .copied()
        .collect();
    union.sort();
    assert_eq!(union, ALL_RESOURCES);
}

#[test]
fn defaults_match_upstream() {
    let o = opts(&[]);
    assert_eq!(o.resources, DEFAULT_RESOURCES.map(String::from).to_vec());
    assert!(o.all_namespaces());
    assert_eq!(o.field_selector, "");
    assert_eq!(o.sharding, ShardingMode::Static(Sharding::NONE));
    assert_eq!(o.host, "::");
    assert_eq!(o.port, 8080);
    assert_eq!(o.telemetry_host, "::");
    assert_eq!(o.telemetry_port, 8081);
    assert_eq!(o.metrics_address(), "[::]:8080");
    assert_eq!(o.telemetry_address(), "[::]:8081");
    assert_eq!(
        o.timeouts,
        ServerTimeouts {
            read: Duration::from_secs(60),
            write: Duration::from_secs(60),
            idle: Duration::from_secs(300),
            read_header: Duration::from_secs(5),
        }
    );
    assert_eq!(o.object_limit, None);
    assert_eq!(o.custom_resource_config, CustomResourceConfig::None);
    assert!(!o.enable_gzip_encoding && !o.use_apiserver_cache && !o.auth_filter);
    assert!(o.family_filter.is_included("kube_pod_info", false));
    assert!(!o.family_filter.is_included("kube_pod_tolerations", true));
    assert_eq!(o.family_context("pods").labels, KeyAllowlist::None);
    assert_eq!(o.config_file, None);
    assert_eq!(o.log.log_level, "info");
    let a = args(&[]);
    assert_eq!(a.auto_gomemlimit_ratio, 0.9);
    assert!(!a.auto_gomemlimit);
}

#[test]
fn every_upstream_flag_is_accepted() {
    let o = opts(&[
        "--resources=pods,configmaps",
        "--namespaces=default,kube-system",
        "--namespaces-denylist=kube-system",
        "--metric-denylist=kube_pod_labels",
        "--metric-opt-in-list=kube_pod_tolerations",
        "--metric-labels-allowlist=pods=[app]",
        "--metric-annotations-allowlist=pods=[team]",
        "--shard=1",
        "--total-shards=3",
        "--custom-resource-state-config-file=/etc/crs.yaml",
        "--continue-without-custom-resource-state-config-file",
        "--custom-resource-state-only=false",
        "--continue-without-config",
        "--host=0.0.0.0",
        "--port=9090",
        "--telemetry-host=127.0.0.1",
        "--telemetry-port=9091",
        "--tls-config=/etc/web.yaml",
        "--enable-gzip-encoding",
        "--use-apiserver-cache=true",
        "--object-limit=500",
        "--kubeconfig=/root/.kube/config",
        "--apiserver=https://10.0.0.1:6443",
        "--auth-filter=1",
        "--server-read-timeout=30s",
        "--server-write-timeout=1m30s",
        "--server-idle-timeout=10m",
        "--server-read-header-timeout=2.5s",
        "--auto-gomemlimit",
        "--auto-gomemlimit-ratio=0.8",
        "--log-level=debug",
        "--log-format=json",
    ]);
    assert_eq!(o.resources, s(&["configmaps", "pods"]));
    assert_eq!(o.namespaces, s(&["default", "kube-system"]));
    assert_eq!(o.field_selector, "metadata.namespace!=kube-system");
    assert_eq!(
        o.sharding,
        ShardingMode::Static(Sharding { shard: 1, total: 3 })
    );
    assert_eq!(
        o.custom_resource_config,
        CustomResourceConfig::File {
            path: "/etc/crs.yaml".into(),
            continue_if_missing: true
        }
    );
    assert_eq!(o.metrics_address(), "0.0.0.0:9090");
    assert_eq!(o.telemetry_address(), "127.0.0.1:9091");
    assert_eq!(o.tls_config, Some("/etc/web.yaml".into()));
    assert!(o.enable_gzip_encoding && o.use_apiserver_cache && o.auth_filter);
    assert!(o.continue_without_config);
    assert_eq!(o.object_limit, Some(500));
    assert_eq!(o.kubeconfig, Some("/root/.kube/config".into()));
    assert_eq!(o.apiserver.as_deref(), Some("https://10.0.0.1:6443"));
    assert_eq!(o.timeouts.read, Duration::from_secs(30));
    assert_eq!(o.timeouts.write, Duration::from_secs(90));
    assert_eq!(o.timeouts.idle, Duration::from_secs(600));
    assert_eq!(o.timeouts.read_header, Duration::from_millis(2500));
    assert!(!o.family_filter.is_included("kube_pod_labels", false));
    assert!(o.family_filter.is_included("kube_pod_tolerations", true));
    assert_eq!(
        o.family_context("pods").labels,
        KeyAllowlist::Keys(s(&["app"]))
    );
    assert_eq!(
        o.family_context("pods").annotations,
        KeyAllowlist::Keys(s(&["team"]))
    );
}

#[test]
fn help_and_version_exist() {
    let e = Args::try_parse_from(["ksm", "--version"]).unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
    let help = Args::command().render_long_help().to_string();
    for flag in [
        "--resources",
        "--namespaces-denylist",
        "--metric-opt-in-list",
        "--metric-labels-allowlist",
        "--pod-namespace",
        "--track-unscheduled-pods",
        "--custom-resource-state-config-file",
        "--continue-without-custom-resource-state-config-file",
        "--server-read-header-timeout",
        "--auto-gomemlimit-ratio",
        "--log-format",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn unknown_flag_is_rejected() {
    assert!(Args::try_parse_from(["ksm", "--foo=bar,baz"]).is_err());
}

#[test]
fn go_style_booleans() {
    assert!(args(&["--enable-gzip-encoding"]).enable_gzip_encoding);
    assert!(args(&["--enable-gzip-encoding=True"]).enable_gzip_encoding);
    assert!(!args(&["--enable-gzip-encoding=false"]).enable_gzip_encoding);
    assert!(!args(&["--enable-gzip-encoding=0"]).enable_gzip_encoding);
    let e = Args::try_parse_from(["ksm", "--auth-filter=yes"]).unwrap_err();
    assert!(e.to_string().contains("--auth-filter"), "{e}");
    // The last occurrence wins, as with pflag.
    assert!(!args(&["--auth-filter", "--auth-filter=false"]).auth_filter);
    assert_eq!(args(&["--port=1", "--port=2"]).port, 2);
}

#[test]
fn list_flags_split_trim_and_accumulate() {
    let o = opts(&[
        "--resources= pods , nodes,,",
        "--resources=pods,secrets",
        "--namespaces=b,a",
        "--namespaces=b",
    ]);
    assert_eq!(o.resources, s(&["nodes", "pods", "secrets"]));
    assert_eq!(o.namespaces, s(&["b", "a"]));
    assert!(opts(&["--namespaces="]).all_namespaces());
    assert!(opts(&["--resources="]).resources.len() == DEFAULT_RESOURCES.len());
}

#[test]
fn unknown_resource_lists_valid_ones() {
    let e = err(&["--resources=pods,pod"]);
    assert!(
        e.starts_with("--resources=\"pod,pods\": resource pod does not exist. Available resources: certificatesigningrequests,clusterrolebindings,"),
        "{e}"
    );
    assert!(e.ends_with("volumeattachments"), "{e}");
    // Optional resources are valid.
    assert_eq!(
        opts(&["--resources=roles,endpoints"]).resources,
        s(&["endpoints", "roles"])
    );
}

#[test]
fn custom_resource_state_only_disables_builtin_resources() {
    let o = opts(&["--custom-resource-state-only", "--resources=pods"]);
    assert!(o.resources.is_empty());
    assert!(o.custom_resource_state_only);
}

#[test]
fn inline_custom_resource_config_wins_over_file() {
    let o = opts(&[
        "--custom-resource-state-config=kind: CustomResourceStateMetrics",
        "--custom-resource-state-config-file=/x.yaml",
    ]);
    assert_eq!(
        o.custom_resource_config,
        CustomResourceConfig::Inline("kind: CustomResourceStateMetrics".into())
    );
}

#[test]
fn allowlist_and_denylist_are_exclusive() {
    let e = err(&["--metric-allowlist=a", "--metric-denylist=b"]);
    assert!(e.contains("allowlist and denylist are both set"), "{e}");
    assert!(
        e.contains("--metric-allowlist and --metric-denylist"),
        "{e}"
    );
}

#[test]
fn bad_metric_regex_names_flag() {
    let e = err(&["--metric-opt-in-list=kube_(x"]);
    assert!(
        e.starts_with("--metric-opt-in-list=\"kube_(x\": invalid regular expression"),
        "{e}"
    );
}

#[test]
fn sharding_flags_are_validated() {
    assert_eq!(
        err(&["--shard=2", "--total-shards=2"]),
        "--shard=\"2\": must be at least 0 and less than --total-shards=2"
    );
    assert_eq!(
        err(&["--shard=-1", "--total-shards=2"]),
        "--shard=\"-1\": must be at least 0 and less than --total-shards=2"
    );
    assert_eq!(
        err(&["--total-shards=0"]),
        "--total-shards=\"0\": must be at least 1"
    );
    assert_eq!(
        opts(&["--shard=1", "--total-shards=2"]).sharding,
        ShardingMode::Static(Sharding { shard: 1, total: 2 })
    );
}

#[test]
fn auto_sharding_needs_pod_and_namespace() {
    assert_eq!(
        opts(&["--pod=ksm-1", "--pod-namespace=monitoring"]).sharding,
        ShardingMode::Auto {
            pod: "ksm-1".into(),
            namespace: "monitoring".into()
        }
    );
    assert_eq!(
        err(&["--pod=ksm-1"]),
        "--pod=\"ksm-1\": auto-sharding needs --pod-namespace as well"
    );
    assert_eq!(
        err(&["--pod-namespace=monitoring"]),
        "--pod-namespace=\"monitoring\": auto-sharding needs --pod as well"
    );
}

#[test]
fn object_limit_must_not_be_negative() {
    assert_eq!(
        err(&["--object-limit=-1"]),
        "--object-limit=\"-1\": must be 0 (no limit) or more"
    );
}

#[test]
fn node_sharding_only_for_pods() {
    let o = opts(&["--node=n1", "--resources=pods", "--namespaces-denylist=a,b"]);
    assert_eq!(o.node.as_deref(), Some("n1"));
    assert_eq!(
        o.field_selector,
        "metadata.namespace!=a,metadata.namespace!=b,spec.nodeName=n1"
    );
    let e = err(&["--node=n1", "--resources=pods,nodes"]);
    assert_eq!(
        e,
        "--node=\"n1\": resource nodes can't be sharded by field selector spec.nodeName; set --resources=pods"
    );
    // Upstream skips the check without --resources and then every non-pod watch fails.
    assert!(err(&["--node=n1"]).contains("can't be sharded"));
    let o = opts(&["--track-unscheduled-pods", "--resources=pods", "--node=n1"]);
    assert_eq!(o.field_selector, "spec.nodeName=");
    assert_eq!(o.pod_field_selector().as_deref(), Some("spec.nodeName="));
    let o = opts(&["--track-unscheduled-pods", "--resources=pods"]);
    assert_eq!(o.pod_field_selector().as_deref(), Some("spec.nodeName="));
    let o = opts(&["--node=a,b", "--resources=pods"]);
    assert_eq!(
        o.pod_field_selector().as_deref(),
        Some("spec.nodeName=a\\,b")
    );
    assert_eq!(opts(&["--resources=pods"]).pod_field_selector(), None);
    assert!(err(&["--track-unscheduled-pods"]).starts_with("--track-unscheduled-pods=\"true\""));
}

#[test]
fn field_selector_helpers() {
    assert_eq!(namespace_denylist_field_selector(&[]), "");
    assert_eq!(
        namespace_denylist_field_selector(&s(&["case1", "case2"])),
        "metadata.namespace!=case1,metadata.namespace!=case2"
    );
    assert_eq!(
        namespace_denylist_field_selector(&s(&["a,b=c\\"])),
        "metadata.namespace!=a\\,b\\=c\\\\"
    );
    assert_eq!(node_field_selector(""), "");
    assert_eq!(node_field_selector("n"), "spec.nodeName=n");
    assert_eq!(merge_field_selectors(&["", "x=1", "", "y!=2"]), "x=1,y!=2");
    assert_eq!(merge_field_selectors(&["", ""]), "");
}

#[test]
fn labels_allowlist_syntax_like_upstream() {
    let ok = |v: &str| parse_labels_allowlist(v).unwrap();
    let map = |e: &[(&str, &[&str])]| -> LabelsAllowList {
        e.iter().map(|(k, v)| (k.to_string(), s(v))).collect()
    };
    // Upstream types_test.go TestLabelsAllowListSet.
    assert_eq!(ok(""), LabelsAllowList::new());
    assert_eq!(
        ok("cronjobs=[somelabel.io,label2/blah]"),
        map(&[("cronjobs", &["somelabel.io", "label2/blah"])])
    );
    assert_eq!(
        ok("pods=[podsone,pods-two],nodes=[nodesone,nodestwo],namespaces=[nsone,nstwo]"),
        map(&[
            ("pods", &["podsone", "pods-two"]),
            ("nodes", &["nodesone", "nodestwo"]),
            ("namespaces", &["nsone", "nstwo"]),
        ])
    );
    assert_eq!(
        ok("cronjobs=[somelabel,label2],pods=[]"),
        map(&[("cronjobs", &["somelabel", "label2"]), ("pods", &[])])
    );
    assert_eq!(
        ok("cronjobs=[*],pods=[*,foo],namespaces=[bar,*]"),
        map(&[
            ("cronjobs", &["*"]),
            ("pods", &["*", "foo"]),
            ("namespaces", &["bar", "*"]),
        ])
    );
    assert_eq!(ok("*=[*]"), map(&[("*", &["*"])]));
    assert_eq!(ok("*=[somelabel/*]"), map(&[("*", &["somelabel/*"])]));
    assert_eq!(
        ok(" pods=[ a , b ], nodes=[c]"),
        map(&[("pods", &["a", "b"]), ("nodes", &["c"])])
    );
    assert_eq!(ok("pods=[a],pods=[b]"), map(&[("pods", &["b"])]));
    for bad in [
        "cronjobs=[somelabel,label2] cronjobs=[label3,label4]",
        "cronjobs=[somelabel,label2],cronjobs=label3,label4]",
        "cronjobs=[somelabel,label2]cronjobs=[label3,label4]",
        "cronjobs[somelabel,label2]cronjobs=[label3,label4]",
        "pods=[a,,b]",
        "pods=[a,]",
        "pods=[a],",
        ",pods=[a]",
        "pods=[a",
        "pods=[a],nodes",
        "pods = [a]",
        "=[a]",
    ] {
        assert_eq!(
            parse_labels_allowlist(bad),
            Err(ALLOWLIST_FORMAT.to_owned()),
            "{bad}"
        );
    }
    assert_eq!(
        parse_labels_allowlist("*=[somelabel/*-foo-*]"),
        Err(ALLOWLIST_WILDCARDS.to_owned())
    );
}

#[test]
fn labels_allowlist_flag_errors_and_resolution() {
    let e = err(&["--metric-labels-allowlist=pods=app"]);
    assert_eq!(
        e,
        "--metric-labels-allowlist=\"pods=app\": invalid format, metric=[label1,label2,labeln...],metricN=[]"
    );
    let e = err(&["--metric-annotations-allowlist=pod=[app]"]);
    assert!(
        e.starts_with("--metric-annotations-allowlist: resource pod does not exist."),
        "{e}"
    );
    // `*` resource expands to the enabled resources only.
    let o = opts(&[
        "--resources=pods,deployments",
        "--metric-labels-allowlist=*=[*],nodes=[x]",
    ]);
    assert_eq!(o.family_context("pods").labels, KeyAllowlist::All);
    assert_eq!(o.family_context("deployments").labels, KeyAllowlist::All);
    assert_eq!(o.family_context("nodes").labels, KeyAllowlist::None);
    // Repeated flag: last wins (pflag replaces the map).
    let o = opts(&[
        "--metric-labels-allowlist=pods=[a]",
        "--metric-labels-allowlist=nodes=[b]",
    ]);
    assert_eq!(o.family_context("pods").labels, KeyAllowlist::None);
    assert_eq!(
        o.family_context("nodes").labels,
        KeyAllowlist::Keys(s(&["b"]))
    );
}

#[test]
fn go_durations() {
    let d = |v: &str| parse_go_duration(v).unwrap();
    assert_eq!(d("0"), Duration::ZERO);
    assert_eq!(d("5s"), Duration::from_secs(5));
    assert_eq!(d("1m0s"), Duration::from_secs(60));
    assert_eq!(d("1h2m3s"), Duration::from_secs(3723));
    assert_eq!(d("1.5h"), Duration::from_secs(5400));
    assert_eq!(d("300ms"), Duration::from_millis(300));
    assert_eq!(d(".5s"), Duration::from_millis(500));
    assert_eq!(d("1us"), Duration::from_micros(1));
    assert_eq!(d("1µs"), Duration::from_micros(1));
    assert_eq!(d("7ns"), Duration::from_nanos(7));
    assert_eq!(d("+2s"), Duration::from_secs(2));
    assert_eq!(d("-5s"), Duration::ZERO);
    for bad in [
        "",
        "5",
        "s",
        "1x",
        "1.s5",
        ".s",
        "-",
        "1h1",
        "99999999999999999999h",
    ] {
        assert!(parse_go_duration(bad).is_err(), "{bad:?}");
    }
    let e = Args::try_parse_from(["ksm", "--server-read-timeout=60"]).unwrap_err();
    assert!(e.to_string().contains("missing unit"), "{e}");
}

#[test]
fn go_bools() {
    for t in ["1", "t", "T", "TRUE", "true", "True"] {
        assert_eq!(parse_go_bool(t), Ok(true));
    }
    for f in ["0", "f", "F", "FALSE", "false", "False"] {
        assert_eq!(parse_go_bool(f), Ok(false));
    }
    assert!(parse_go_bool("yes").is_err());
}

#[test]
fn join_host_port_like_go() {
    assert_eq!(join_host_port("::", 8080), "[::]:8080");
    assert_eq!(join_host_port("0.0.0.0", 1), "0.0.0.0:1");
    assert_eq!(join_host_port("", 8080), ":8080");
}

// ---- config file --------------------------------------------------------------------------

#[test]
fn namespace_field_selector_only_with_a_denylist() {
    assert_eq!(opts(&[]).namespace_field_selector(), None);
    assert_eq!(
        opts(&["--namespaces-denylist=a"])
            .namespace_field_selector()
            .as_deref(),
        Some("metadata.namespace!=a")
    );
}

#[test]
fn reload_reports_settings_that_need_a_restart() {
    let before = opts(&["--port=8080"]);
    let after = with_file(&["--port=8080"], "port: 9090\nresources: {pods: {}}\n").expect("valid");
    assert_eq!(before.restart_required_changes(&after), ["port"]);
    let same = with_file(&[], "resources: {pods: {}}\nmetric_denylist: {x: {}}\n").expect("valid");
    assert!(before.restart_required_changes(&same).is_empty());
}

#[test]
fn server_timeout_defaults_are_upstreams() {
    assert_eq!(opts(&[]).timeouts, ServerTimeouts::DEFAULTS);
    assert_ne!(
        opts(&["--server-write-timeout=2m"]).timeouts,
        ServerTimeouts::DEFAULTS
    );
}

#[test]
fn server_timeouts_reach_the_server_as_go_reads_them() {
    let serve = |flags: &[&str]| opts(flags).timeouts.serve_options();
    let d = serve(&[]);
    // Read-header 5s beats idle 5m; write 1m.
    assert_eq!(d.header_read_timeout, Some(Duration::from_secs(5)));
    assert_eq!(d.write_timeout, Some(Duration::from_secs(60)));
    let s = serve(&["--server-idle-timeout=2s", "--server-write-timeout=0s"]);
    assert_eq!(s.header_read_timeout, Some(Duration::from_secs(2)));
    assert_eq!(s.write_timeout, None);
    // Zero read-header and idle fall back to the read timeout; all zero is no limit.
    let s = serve(&[
        "--server-read-header-timeout=0s",
        "--server-idle-timeout=0s",
    ]);
    assert_eq!(s.header_read_timeout, Some(Duration::from_secs(60)));
    let s = serve(&[
        "--server-read-header-timeout=0s",
        "--server-idle-timeout=0s",
        "--server-read-timeout=0s",
    ]);
    assert_eq!(s.header_read_timeout, None);
}

#[test]
fn server_side_sharding_is_opt_in_and_static_only() {
    assert!(!opts(&[]).server_side_sharding);
    let o = opts(&["--shard=1", "--total-shards=3", "--server-side-sharding"]);
    assert!(o.server_side_sharding);
    assert_eq!(
        o.sharding,
        ShardingMode::Static(Sharding { shard: 1, total: 3 })
    );
    assert!(!opts(&["--server-side-sharding=false"]).server_side_sharding);
    let e = err(&[
        "--pod=ksm-1",
        "--pod-namespace=monitoring",
        "--server-side-sharding",
    ]);
    assert!(
        e.starts_with("--server-side-sharding") && e.contains("auto-sharding"),
        "{e}"
    );
    let from_file = with_file(&[], "server_side_sharding: true\n").expect("config file");
    assert!(from_file.server_side_sharding);
}

#[test]
fn klogs_common_flags_are_accepted_and_the_rest_refused() {
    // Upstream's standard manifests pass `--v=2` and sometimes `--logtostderr`.
    let a = Args::try_parse_from(["ksm", "--v=2", "--logtostderr"]).unwrap();
    assert_eq!(a.log.klog_v.as_deref(), Some("2"));
    let e = Args::try_parse_from(["ksm", "--log_file=/tmp/x"]).unwrap_err();
    assert!(e.to_string().contains("--log_file"), "{e}");
}
