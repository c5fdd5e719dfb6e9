//! Building the Kubernetes client every service uses.

use std::path::PathBuf;

use ::kube::{
    Client, Config,
    client::ClientBuilder,
    config::{KubeConfigOptions, Kubeconfig},
};

use super::{KubeError, rate_limit::RateLimitLayer};

/// Kubernetes client flags, meant to be `#[command(flatten)]`ed. Services add the Go
/// originals' spellings as aliases where they differ.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct ClientArgs {
    /// Path to a kubeconfig. Without it, KUBECONFIG / ~/.kube/config, then the in-cluster
    /// service account are tried.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of its current-context.
    #[arg(long = "kube-context")]
    pub context: Option<String>,
    /// URL of the API server, overriding the one from the kubeconfig or the in-cluster
    /// environment.
    #[arg(long)]
    pub apiserver: Option<String>,
    /// Client-side limit of requests per second to the API server; 0 disables the limit.
    #[arg(long = "kube-api-qps", default_value_t = 50.0)]
    pub qps: f32,
    /// Requests allowed above the QPS limit in a burst.
    #[arg(long = "kube-api-burst", default_value_t = 100)]
    pub burst: u32,
}

impl Default for ClientArgs {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            context: None,
            apiserver: None,
            qps: 50.0,
            burst: 100,
        }
    }
}

/// Loads the client configuration the flags point at, without building a client, so callers
/// can adjust timeouts or impersonation first.
pub async fn load_config(args: &ClientArgs) -> Result<Config, KubeError> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path).map_err(|e| KubeError::Kubeconfig {
                path: path.clone(),
                message: e.to_string(),
            })?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| KubeError::Kubeconfig {
                    path: path.clone(),
                    message: e.to_string(),
                })?
        }
        None if args.context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| KubeError::Config(e.to_string()))?,
        None => Config::infer()
            .await
            .map_err(|e| KubeError::Config(e.to_string()))?,
    };
    if let Some(url) = &args.apiserver {
        config.cluster_url = url.parse().map_err(|e| KubeError::ApiserverUrl {
            url: url.clone(),
            message: format!("{e}"),
        })?;
    }
    Ok(config)
}

/// Builds a client from the flags, rate-limited to `--kube-api-qps` / `--kube-api-burst`.
pub async fn build_client(args: &ClientArgs) -> Result<Client, KubeError> {
    let config = load_config(args).await?;
    client_from_config(config, args.qps, args.burst)
}

/// Builds a rate-limited client from an already loaded config.
pub fn client_from_config(config: Config, qps: f32, burst: u32) -> Result<Client, KubeError> {
    let builder = ClientBuilder::try_from(config).map_err(|e| KubeError::Client(e.to_string()))?;
    Ok(builder.with_layer(&RateLimitLayer::new(qps, burst)).build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        kube: ClientArgs,
    }

    #[test]
    fn flags_parse() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.kube, ClientArgs::default());
        let cli = Cli::try_parse_from([
            "x",
            "--kubeconfig",
            "/tmp/kc",
            "--kube-api-qps",
            "5",
            "--kube-api-burst",
            "10",
            "--apiserver",
            "https://127.0.0.1:6443",
        ])
        .unwrap();
        assert_eq!(cli.kube.kubeconfig, Some(PathBuf::from("/tmp/kc")));
        assert_eq!(cli.kube.qps, 5.0);
        assert_eq!(cli.kube.burst, 10);
    }

    const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: abc
contexts:
- name: local
  context:
    cluster: local
    user: admin
    namespace: team-a
current-context: local
"#;

    #[tokio::test]
    async fn client_from_kubeconfig_file_with_override() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, KUBECONFIG).unwrap();
        let args = ClientArgs {
            kubeconfig: Some(path),
            apiserver: Some("https://10.0.0.1:443".into()),
            ..ClientArgs::default()
        };
        let config = load_config(&args).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://10.0.0.1:443/");
        assert_eq!(config.default_namespace, "team-a");
        let client = build_client(&args).await.unwrap();
        assert_eq!(client.default_namespace(), "team-a");
    }

    #[tokio::test]
    async fn missing_kubeconfig_names_the_file() {
        let args = ClientArgs {
            kubeconfig: Some(PathBuf::from("/nonexistent/kubeconfig")),
            ..ClientArgs::default()
        };
        let err = match build_client(&args).await {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
    }
}
