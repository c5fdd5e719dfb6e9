//! Metric families, one module per Kubernetes resource.
//!
//! A family is a pure function of one object: `fn(&T, &FamilyContext) -> Vec<Metric>`
//! returning only the family's own labels; the resource's identity labels (for pods
//! `namespace`, `pod`, `uid`) are prepended here, once, as kube-state-metrics does.
//! The store calls [`ResourceFamilies::render`] once per object change and keeps the
//! bytes; scrapes only copy them.

pub mod certificatesigningrequest;
pub mod clusterrole;
pub mod clusterrolebinding;
pub mod configmap;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod endpoint;
pub mod endpointslice;
pub mod horizontalpodautoscaler;
pub mod ingress;
pub mod ingressclass;
pub mod job;
pub mod lease;
pub mod limitrange;
pub mod mutatingadmissionpolicy;
pub mod mutatingadmissionpolicybinding;
pub mod mutatingwebhookconfiguration;
pub mod namespace;
pub mod networkpolicy;
pub mod node;
pub mod persistentvolume;
pub mod persistentvolumeclaim;
pub mod pod;
pub mod poddisruptionbudget;
pub mod replicaset;
pub mod replicationcontroller;
pub mod resource_name;
pub mod resourcequota;
pub mod role;
pub mod rolebinding;
pub mod secret;
pub mod service;
pub mod serviceaccount;
pub mod statefulset;
pub mod storageclass;
pub mod util;
pub mod validatingadmissionpolicy;
pub mod validatingadmissionpolicybinding;
pub mod validatingwebhookconfiguration;
pub mod volumeattachment;

use std::borrow::Cow;

use ferrocrane_core::exposition::{Format, Metric, MetricType, write_header, write_metric_line};

/// Stability as kube-state-metrics declares it; only `Stable` shows in HELP (`[STABLE] `).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stability {
    Stable,
    Alpha,
}

/// Which Kubernetes label or annotation keys become `label_*` / `annotation_*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum KeyAllowlist {
    /// Nothing is exported (kube-state-metrics' default).
    #[default]
    None,
    /// `resource=[*]`: every key.
    All,
    /// `resource=[a,b]`: these keys. An entry with one `*` inside is a glob
    /// (`app.kubernetes.io/*`); a lone `*` here (not first) and entries with more than one
    /// `*` match nothing, as in kube-state-metrics v2.20.
    Keys(Vec<String>),
}

impl KeyAllowlist {
    pub fn allows(&self, key: &str) -> bool {
        match self {
            KeyAllowlist::None => false,
            KeyAllowlist::All => true,
            KeyAllowlist::Keys(keys) => keys.iter().any(|k| key_matches(k, key)),
        }
    }
}

/// One allowlist entry against a key: exact, or `prefix*suffix` anchored at both ends.
fn key_matches(pattern: &str, key: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == key,
        Some(("", "")) => false,
        Some((_, suffix)) if suffix.contains('*') => false,
        Some((prefix, suffix)) => {
            key.len() >= prefix.len() + suffix.len()
                && key.starts_with(prefix)
                && key.ends_with(suffix)
        }
    }
}

/// Per-resource settings families read; everything else a family needs is in the object.
#[derive(Debug, Clone, Default)]
pub struct FamilyContext {
    pub labels: KeyAllowlist,
    pub annotations: KeyAllowlist,
}

/// One metric family of a resource.
pub struct FamilySpec<T> {
    pub name: &'static str,
    /// HELP text as upstream declares it, without the stability or deprecation prefix.
    pub help: &'static str,
    pub kind: MetricType,
    pub stability: Stability,
    /// Upstream's `DeprecatedVersion`; HELP then reads `(Deprecated since vX) help`.
    pub deprecated_since: Option<&'static str>,
    /// Emitted only when named in `--metric-opt-in-list`.
    pub opt_in: bool,
    pub generate: fn(&T, &FamilyContext) -> Vec<Metric>,
}

impl<T> FamilySpec<T> {
    /// The HELP text exactly as kube-state-metrics writes it.
    pub fn full_help(&self) -> String {
        let help = match self.deprecated_since {
            Some(v) => format!("(Deprecated since {v}) {}", self.help),
            None => self.help.to_string(),
        };
        match self.stability {
            Stability::Stable => format!("[STABLE] {help}"),
            Stability::Alpha => help,
        }
    }

    pub fn write_header(&self, buf: &mut Vec<u8>, format: Format) {
        write_header(buf, self.name, &self.full_help(), self.kind, format);
    }
}

/// Every family of one resource, plus how to name an object of it.
pub struct ResourceFamilies<T> {
    /// The `--resources` name, e.g. `pods`.
    pub resource: &'static str,
    /// Identity label names prepended to every sample, e.g. `["namespace", "pod", "uid"]`.
    pub identity_keys: &'static [&'static str],
    /// Identity label values, parallel to `identity_keys`.
    pub identity: fn(&T) -> Vec<String>,
    pub families: Vec<FamilySpec<T>>,
}

impl<T> ResourceFamilies<T> {
    /// The sample lines of each family in `enabled` (indexes into `families`) for one
    /// object, ready to be stored and written on every scrape.
    pub fn render(&self, obj: &T, ctx: &FamilyContext, enabled: &[usize]) -> Vec<Vec<u8>> {
        let identity = (self.identity)(obj);
        enabled
            .iter()
            .map(|&i| {
                let family = &self.families[i];
                let mut buf = Vec::new();
                for m in (family.generate)(obj, ctx) {
                    self.write_sample(&mut buf, family.name, &identity, &m);
                }
                buf
            })
            .collect()
    }

    fn write_sample(&self, buf: &mut Vec<u8>, name: &str, identity: &[String], m: &Metric) {
        let mut keys: Vec<Cow<'_, str>> =
            Vec::with_capacity(self.identity_keys.len() + m.label_keys.len());
        keys.extend(self.identity_keys.iter().map(|k| Cow::Borrowed(*k)));
        keys.extend(m.label_keys.iter().cloned());
        let mut values: Vec<&str> = Vec::with_capacity(keys.len());
        values.extend(identity.iter().map(String::as_str));
        values.extend(m.label_values.iter().map(String::as_str));
        let full_name = format!("{name}{}", m.suffix);
        // Families build keys and values together, so a mismatch is a bug in a family;
        // dropping the sample keeps a scrape valid instead of taking /metrics down.
        if write_metric_line(buf, &full_name, &keys, &values, m.value).is_err() {
            tracing::error!(
                family = name,
                "label keys and values differ in length; sample dropped"
            );
        }
    }

    /// Header and samples of every non-opt-in family for one object, as a scrape of a
    /// store holding only this object would show: what golden tests compare against.
    pub fn render_document(&self, obj: &T, ctx: &FamilyContext) -> String {
        let enabled: Vec<usize> = (0..self.families.len())
            .filter(|&i| !self.families[i].opt_in)
            .collect();
        self.render_document_with(obj, ctx, &enabled)
    }

    /// [`Self::render_document`] for an explicit family selection (opt-in families included).
    pub fn render_document_with(&self, obj: &T, ctx: &FamilyContext, enabled: &[usize]) -> String {
        let mut out = Vec::new();
        for (&i, lines) in enabled.iter().zip(self.render(obj, ctx, enabled)) {
            self.families[i].write_header(&mut out, Format::Text004);
            out.extend_from_slice(&lines);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    pub fn family_index(&self, name: &str) -> Option<usize> {
        self.families.iter().position(|f| f.name == name)
    }
}

/// What a family is, without how it is computed: one row of the reference list
/// (`tests/data/ksm-families.tsv`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyMeta {
    /// The module that defines it, which is upstream's resource name (`pod`, `ingressclass`).
    pub module: &'static str,
    /// The `--resources` name (`pods`, `ingressclasses`).
    pub resource: &'static str,
    pub name: &'static str,
    pub kind: MetricType,
    pub stability: Stability,
    pub deprecated_since: Option<&'static str>,
    pub opt_in: bool,
}

impl<T> ResourceFamilies<T> {
    /// The metadata of every family of this resource, in registration order.
    pub fn metadata(&self, module: &'static str) -> Vec<FamilyMeta> {
        self.families
            .iter()
            .map(|f| FamilyMeta {
                module,
                resource: self.resource,
                name: f.name,
                kind: f.kind,
                stability: f.stability,
                deprecated_since: f.deprecated_since,
                opt_in: f.opt_in,
            })
            .collect()
    }
}

/// Shorthand for a sample with static label names.
pub fn sample(keys: &[&'static str], values: Vec<String>, value: f64) -> Metric {
    Metric::new(
        keys.iter().map(|k| Cow::Borrowed(*k)).collect(),
        values,
        value,
    )
}

/// A sample with no labels beyond the identity ones.
pub fn bare(value: f64) -> Metric {
    Metric::new(Vec::new(), Vec::new(), value)
}
