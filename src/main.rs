//! The `intentdesk` binary: the embedded default, the console, the coordinator, the sandbox
//! and the load driver, one subcommand each.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "intentdesk",
    version,
    about = "One intent per business outcome: attempts, action keys, receipts, and indeterminate outcomes made visible."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The embedded default: a coordinator, a sandbox and a steady workload on loopback.
    Demo(DemoArgs),
    /// The desktop console on a coordinator.
    Console(ConsoleArgs),
    /// The coordinator HTTP service.
    Coordinator(CoordinatorArgs),
    /// The sandbox downstream (an ERP stand-in with switchable faults).
    Sandbox(intentdesk::sandbox::SandboxArgs),
}

#[derive(clap::Args, Default)]
struct DemoArgs {
    /// Where the demo keeps its database (default: the user's data directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ConsoleArgs {
    /// The coordinator's base URL.
    #[arg(long)]
    coordinator: String,
    /// A file holding the bearer token.
    #[arg(long)]
    token_file: PathBuf,
}

#[derive(clap::Args)]
struct CoordinatorArgs {
    /// The configuration file (TOML).
    #[arg(long, required_unless_present = "print_example_config")]
    config: Option<PathBuf>,
    /// Print a commented example configuration and exit.
    #[arg(long)]
    print_example_config: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let result = match cli.command {
        None => not_built("the desktop console on the embedded default"),
        Some(Command::Demo(_)) => not_built("the embedded default"),
        Some(Command::Console(_)) => not_built("the desktop console"),
        Some(Command::Coordinator(args)) => runtime().and_then(|rt| rt.block_on(coordinator(args))),
        Some(Command::Sandbox(args)) => {
            runtime().and_then(|rt| rt.block_on(intentdesk::sandbox::run_cli(args)))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("intentdesk: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn not_built(what: &str) -> anyhow::Result<()> {
    anyhow::bail!(
        "{what} is not built in this version yet; `intentdesk coordinator`, `intentdesk sandbox` work"
    )
}

async fn coordinator(args: CoordinatorArgs) -> anyhow::Result<()> {
    use intentdesk::coordinator::{Config, EXAMPLE_CONFIG, run};
    if args.print_example_config {
        print!("{EXAMPLE_CONFIG}");
        return Ok(());
    }
    let path = args.config.context("--config is required")?;
    let config = Config::load(&path)?;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    run(listener, config, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
