use clap::Parser;

fn main() -> anyhow::Result<()> {
    let args = ferrocrane_adapter::Args::parse();
    ferrocrane_adapter::run(args)
}
