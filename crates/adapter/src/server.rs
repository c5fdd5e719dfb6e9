//! Wiring: flags → Prometheus client, config watcher, Kubernetes clients, relist loop, TLS,
//! authentication, routes; then serve until SIGTERM.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::{Context, anyhow};
use ferrocrane_core::config::{ConfigWatcher, WatchOptions};
use ferrocrane_core::kube::{ClientArgs, build_client, spawn_refresh};
use ferrocrane_core::prometheus::{MetricsOptions, PrometheusClient};
use ferrocrane_core::server::delegated_auth::KubeReviewApi;
use ferrocrane_core::server::{
    AdminState, ClientAuth, FrontProxyConfig, Readiness, TlsServerConfig, admin_router,
    ensure_self_signed_cert, serve, shutdown_signal,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use crate::api::external::prometheus::PrometheusRules;
use crate::api::external::{ExternalMetrics, Source};
use crate::api::{self, ApiState};
use crate::auth::{Auth, AuthMetrics};
use crate::loader::{CompiledConfig, load_compiled};
use crate::options::{Args, AuthArgs};
use crate::relist::{Registries, RelistLoop, RelistMetrics};
use crate::resource_metrics::{self, ResourceMetricsState, SharedQueries};

/// Prefix of every self-metric.
pub const METRICS_NAMESPACE: &str = "metrics_adapter";

/// Where kube-apiserver publishes the requestheader settings for aggregated API servers.
const AUTH_CONFIGMAP_NAMESPACE: &str = "kube-system";
const AUTH_CONFIGMAP: &str = "extension-apiserver-authentication";

/// Loads the config file (watched for changes) and compiles it.
fn watch_config(
    path: &Path,
    registry: &prometheus::Registry,
) -> anyhow::Result<ConfigWatcher<CompiledConfig>> {
    let options = WatchOptions {
        metrics: Some((registry.clone(), METRICS_NAMESPACE.to_owned())),
        ..WatchOptions::default()
    };
    ConfigWatcher::start_with(path, options, |name, bytes| {
        load_compiled(name, bytes).map(|(_, compiled)| compiled)
    })
    .map_err(|e| anyhow!("unable to load metrics discovery config: {e}"))
}

async fn client_for(
    base: &ClientArgs,
    kubeconfig: Option<&PathBuf>,
) -> anyhow::Result<kube::Client> {
    let args = ClientArgs {
        kubeconfig: kubeconfig.cloned().or_else(|| base.kubeconfig.clone()),
        ..base.clone()
    };
    Ok(build_client(&args).await?)
}

/// Front-proxy settings from flags, or else from the cluster's ConfigMap; and the CA file the
/// TLS layer verifies client certificates with.
async fn requestheader(
    auth: &AuthArgs,
    client: &kube::Client,
    scratch: &Path,
) -> anyhow::Result<Option<(FrontProxyConfig, PathBuf)>> {
    let pick = |flag: &Vec<String>, from_cluster: Vec<String>, default: Vec<String>| {
        if !flag.is_empty() {
            flag.clone()
        } else if !from_cluster.is_empty() {
            from_cluster
        } else {
            default
        }
    };
    let defaults = FrontProxyConfig::default();
    if let Some(ca) = &auth.requestheader_client_ca_file {
        return Ok(Some((
            FrontProxyConfig {
                allowed_names: auth.requestheader_allowed_names.clone(),
                username_headers: pick(
                    &auth.requestheader_username_headers,
                    vec![],
                    defaults.username_headers,
                ),
                group_headers: pick(
                    &auth.requestheader_group_headers,
                    vec![],
                    defaults.group_headers,
                ),
                extra_prefixes: pick(
                    &auth.requestheader_extra_headers_prefix,
                    vec![],
                    defaults.extra_prefixes,
                ),
            },
            ca.clone(),
        )));
    }
    if auth.authentication_skip_lookup {
        tracing::warn!(
            "no --requestheader-client-ca-file and lookup skipped: requests proxied by kube-apiserver cannot be authenticated"
        );
        return Ok(None);
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), AUTH_CONFIGMAP_NAMESPACE);
    let cm = api.get(AUTH_CONFIGMAP).await.with_context(|| {
        format!("unable to load configmap based request-header-client-ca-file: reading {AUTH_CONFIGMAP_NAMESPACE}/{AUTH_CONFIGMAP} (grant the extension-apiserver-authentication-reader Role, pass --requestheader-client-ca-file, or --authentication-skip-lookup)")
    })?;
    let data = cm.data.unwrap_or_default();
    let Some(ca) = data
        .get("requestheader-client-ca-file")
        .filter(|s| !s.trim().is_empty())
    else {
        tracing::warn!(
            "{AUTH_CONFIGMAP_NAMESPACE}/{AUTH_CONFIGMAP} has no requestheader-client-ca-file: front-proxy authentication disabled"
        );
        return Ok(None);
    };
    std::fs::create_dir_all(scratch).with_context(|| scratch.display().to_string())?;
    let ca_file = scratch.join("requestheader-client-ca.crt");
    std::fs::write(&ca_file, ca).with_context(|| ca_file.display().to_string())?;
    let list = |key: &str| -> Vec<String> {
        data.get(key)
            .and_then(|v| serde_json::from_str::<Vec<String>>(v).ok())
            .unwrap_or_default()
    };
    Ok(Some((
        FrontProxyConfig {
            allowed_names: pick(
                &auth.requestheader_allowed_names,
                list("requestheader-allowed-names"),
                vec![],
            ),
            username_headers: pick(
                &auth.requestheader_username_headers,
                list("requestheader-username-headers"),
                defaults.username_headers,
            ),
            group_headers: pick(
                &auth.requestheader_group_headers,
                list("requestheader-group-headers"),
                defaults.group_headers,
            ),
            extra_prefixes: pick(
                &auth.requestheader_extra_headers_prefix,
                list("requestheader-extra-headers-prefix"),
                defaults.extra_prefixes,
            ),
        },
        ca_file,
    )))
}

/// Crane's objects as a source of external metrics (`--crane-autoscaling-metrics`): it
/// starts serving once the API server serves Crane's CRDs.
fn crane_source(lister: &kube::Client, enabled: bool) -> Option<Source> {
    enabled.then(|| {
        Source::Crane(crate::api::external::crane::CraneObjects::start(
            lister,
            ferrocrane_autoscaling::cron::DefaultZone::system(),
        ))
    })
}

/// Serves until SIGTERM/SIGINT.
pub async fn serve_adapter(args: Args) -> anyhow::Result<()> {
    args.validate()?;
    let max_age = args.max_age()?;
    let config_path = args
        .config
        .clone()
        .context("no metrics discovery configuration file specified (make sure to use --config)")?;
    let registry = prometheus::Registry::new();
    registry.register(Box::new(ferrocrane_core::process::ProcessMetrics::new()?))?;
    let scratch = std::env::temp_dir().join(format!("metrics-adapter-{}", std::process::id()));

    let mut prom_config = args.prometheus.client_config(&scratch)?;
    prom_config.metrics = Some(MetricsOptions {
        registry: registry.clone(),
        namespace: METRICS_NAMESPACE.to_owned(),
    });
    let prometheus =
        PrometheusClient::new(prom_config).context("unable to construct Prometheus client")?;

    let watcher = watch_config(&config_path, &registry)?;
    let compiled = watcher.current();

    // Upstream has no --kubeconfig: its discovery and listers both use --lister-kubeconfig.
    let lister = client_for(&args.kube, args.lister_kubeconfig.as_ref()).await?;
    let kube_client = lister.clone();
    let authn_client = client_for(&args.kube, args.auth.authentication_kubeconfig.as_ref()).await?;
    let authz_client = client_for(&args.kube, args.auth.authorization_kubeconfig.as_ref()).await?;
    let mapper = spawn_refresh(kube_client.clone(), args.discovery_interval);

    let front_proxy = requestheader(&args.auth, &authn_client, &scratch).await?;
    let mut tls = match (
        &args.serving.tls_cert_file,
        &args.serving.tls_private_key_file,
    ) {
        (Some(cert), Some(key)) => TlsServerConfig {
            cert_file: cert.clone(),
            key_file: key.clone(),
            client_ca_file: None,
            client_auth: ClientAuth::None,
        },
        _ => ensure_self_signed_cert(
            &args.serving.cert_dir,
            "localhost",
            &["127.0.0.1".parse()?],
            &[],
        )
        .context("unable to generate a self-signed serving certificate")?,
    };
    if let Some((_, ca)) = &front_proxy {
        tls.client_ca_file = Some(ca.clone());
        // Optional: probes and token-authenticated callers present no certificate.
        tls.client_auth = ClientAuth::Optional;
    }
    let mut server_tls = tls.load()?;
    if args.serving.disable_http2 {
        let mut c = (*server_tls).clone();
        c.alpn_protocols = vec![b"http/1.1".to_vec()];
        server_tls = Arc::new(c);
    }

    let readiness = Readiness::new();
    let relist_gate = readiness.gate("relist");
    let registries = Arc::new(RwLock::new(Registries::new(&compiled)));
    let resource_queries = SharedQueries::new(compiled.resource_rules.clone());
    let relist = RelistLoop {
        prometheus: prometheus.clone(),
        mapper: mapper.clone(),
        registries: registries.clone(),
        resource_queries: resource_queries.clone(),
        interval: args.metrics_relist_interval,
        max_age,
        gate: relist_gate,
        metrics: Some(RelistMetrics::register(&registry)?),
    };
    tokio::spawn(relist.run(watcher.subscribe()));

    let auth = Arc::new(Auth::new(
        front_proxy.map(|(f, _)| f),
        args.auth.always_allow_paths.clone(),
        Arc::new(KubeReviewApi {
            authentication: authn_client,
            authorization: authz_client,
        }),
        args.auth.cache_ttl,
        Some(AuthMetrics::register(&registry)?),
    ));
    let app = admin_router(AdminState::new(readiness, registry))
        // metrics.k8s.io data paths (kubectl top); discovery of the group is the api router's.
        .merge(resource_metrics::router(Arc::new(ResourceMetricsState {
            prometheus: prometheus.clone(),
            client: lister.clone(),
            mapper: mapper.clone(),
            queries: resource_queries.clone(),
        })))
        .merge(api::router(ApiState {
            external: Arc::new(ExternalMetrics::new(
                crane_source(&lister, args.crane_autoscaling_metrics)
                    .into_iter()
                    .chain([Source::PrometheusRules(PrometheusRules {
                        registries: registries.clone(),
                        prometheus: prometheus.clone(),
                    })])
                    .collect(),
            )),
            registries,
            resource_queries,
            prometheus,
            objects: Arc::new(crate::objects::ObjectCaches::new(
                lister.clone(),
                args.object_cache,
            )),
            lister,
            mapper,
            secure_port: args.serving.secure_port,
        }))
        .layer(axum::middleware::from_fn_with_state(
            auth,
            crate::auth::middleware,
        ));

    let addr = std::net::SocketAddr::new(args.serving.bind_address, args.serving.secure_port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    tracing::info!(%addr, config = %config_path.display(), "serving");
    let result = serve(listener, Some(server_tls), app, shutdown_signal()).await;
    drop(watcher);
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(result?)
}
