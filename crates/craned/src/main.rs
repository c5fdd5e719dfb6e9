use clap::Parser;

fn main() -> anyhow::Result<()> {
    let args = ferrocrane_craned::Args::parse();
    ferrocrane_craned::run(args)
}
