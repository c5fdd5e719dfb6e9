//! Ports for the servers a test starts in other processes (services, Prometheus, Thanos), from
//! the suite's one port source, `hack/free_port.py`: below the ephemeral range, so no outgoing
//! connection takes one before the server binds it, and never handed to two tests at once,
//! although cargo-nextest runs each test in its own process. A server this process binds
//! itself binds `127.0.0.1:0` and keeps the listener instead.

use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

use crate::process::repo_root;

/// `count` distinct free loopback ports.
pub fn free_ports(count: usize) -> Result<Vec<u16>> {
    let script = repo_root().join("hack/free_port.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(count.to_string())
        .output()
        .with_context(|| format!("running {} (python3 is needed)", script.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let ports = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.trim()
                .parse::<u16>()
                .with_context(|| format!("free_port.py printed {l:?}"))
        })
        .collect::<Result<Vec<_>>>()?;
    ensure!(
        ports.len() == count,
        "free_port.py printed {} ports, not {count}",
        ports.len()
    );
    Ok(ports)
}

/// One free loopback port.
pub fn free_port() -> Result<u16> {
    Ok(free_ports(1)?[0])
}

/// Two free loopback ports, for a service's main and telemetry/health listeners.
pub fn two_ports() -> Result<(u16, u16)> {
    let ports = free_ports(2)?;
    Ok((ports[0], ports[1]))
}
