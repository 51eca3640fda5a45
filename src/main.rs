use clap::Parser;

fn main() {
    let cli = fabricplan::cli::Cli::parse();
    std::process::exit(fabricplan::cli::run(cli));
}
