//! metrics-adapter beside the Go prometheus-adapter v0.12.0: the same flags, the same config
//! and the same Prometheus (history backfilled for objects that exist in the cluster, every
//! instant query answered at one pinned time), each request sent to both directly the way the
//! aggregator sends it (front-proxy client certificate, X-Remote-User/Group). Status codes and
//! JSON bodies are compared (timestamps dropped, lists sorted). A difference fails the test
//! unless docs/migration-prometheus-adapter.md lists it (see [`DOCUMENTED`]; judged by
//! `ferrocrane_e2e::differential`).
//!
//! Run over several configs: one exercising every rule kind, upstream's documented sample
//! config, and one whose metricsQuery uses Go template `range`/`if`.

mod configs;
mod requests;
mod world;

use configs::{CHEDDAR_RULE, main_config, range_if_config, upstream_sample_config};
use requests::requests;
use world::{NodeGuard, World, create_world, history};

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use ferrocrane_e2e::differential::json::{drop_keys, normalise};
use ferrocrane_e2e::differential::{Documented, Verdict, indent};
use ferrocrane_e2e::{
    AdapterLaunch, Cluster, FrontProxiedAdapter, HistoryPrometheus, PinnedPrometheus,
};
use serde_json::Value;

/// Which answers a guide entry covers: requests whose label contains `request` (is `request`
/// without its `$`, when it ends in one) and, when set, configs named `config`; they may
/// differ as `allowed` says.
struct Answers {
    request: &'static str,
    config: Option<&'static str>,
    allowed: Allowed,
}

impl Answers {
    fn names(&self, label: &str, config: &str) -> bool {
        let request = match self.request.strip_suffix('$') {
            Some(exact) => label == exact,
            None => label.contains(self.request),
        };
        request && self.config.is_none_or(|c| c == config)
    }

    fn covers(&self, label: &str, config: &str, go: &Answer, ours: &Answer) -> bool {
        self.names(label, config) && only_allowed(go, ours, &self.allowed)
    }
}

enum Allowed {
    /// Only these JSON keys (anywhere in the body) may differ; the status and the rest not.
    Keys(&'static [&'static str]),
    /// The whole answer may differ.
    Answer,
}

const SELECTOR_WORDING: &str = "Label selectors our own parser rejects are explained in our words";

const DOCUMENTED: &[Documented<Answers>] = &[
    Documented {
        covers: Answers {
            request: "/apis$",
            config: None,
            allowed: Allowed::Keys(&["versions", "preferredVersion"]),
        },
        doc: "The adapter's own discovery documents list every version it serves",
    },
    Documented {
        covers: Answers {
            request: "/apis/custom.metrics.k8s.io$",
            config: None,
            allowed: Allowed::Keys(&["versions", "preferredVersion"]),
        },
        doc: "The adapter's own discovery documents list every version it serves",
    },
    Documented {
        covers: Answers {
            request: "/apis/metrics.k8s.io$",
            config: None,
            allowed: Allowed::Keys(&["versions", "preferredVersion"]),
        },
        doc: "The adapter's own discovery documents list every version it serves",
    },
    Documented {
        covers: Answers {
            request: "/openapi/v",
            config: None,
            allowed: Allowed::Answer,
        },
        doc: "`/openapi/v2` is an empty document",
    },
    // Any path outside the served groups (metrics.k8s.io too, without resourceRules).
    Documented {
        covers: Answers {
            request: "",
            config: None,
            allowed: Allowed::Keys(&["paths"]),
        },
        doc: "a 404 outside the APIs lists the paths this server serves",
    },
    Documented {
        covers: Answers {
            request: "pods/*/http_requests_per_second?labelSelector=app%3D%3D%3D",
            config: Some("upstream-sample-runnable"),
            allowed: Allowed::Answer,
        },
        doc: "a malformed `labelSelector` on a metric the adapter does not have is a 404",
    },
    Documented {
        covers: Answers {
            request: "metricLabelSelector=code%3D%3D%3D",
            config: None,
            allowed: Allowed::Answer,
        },
        doc: "An unparsable `metricLabelSelector` is a 400 BadRequest",
    },
    Documented {
        covers: Answers {
            request: "/po/*/",
            config: None,
            allowed: Allowed::Answer,
        },
        doc: "A `*` request for a resource the cluster does not serve is a 404",
    },
    Documented {
        covers: Answers {
            request: "/widgets/*/",
            config: None,
            allowed: Allowed::Answer,
        },
        doc: "A `*` request for a resource the cluster does not serve is a 404",
    },
    Documented {
        covers: Answers {
            request: "labelSelector=queue%3D%3D%3D",
            config: None,
            allowed: Allowed::Keys(&["message"]),
        },
        doc: SELECTOR_WORDING,
    },
    Documented {
        covers: Answers {
            request: "/pods?labelSelector=app%3D%3D%3D",
            config: None,
            allowed: Allowed::Keys(&["message"]),
        },
        doc: SELECTOR_WORDING,
    },
    Documented {
        covers: Answers {
            request: "startup",
            config: Some("upstream-sample-corrected"),
            allowed: Allowed::Answer,
        },
        doc: "An override naming a resource the cluster does not serve is accepted",
    },
    Documented {
        covers: Answers {
            request: "startup",
            config: Some("range-if"),
            allowed: Allowed::Answer,
        },
        doc: "Go template actions other than field lookups",
    },
];

/// Whether `go` and `ours` differ only as `allowed` permits.
fn only_allowed(go: &Answer, ours: &Answer, allowed: &Allowed) -> bool {
    match allowed {
        Allowed::Answer => true,
        Allowed::Keys(keys) => {
            let strip = |a: &Answer| -> Option<(u16, String, Value)> {
                let mut v: Value = serde_json::from_str(&a.body).ok()?;
                drop_keys(&mut v, keys);
                Some((a.status, a.media_type.clone(), v))
            };
            matches!((strip(go), strip(ours)), (Some(g), Some(o)) if g == o)
        }
    }
}

/// One request: a label for reports, the path with its query, and the Accept header.
struct Request {
    label: String,
    path: String,
    accept: Option<&'static str>,
}

fn get(path: impl Into<String>) -> Request {
    let path = path.into();
    Request {
        label: path.clone(),
        path,
        accept: None,
    }
}

fn get_as(path: impl Into<String>, accept: &'static str) -> Request {
    let path = path.into();
    Request {
        label: format!("{path} (Accept: {accept})"),
        path,
        accept: Some(accept),
    }
}

/// What an adapter answered: the status, the media type, and the body (JSON normalised).
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    status: u16,
    media_type: String,
    body: String,
}

/// The Go original or ours, started with the same arguments.
struct Side {
    name: &'static str,
    adapter: FrontProxiedAdapter,
}

async fn ask(client: &reqwest::Client, base: &str, request: &Request) -> Result<Answer> {
    let mut builder = client
        .get(format!("{base}{}", request.path))
        .header("X-Remote-User", "ferrocrane-differential")
        .header("X-Remote-Group", "system:masters");
    if let Some(accept) = request.accept {
        builder = builder.header("Accept", accept);
    }
    let response = builder
        .send()
        .await
        .with_context(|| format!("GET {}", request.path))?;
    let status = response.status().as_u16();
    let media_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    let body = response.bytes().await?;
    // Each side names its own port in `/apis` (serverAddressByClientCIDRs).
    let port = base.rsplit(':').next().unwrap_or_default();
    Ok(Answer {
        status,
        body: normalise(&body, &media_type).replace(&format!("\":{port}\""), "\":PORT\""),
        media_type,
    })
}

/// Waits until `side` answers discovery with a non-empty, settled resource list (two
/// relists agree), or fails with its log.
async fn wait_settled(client: &reqwest::Client, side: &mut Side) -> Result<()> {
    let discovery = [
        get("/apis/custom.metrics.k8s.io/v1beta1"),
        get("/apis/external.metrics.k8s.io/v1beta1"),
    ];
    let mut last: Option<Vec<Answer>> = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        side.adapter
            .process
            .ensure_running()
            .with_context(|| format!("{} exited", side.name))?;
        let mut now = Vec::new();
        for r in &discovery {
            match ask(client, &side.adapter.base, r).await {
                Ok(a) if a.status == 200 => now.push(a),
                _ => break,
            }
        }
        if now.len() == discovery.len() {
            if last.as_ref() == Some(&now) {
                return Ok(());
            }
            last = Some(now);
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "{} did not settle in 120 s; log:\n{}",
                side.name,
                side.adapter.process.logs()
            );
        }
        tokio::time::sleep(Duration::from_secs(6)).await;
    }
}

/// Compares both adapters under `config`, each difference judged by `verdict`; returns how
/// many comparisons were made (the start-up counts as one).
async fn compare_config(
    cluster: &Cluster,
    world: &World,
    prometheus: &str,
    name: &str,
    config: &str,
    verdict: &mut Verdict<'_, Answers>,
) -> Result<usize> {
    let launch = || {
        AdapterLaunch::new(config)
            .prometheus(prometheus)
            .relist("5s", "2h")
    };
    let go = launch()
        .program(
            "prometheus-adapter",
            cluster.original("prometheus-adapter")?,
        )
        .spawn_front_proxied(cluster)?;
    // Crane's autoscaling metrics join external discovery wherever Crane's CRDs are served
    // (other tests install them): a documented addition, off here to compare like for like.
    let ours = launch()
        .arg("--crane-autoscaling-metrics=false")
        .spawn_front_proxied(cluster)?;
    let client = ours.http.clone();
    let mut sides = [
        Side {
            name: "prometheus-adapter",
            adapter: go,
        },
        Side {
            name: "metrics-adapter",
            adapter: ours,
        },
    ];
    let go_started = wait_settled(&client, &mut sides[0]).await;
    let ours_started = wait_settled(&client, &mut sides[1]).await;
    match (go_started, ours_started) {
        (Ok(()), Ok(())) => {}
        (Err(go), Err(ours)) => {
            println!(
                "config {name}: both refuse it\n  prometheus-adapter: {go:#}\n  metrics-adapter: {ours:#}"
            );
            return Ok(1);
        }
        (go, ours) => {
            let refuses = |r: Result<()>| {
                r.map_or_else(
                    |e| format!("refuses the config: {e:#}"),
                    |()| "accepts the config".into(),
                )
            };
            verdict.differ(
                |k| k.request == "startup" && k.names("startup", name),
                || {
                    format!(
                        "[{name}] startup: prometheus-adapter {}; metrics-adapter {}",
                        refuses(go),
                        refuses(ours)
                    )
                },
            );
            return Ok(1);
        }
    }
    let mut compared = 1;
    for request in requests(world) {
        let go = ask(&client, &sides[0].adapter.base, &request).await?;
        let ours = ask(&client, &sides[1].adapter.base, &request).await?;
        compared += 1;
        if go == ours {
            continue;
        }
        verdict.differ(
            |k| k.covers(&request.label, name, &go, &ours),
            || {
                format!(
                    "[{name}] GET {}\n  prometheus-adapter: {} {}\n{}\n  metrics-adapter: {} {}\n{}",
                    request.label,
                    go.status,
                    go.media_type,
                    indent(&go.body),
                    ours.status,
                    ours.media_type,
                    indent(&ours.body)
                )
            },
        );
    }
    Ok(compared)
}

#[tokio::test]
async fn metrics_adapter_answers_like_prometheus_adapter() -> Result<()> {
    let cluster = Cluster::get()?;
    let ns = cluster.namespace("adapter-diff").await?;
    let other = cluster.namespace("adapter-diff-other").await?;
    let world = create_world(cluster, &ns.name, &other.name).await?;
    let _nodes = NodeGuard {
        kubectl: cluster.kubectl_handle()?,
        names: world.nodes.clone(),
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let end = now - now % 15 - 15;
    let history = HistoryPrometheus::start(&history(&world, end)).await?;
    let pinned = PinnedPrometheus::start(&history.handle.url, end).await?;

    let mut verdict = Verdict::new(
        "prometheus-adapter v0.12.0",
        "docs/migration-prometheus-adapter.md",
        DOCUMENTED,
    );
    verdict.check_guide()?;

    let mut total = 0;
    for (name, config) in [
        ("main", main_config()),
        ("upstream-sample", upstream_sample_config()),
        (
            "upstream-sample-parsable",
            &upstream_sample_config().replace("\"},\n", "\"}\n"),
        ),
        (
            "upstream-sample-corrected",
            &upstream_sample_config()
                .replace("\"},\n", "\"}\n")
                .replace("metricQuery:", "metricsQuery:"),
        ),
        // Without the rule for `brand.cheese.io`, which no cluster serves.
        (
            "upstream-sample-runnable",
            &upstream_sample_config()
                .replace("\"},\n", "\"}\n")
                .replace(CHEDDAR_RULE, ""),
        ),
        ("range-if", range_if_config()),
    ] {
        let before = (verdict.explained(), verdict.undocumented().len());
        let compared = compare_config(cluster, &world, &pinned.url, name, config, &mut verdict)
            .await
            .with_context(|| format!("config {name}"))?;
        println!(
            "config {name}: {compared} requests compared, {} differing ({} documented)",
            verdict.explained() + verdict.undocumented().len() - before.0 - before.1,
            verdict.explained() - before.0,
        );
        total += compared;
    }
    verdict.judge(&format!(
        "metrics-adapter ({total} requests over 6 configs)"
    ))
}
