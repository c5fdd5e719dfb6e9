use clap::Parser;

/// Errors end the process with one line (the whole cause chain), not a Debug dump.
fn main() -> std::process::ExitCode {
    let args = ferrocrane_adapter::Args::parse();
    match ferrocrane_adapter::run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("metrics-adapter: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
