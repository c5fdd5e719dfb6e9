use clap::Parser;

fn main() -> anyhow::Result<()> {
    let args = ferrocrane_ksm::Args::parse();
    ferrocrane_ksm::run(args)
}
