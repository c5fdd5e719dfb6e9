use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = ferrocrane_craned::Args::parse();
    ferrocrane_core::process::exit_code("craned", ferrocrane_craned::run(args))
}
