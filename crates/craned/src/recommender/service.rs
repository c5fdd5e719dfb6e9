//! The Service recommender: LoadBalancer Services nobody uses.
//!
//! Crane: only `type: LoadBalancer`; any ready or not-ready endpoint address disqualifies; no
//! selected pods → "It is a Orphan Service, Pod count is 0"; otherwise each configured
//! threshold (`net-receive-bytes`, `net-transfer-bytes`; 0 = unchecked) must not be exceeded by
//! the `net-receive-percentile`/`net-transfer-percentile` (0.95) of the backing workload's
//! traffic → "It is a Orphan Service, Pod net bytes low". Difference, on purpose: Crane queries
//! the receive expression twice (its transfer check reads the receive series); the input here
//! has both.

use super::config::{Config, ConfigValueError};
use super::{Proposal, RecommendError, first_busy};
use crate::crd::actions;
use crate::prediction::Sample;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceConfig {
    pub net_receive_bytes: f64,
    pub net_receive_percentile: f64,
    pub net_transfer_bytes: f64,
    pub net_transfer_percentile: f64,
}

impl ServiceConfig {
    pub fn from_config(c: &Config) -> Result<Self, ConfigValueError> {
        Ok(ServiceConfig {
            net_receive_bytes: c.get_f64("net-receive-bytes", 0.0)?,
            net_receive_percentile: c.get_f64("net-receive-percentile", 0.95)? * 100.0,
            net_transfer_bytes: c.get_f64("net-transfer-bytes", 0.0)?,
            net_transfer_percentile: c.get_f64("net-transfer-percentile", 0.95)? * 100.0,
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ServiceInput<'a> {
    pub service_type: &'a str,
    /// Ready plus not-ready endpoint addresses.
    pub endpoint_addresses: usize,
    pub pods: usize,
    pub net_receive_bytes: &'a [Sample],
    pub net_transfer_bytes: &'a [Sample],
}

pub fn recommend(
    cfg: &ServiceConfig,
    name: &str,
    input: &ServiceInput<'_>,
) -> Result<Proposal, RecommendError> {
    if input.service_type != "LoadBalancer" {
        return Err(RecommendError::NotApplicable(format!(
            "service: {name} type: {} is not a LoadBalancer",
            input.service_type
        )));
    }
    if input.endpoint_addresses > 0 {
        return Err(RecommendError::NotApplicable(format!(
            "service: {name} addresses not empty"
        )));
    }
    let delete = |d: &str| Proposal {
        action: actions::DELETE,
        description: d.into(),
        ..Default::default()
    };
    if input.pods == 0 {
        return Ok(delete("It is a Orphan Service, Pod count is 0"));
    }
    let checks = [
        (
            "net receive",
            cfg.net_receive_bytes,
            cfg.net_receive_percentile,
            input.net_receive_bytes,
        ),
        (
            "net transfer",
            cfg.net_transfer_bytes,
            cfg.net_transfer_percentile,
            input.net_transfer_bytes,
        ),
    ];
    if let Some((what, threshold, pct, v)) = first_busy(checks)? {
        return Err(RecommendError::NotApplicable(format!(
            "Service {name} is not a Orphan Service, because the config value is {threshold}, but the {what} {pct} percentile bytes is {v}"
        )));
    }
    Ok(delete("It is a Orphan Service, Pod net bytes low"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_like_crane() {
        let cfg = ServiceConfig::from_config(&Config::from_pairs([("net-receive-bytes", "1000")]))
            .unwrap();
        let lb = ServiceInput {
            service_type: "LoadBalancer",
            ..Default::default()
        };
        assert!(
            recommend(
                &cfg,
                "s",
                &ServiceInput {
                    service_type: "ClusterIP",
                    ..lb
                }
            )
            .is_err()
        );
        assert!(
            recommend(
                &cfg,
                "s",
                &ServiceInput {
                    endpoint_addresses: 1,
                    ..lb
                }
            )
            .is_err()
        );
        assert_eq!(
            recommend(&cfg, "s", &lb).unwrap().description,
            "It is a Orphan Service, Pod count is 0"
        );
        let quiet: Vec<Sample> = (0..20).map(|i| Sample::new(i, 10.0)).collect();
        let busy: Vec<Sample> = (0..20).map(|i| Sample::new(i, 1e6)).collect();
        let p = recommend(
            &cfg,
            "s",
            &ServiceInput {
                pods: 2,
                net_receive_bytes: &quiet,
                ..lb
            },
        )
        .unwrap();
        assert_eq!(
            (p.action, p.description.as_str()),
            ("Delete", "It is a Orphan Service, Pod net bytes low")
        );
        assert!(
            recommend(
                &cfg,
                "s",
                &ServiceInput {
                    pods: 2,
                    net_receive_bytes: &busy,
                    ..lb
                }
            )
            .is_err()
        );
    }
}
