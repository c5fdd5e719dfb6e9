//! What each fuzz target in `fuzz/` does with one input, as plain functions: `fuzz/` wraps
//! each in libFuzzer's entry point for campaigns (`hack/fuzz.sh`), and [`replay`] runs the
//! committed corpora through the same functions as ordinary tests on every `hack/test.sh`.
//!
//! A target's function may panic: that is a finding. Every other outcome (a parse error, say)
//! is the input being rejected cleanly, which is what the services must do.

pub mod adapter;
pub mod core;
pub mod craned;
pub mod ksm;
pub mod replay;

/// A fuzz target: its name in `fuzz/Cargo.toml` and `fuzz/corpus/`, and how one corpus file
/// is run through it (decoded from bytes as libFuzzer's Rust entry point decodes it); `run`
/// says whether the input reached the target (one that does not decode is skipped, as the
/// fuzzer skips it).
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]) -> bool,
}

/// A target that takes the raw bytes: every input reaches it.
fn raw(bytes: &[u8], body: fn(&[u8])) -> bool {
    body(bytes);
    true
}

/// Every fuzz target. `replay`'s tests check this list against `fuzz/Cargo.toml` and
/// `fuzz/corpus/`, so a target cannot be added without its replay.
pub const TARGETS: &[Target] = &[
    Target {
        name: "core_quantity",
        run: |b| replay::typed(b, core::quantity),
    },
    Target {
        name: "core_duration",
        run: |b| replay::typed(b, core::duration),
    },
    Target {
        name: "core_label_selector",
        run: |b| replay::typed(b, core::label_selector),
    },
    Target {
        name: "core_prometheus_response",
        run: |b| raw(b, core::prometheus_response),
    },
    Target {
        name: "core_exposition",
        run: |b| raw(b, core::exposition),
    },
    Target {
        name: "core_promql_template",
        run: |b| replay::typed(b, core::promql_template),
    },
    Target {
        name: "core_front_proxy",
        run: |b| replay::typed(b, core::front_proxy),
    },
    Target {
        name: "adapter_config",
        run: |b| replay::typed(b, adapter::config),
    },
    Target {
        name: "adapter_request",
        run: |b| replay::typed(b, adapter::request),
    },
    Target {
        name: "ksm_config",
        run: |b| replay::typed(b, ksm::config),
    },
    Target {
        name: "ksm_flags",
        run: |b| replay::typed(b, ksm::flags),
    },
    Target {
        name: "craned_config",
        run: |b| replay::typed(b, craned::config),
    },
    Target {
        name: "craned_rule",
        run: |b| replay::typed(b, craned::rule),
    },
];
