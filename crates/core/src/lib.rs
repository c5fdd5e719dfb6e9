//! ferrocrane-core: the pieces two or more ferrocrane services share.
//!
//! Each module has one job; none of them knows about a particular service.

// Tests may cast freely; service code proves each narrowing (Cargo.toml [workspace.lints]).
#![cfg_attr(test, allow(clippy::cast_possible_truncation))]

pub mod config;
pub mod duration;
pub mod exposition;
pub mod kube;
pub mod process;
pub mod prometheus;
pub mod promql;
pub mod quantity;
pub mod server;
