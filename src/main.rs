use clap::Parser;

fn main() {
    let cli = fabricplan::cli::Cli::parse();
    let code = match fabricplan::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            e.report();
            e.code()
        }
    };
    std::process::exit(code);
}
