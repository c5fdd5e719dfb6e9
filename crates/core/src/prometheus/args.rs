//! The flags both Prometheus-reading services (metrics-adapter, craned) share for what sits in
//! front of the data: a query layer such as Thanos Query, VictoriaMetrics or Mimir, often
//! behind a proxy. One definition, so the two services spell and read them the same way.

use super::config::{
    DEFAULT_MAX_GET_URL_LEN, PartialResponse, PrometheusConfig, parse_header_flag,
};

#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct QueryLayerArgs {
    /// Header to set on requests to Prometheus, as Key=Value (e.g. X-Scope-OrgID=tenant-a for
    /// a Mimir, Cortex or Thanos tenant). Can be repeated.
    #[arg(long = "prometheus-header")]
    pub headers: Vec<String>,
    /// Requests whose GET URL would be longer than this many bytes are sent as POST forms
    /// (long `pod=~"a|b|..."` selectors; proxies answer 414 past a few KiB).
    #[arg(long = "prometheus-max-get-length", default_value_t = DEFAULT_MAX_GET_URL_LEN)]
    pub max_get_length: usize,
    /// Thanos' partial_response parameter: false (a failed store fails the query), true
    /// (partial answers allowed, warnings logged) or unset (parameter not sent).
    #[arg(long = "prometheus-partial-response", default_value = "false")]
    pub partial_response: PartialResponse,
}

impl QueryLayerArgs {
    /// Every `--prometheus-header`, or why the first that is not `Name=Value` is not.
    pub fn headers(&self) -> Result<Vec<(String, String)>, String> {
        self.headers.iter().map(|h| parse_header_flag(h)).collect()
    }

    /// Sets the client fields these flags own; fails only on a bad `--prometheus-header`.
    pub fn apply(&self, cfg: &mut PrometheusConfig) -> Result<(), String> {
        cfg.headers = self.headers()?;
        cfg.max_get_url_len = self.max_get_length;
        cfg.partial_response = self.partial_response;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        layer: QueryLayerArgs,
    }

    fn parse(args: &[&str]) -> Result<QueryLayerArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).map(|c| c.layer)
    }

    #[test]
    fn defaults_ask_for_complete_answers_and_post_long_urls() -> Result<(), String> {
        let args = parse(&[]).map_err(|e| e.to_string())?;
        let mut cfg = PrometheusConfig::new("http://p");
        args.apply(&mut cfg)?;
        assert_eq!(cfg.partial_response, PartialResponse::Deny);
        assert_eq!(cfg.max_get_url_len, DEFAULT_MAX_GET_URL_LEN);
        assert!(cfg.headers.is_empty());
        Ok(())
    }

    #[test]
    fn every_flag_reaches_the_client() -> Result<(), String> {
        let args = parse(&[
            "--prometheus-header=X-Scope-OrgID=tenant-a",
            "--prometheus-header",
            "X-Extra=a=b",
            "--prometheus-max-get-length=100",
            "--prometheus-partial-response=unset",
        ])
        .map_err(|e| e.to_string())?;
        let mut cfg = PrometheusConfig::new("http://p");
        args.apply(&mut cfg)?;
        assert_eq!(
            cfg.headers,
            vec![
                ("X-Scope-OrgID".to_owned(), "tenant-a".to_owned()),
                ("X-Extra".to_owned(), "a=b".to_owned())
            ]
        );
        assert_eq!(cfg.max_get_url_len, 100);
        assert_eq!(cfg.partial_response, PartialResponse::Unset);
        Ok(())
    }

    #[test]
    fn bad_values_name_the_flag() {
        let bad = parse(&["--prometheus-partial-response=sometimes"])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(bad.contains("--prometheus-partial-response"), "{bad}");
        assert!(parse(&["--prometheus-max-get-length=-1"]).is_err());
        let args = parse(&["--prometheus-header==v"]).map_err(|e| e.to_string());
        let err = args.and_then(|a| a.headers().map(|_| ()));
        assert!(
            err.as_ref().is_err_and(|e| e.contains("Name=Value")),
            "{err:?}"
        );
    }
}
