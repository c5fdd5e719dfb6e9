use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = ferrocrane_adapter::Args::parse();
    ferrocrane_core::process::exit_code("metrics-adapter", ferrocrane_adapter::run(args))
}
