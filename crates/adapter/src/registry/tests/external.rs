//! External registry tests, and the default config from rules to queries end to end.

use super::*;

const EXTERNAL: &str = r#"
externalRules:
- seriesQuery: '{__name__=~"^queue_.*"}'
  resources: {overrides: {namespace: {resource: namespace}}}
  name: {matches: "^queue_(.*)$", as: "${1}_depth"}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
- seriesQuery: 'kube_pod_status_phase'
  resources: {namespaced: false}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>})
"#;

#[test]
fn external_registry() {
    let cfg = parse_str("t.yaml", EXTERNAL).unwrap().compile().unwrap();
    let mut r = ExternalRegistry::new(cfg.external_rules);
    let rep = r
        .update(vec![
            Ok::<_, String>(vec![
                s("queue_jobs", &[("namespace", "a")]),
                s("queue_jobs", &[("namespace", "b")]),
                s("queue_mails", &[]),
            ]),
            Ok(vec![s("kube_pod_status_phase", &[("phase", "Pending")])]),
        ])
        .unwrap();
    assert_eq!(rep.metrics, 3);
    let listed: Vec<&str> = r
        .list_external_metrics()
        .iter()
        .map(|i| i.metric.as_str())
        .collect();
    assert_eq!(
        listed,
        ["jobs_depth", "kube_pod_status_phase", "mails_depth"]
    );
    let sel = parse_label_selector("queue in (high,low)").unwrap();
    assert_eq!(
        r.query_for(Some("default"), "jobs_depth", &sel).unwrap(),
        r#"sum(queue_jobs{queue=~"high|low",namespace="default"}) by ()"#
    );
    // not namespaced: the request namespace is ignored
    let sel = parse_label_selector("phase=Pending").unwrap();
    assert_eq!(
        r.query_for(Some("default"), "kube_pod_status_phase", &sel)
            .unwrap(),
        r#"sum(kube_pod_status_phase{phase="Pending"})"#
    );
    assert_eq!(
        r.query_for(Some("default"), "nope", &[]).unwrap_err(),
        RegistryError::NotFound {
            metric: "nope".into(),
            resource: String::new()
        }
    );
    // a failed rule keeps its entries
    r.update(vec![Err::<Vec<Series>, _>("down"), Ok(vec![])])
        .unwrap();
    let listed: Vec<&str> = r
        .list_external_metrics()
        .iter()
        .map(|i| i.metric.as_str())
        .collect();
    assert_eq!(listed, ["jobs_depth", "mails_depth"]);
    assert!(r.is_ready());
}

#[test]
fn default_config_end_to_end() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/adapter/default-config.yaml"
    );
    let cfg = crate::loader::load(path).unwrap().compile().unwrap();
    let m = mapper();
    let pod = [("namespace", "web"), ("pod", "web-0"), ("container", "app")];
    let mut r = CustomRegistry::new(cfg.rules);
    r.update(
        &m,
        vec![
            Ok::<_, String>(vec![s("container_cpu_usage_seconds_total", &pod)]),
            Ok(vec![s("container_memory_working_set_bytes", &pod)]),
            Ok(vec![s(
                "kube_deployment_status_replicas_available",
                &[("namespace", "web"), ("deployment", "web")],
            )]),
        ],
    )
    .unwrap();
    let q = r
        .query_for(
            &info("", "pods", true, "cpu_usage"),
            Some("web"),
            &names(&["web-0", "web-1"]),
            &[],
        )
        .unwrap();
    assert_eq!(
        q.query,
        r#"sum(rate(container_cpu_usage_seconds_total{namespace="web",pod=~"web-0|web-1",container!="",container!="POD"}[2m])) by (pod)"#
    );
    let q = r
        .query_for(
            &info(
                "apps",
                "deployments",
                true,
                "kube_deployment_status_replicas_available",
            ),
            Some("web"),
            &names(&["web"]),
            &[],
        )
        .unwrap();
    assert_eq!(
        q.query,
        r#"max(kube_deployment_status_replicas_available{namespace="web",deployment="web"}) by (deployment)"#
    );
    let mut ext = ExternalRegistry::new(cfg.external_rules);
    ext.update(vec![Ok::<_, String>(vec![s(
        "kube_pod_status_phase",
        &[("namespace", "web")],
    )])])
    .unwrap();
    let sel = parse_label_selector("phase=Pending").unwrap();
    assert_eq!(
        ext.query_for(Some("web"), "kube_pod_status_phase", &sel)
            .unwrap(),
        r#"sum(kube_pod_status_phase{phase="Pending",namespace="web"})"#
    );
    let rr = cfg.resource_rules.unwrap();
    assert_eq!(
        rr.memory.node_query_for(&m, &names(&["n1"])).unwrap(),
        "sum by (node) (\n  node_memory_working_set_bytes{node=\"n1\"}\n)\n"
    );
    assert_eq!(
        rr.cpu
            .container_query_for(&m, "web", &names(&["web-0"]))
            .unwrap(),
        "sum by (pod,container) (\n  irate (\n      container_cpu_usage_seconds_total{namespace=\"web\",pod=\"web-0\",container!=\"\",pod!=\"\"}[4m]\n  )\n)\n"
    );
}
