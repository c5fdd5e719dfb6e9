use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = ferrocrane_ksm::Args::parse();
    ferrocrane_core::process::exit_code("ksm", ferrocrane_ksm::run(args))
}
