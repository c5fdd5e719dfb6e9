//! What every binary does once per process: logging, allocator tuning and the async runtime
//! at start, one line on standard error with a non-zero exit code when it fails, and the
//! `process_*` self-metrics.

mod allocator;
mod logging;
mod metrics;

use std::fmt::Display;
use std::process::ExitCode;

pub use logging::{LogArgs, LogFormat, init_tracing, log_filter};
pub use metrics::ProcessMetrics;

/// Why a process could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("invalid log filter {0}")]
    LogFilter(String),
    #[error("starting the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// The start of every service: logging as `log` says, the allocator capped while the process
/// has one thread, then the multi-threaded runtime the service runs on.
pub fn start(log: &LogArgs) -> Result<tokio::runtime::Runtime, ProcessError> {
    // Another subscriber (a test harness) may already be installed: logging works either way.
    let _ = init_tracing(log)?;
    log.warn_ignored_klog_flags();
    // SAFETY: the runtime, the first thread this process starts, is built after this call.
    unsafe { allocator::tune_malloc() };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ProcessError::Runtime)
}

/// The end of every binary's `main`: an error is printed as one line, its whole cause chain
/// (`{:#}`), prefixed with the binary's name, and the exit code is 1.
pub fn exit_code<E: Display>(binary: &str, result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{binary}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_exits_non_zero_and_success_zero() {
        assert_eq!(exit_code::<String>("x", Ok(())), ExitCode::SUCCESS);
        assert_eq!(exit_code("x", Err("boom")), ExitCode::FAILURE);
    }
}
