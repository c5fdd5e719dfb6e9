//! What the craned differential runs both cranes on.

pub mod targets;
pub mod workloads;
