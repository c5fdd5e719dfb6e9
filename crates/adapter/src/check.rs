//! `metrics-adapter check-config`: what a config discovers against a real Prometheus, and the
//! exact query behind each metric. Answers upstream users' most common question — "why does
//! the API return no metrics?" — rule by rule.

use std::fmt::Write as _;
use std::sync::RwLock;

use anyhow::{Context, bail};
use ferrocrane_core::kube::{ClientArgs, ResourceMapper, SharedMapper, build_client};
use ferrocrane_core::prometheus::PrometheusClient;

use crate::loader::CompiledConfig;
use crate::naming::{GroupResource, Namer};
use crate::options::CheckArgs;
use crate::registry::{CustomRegistry, ExternalRegistry};
use crate::relist::{Registries, fetch_series, relist_once};

/// Runs the check, printing the report to stdout. Errors (bad config, Prometheus unreachable)
/// are returned for the binary to print and exit non-zero.
pub async fn run(args: CheckArgs) -> anyhow::Result<()> {
    // ConfigError's text already carries its cause; keep the one-line message.
    let cfg = crate::loader::load(&args.config).map_err(|e| anyhow::anyhow!("{e}"))?;
    let compiled = cfg
        .compile()
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.config.display()))?;
    let scratch =
        std::env::temp_dir().join(format!("metrics-adapter-check-{}", std::process::id()));
    let prometheus = PrometheusClient::new(args.prometheus.client_config(&scratch)?)
        .context("unable to construct Prometheus client")?;
    let mapper = match &args.kubeconfig {
        Some(path) => {
            let client = build_client(&ClientArgs {
                kubeconfig: Some(path.clone()),
                ..ClientArgs::default()
            })
            .await?;
            ResourceMapper::discover(&client).await?
        }
        None => ResourceMapper::default(),
    };
    let report = check(&prometheus, mapper, &compiled, &args).await;
    let _ = std::fs::remove_dir_all(&scratch);
    let (text, problems) = report?;
    print!("{text}");
    if problems > 0 {
        bail!("{problems} problem(s) found; see above");
    }
    Ok(())
}

/// The report text and the number of problems (failed queries).
pub async fn check(
    prometheus: &PrometheusClient,
    mapper: ResourceMapper,
    compiled: &CompiledConfig,
    args: &CheckArgs,
) -> anyhow::Result<(String, usize)> {
    let shared = SharedMapper::fixed(mapper.clone());
    let registries = RwLock::new(Registries::new(compiled));
    let outcome = relist_once(prometheus, &shared, &registries, args.metrics_max_age).await?;
    let registries = registries.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut out = String::new();
    let mut problems = outcome.failed_queries;
    let ns = args.namespace.as_str();

    let _ = writeln!(
        out,
        "custom.metrics.k8s.io ({} rules)",
        compiled.rules.len()
    );
    for (i, namer) in compiled.rules.iter().enumerate() {
        rule_header(&mut out, "rules", i, namer);
        let alone = per_rule_custom(prometheus, namer, &mapper, args).await;
        match alone {
            Err(e) => {
                let _ = writeln!(out, "    ERROR {e}");
            }
            Ok((series, reg)) => {
                let metrics = reg.list_custom_metrics();
                if metrics.is_empty() {
                    let _ = writeln!(out, "    no metrics: {}", why_empty(series, namer));
                }
                for m in metrics {
                    let source = registries.custom.lookup(m);
                    let won = source.is_some_and(|s| s.rule == i);
                    let scope = if m.namespaced { ns } else { "" };
                    let object = example_object(&m.group_resource);
                    let query = registries
                        .custom
                        .query_for(m, Some(scope), std::slice::from_ref(&object), &[])
                        .map(|q| q.query)
                        .unwrap_or_else(|e| format!("<cannot build query: {e}>"));
                    let path = if m.group_resource == GroupResource::core("namespaces") {
                        format!("namespaces/{object}/metrics/{}", m.metric)
                    } else if m.namespaced {
                        format!("namespaces/{ns}/{}/{object}/{}", m.group_resource, m.metric)
                    } else {
                        format!("{}/{object}/{}", m.group_resource, m.metric)
                    };
                    let _ = writeln!(
                        out,
                        "    {} -> {}{}\n      GET /apis/custom.metrics.k8s.io/v1beta2/{path}\n      query: {query}",
                        m.metric,
                        m.group_resource,
                        if won {
                            ""
                        } else {
                            "  (SHADOWED by a later rule)"
                        }
                    );
                }
            }
        }
    }

    let _ = writeln!(
        out,
        "\nexternal.metrics.k8s.io ({} rules)",
        compiled.external_rules.len()
    );
    for (i, namer) in compiled.external_rules.iter().enumerate() {
        rule_header(&mut out, "externalRules", i, namer);
        match per_rule_external(prometheus, namer, args).await {
            Err(e) => {
                let _ = writeln!(out, "    ERROR {e}");
            }
            Ok((series, reg)) => {
                let metrics = reg.list_external_metrics();
                if metrics.is_empty() {
                    let _ = writeln!(out, "    no metrics: {}", why_empty(series, namer));
                }
                for m in metrics {
                    let won = registries
                        .external
                        .lookup(&m.metric)
                        .is_some_and(|s| s.rule == i);
                    let query = registries
                        .external
                        .query_for(Some(ns), &m.metric, &[])
                        .unwrap_or_else(|e| format!("<cannot build query: {e}>"));
                    let _ = writeln!(
                        out,
                        "    {}{}\n      GET /apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{}\n      query: {query}",
                        m.metric,
                        if won {
                            ""
                        } else {
                            "  (SHADOWED by a later rule)"
                        },
                        m.metric
                    );
                }
            }
        }
    }

    let _ = writeln!(out, "\nmetrics.k8s.io (resourceRules)");
    match &compiled.resource_rules {
        None => {
            let _ = writeln!(out, "  not configured: kubectl top is not served");
        }
        Some(rr) => {
            let pods = ["<pod>".to_owned()];
            let nodes = ["<node>".to_owned()];
            for (what, q) in [("cpu", &rr.cpu), ("memory", &rr.memory)] {
                let cq = q
                    .container_query_for(&mapper, ns, &pods)
                    .unwrap_or_else(|e| format!("<cannot build query: {e}>"));
                let nq = q
                    .node_query_for(&mapper, &nodes)
                    .unwrap_or_else(|e| format!("<cannot build query: {e}>"));
                let _ = writeln!(
                    out,
                    "  {what} (container label {:?})\n    pods in {ns}: {cq}\n    nodes: {nq}",
                    q.container_label()
                );
            }
            let _ = writeln!(out, "  window: {:?}", rr.window);
        }
    }

    for d in &outcome.custom.duplicates {
        let _ = writeln!(
            out,
            "\nWARNING custom metric {} is produced by {:?}; the last one wins",
            d.metric, d.sources
        );
    }
    for d in &outcome.external.duplicates {
        let _ = writeln!(
            out,
            "\nWARNING external metric {} is produced by {:?}; the last one wins",
            d.metric.metric, d.sources
        );
    }
    for u in &outcome.custom.unresolved_overrides {
        let _ = writeln!(
            out,
            "\nWARNING rules[{}] override {:?} names resource {:?}, unknown to {}",
            u.rule,
            u.label,
            u.resource,
            if args.kubeconfig.is_some() {
                "the cluster"
            } else {
                "the built-in core resources (pass --kubeconfig to use the cluster's)"
            }
        );
    }
    if outcome.failed_queries > 0 {
        problems = problems.max(1);
    }
    let _ = writeln!(
        out,
        "\n{} custom and {} external metrics; {} of {} series queries failed",
        outcome.custom.metrics, outcome.external.metrics, outcome.failed_queries, outcome.queries
    );
    Ok((out, problems))
}

fn rule_header(out: &mut String, section: &str, i: usize, namer: &Namer) {
    let _ = writeln!(
        out,
        "  {section}[{i}] seriesQuery: {}\n    metricsQuery: {}",
        namer.series_query(),
        namer.metrics_query().source()
    );
}

fn example_object(gr: &GroupResource) -> String {
    let singular = gr.resource.trim_end_matches('s');
    format!("<{singular}>")
}

/// Why a rule discovered nothing, from its series alone.
fn why_empty(series: usize, namer: &Namer) -> String {
    if series == 0 {
        "the seriesQuery matched no series in Prometheus over --metrics-max-age".to_owned()
    } else {
        format!(
            "{series} series matched, but none passed seriesFilters/name.matches or had a label mapped to a resource (name.as = {:?})",
            namer.name_as()
        )
    }
}

async fn per_rule_custom(
    prometheus: &PrometheusClient,
    namer: &Namer,
    mapper: &ResourceMapper,
    args: &CheckArgs,
) -> Result<(usize, CustomRegistry), String> {
    let (count, series) = rule_series(prometheus, namer, args).await?;
    let mut reg = CustomRegistry::new(vec![namer.clone()]);
    reg.update(mapper, [Ok::<_, String>(series.as_slice())])
        .map_err(|e| e.to_string())?;
    Ok((count, reg))
}

async fn per_rule_external(
    prometheus: &PrometheusClient,
    namer: &Namer,
    args: &CheckArgs,
) -> Result<(usize, ExternalRegistry), String> {
    let (count, series) = rule_series(prometheus, namer, args).await?;
    let mut reg = ExternalRegistry::new(vec![namer.clone()]);
    reg.update([Ok::<_, String>(series.as_slice())])
        .map_err(|e| e.to_string())?;
    Ok((count, reg))
}

/// The rule's series as discovery sees them, and how many series Prometheus listed.
async fn rule_series(
    prometheus: &PrometheusClient,
    namer: &Namer,
    args: &CheckArgs,
) -> Result<(usize, Vec<crate::naming::Series>), String> {
    let start = std::time::SystemTime::now().checked_sub(args.metrics_max_age);
    let mut results = fetch_series(prometheus, &[namer.series_query().to_owned()], start).await;
    let r = results.pop().unwrap_or_else(|| Err("no result".into()))?;
    Ok((r.listed, r.distinct.clone()))
}
