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
    about = "One intent per business outcome: attempts, action keys, receipts, and indeterminate outcomes made visible.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand, `intentdesk` is `intentdesk demo` and takes its flags.
    #[command(flatten)]
    demo: DemoArgs,
}

#[derive(Subcommand)]
enum Command {
    /// The embedded default (also what `intentdesk` alone runs): a coordinator, a sandbox
    /// and a steady workload on loopback, with the console on top.
    Demo(DemoArgs),
    /// The desktop console on a coordinator.
    Console(ConsoleArgs),
    /// The coordinator HTTP service.
    Coordinator(CoordinatorArgs),
    /// The sandbox downstream (an ERP stand-in with switchable faults).
    Sandbox(intentdesk::sandbox::SandboxArgs),
    /// Drive a workload against a coordinator and print the logical-outcome report.
    Load(intentdesk::workload::LoadArgs),
    /// Run seeded simulated worlds of the coordinator (faults, crashes, forgers) and check
    /// every invariant after every step.
    Simulate(intentdesk::sim::SimulateArgs),
}

#[derive(clap::Args, Default)]
struct DemoArgs {
    /// Where the demo keeps its database and the console its cache (default: the user's
    /// data directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Run without a window: print where the coordinator listens and a token, until Ctrl-C.
    #[arg(long)]
    headless: bool,
    /// Open this intent id or action key at start.
    #[arg(long)]
    open: Option<String>,
    /// Show every time in UTC rather than this machine's zone.
    #[arg(long)]
    utc: bool,
}

#[derive(clap::Args)]
struct ConsoleArgs {
    /// The coordinator's base URL.
    #[arg(long)]
    coordinator: String,
    /// A file holding the bearer token (read once; never written back).
    #[arg(long, required_unless_present = "offline")]
    token_file: Option<PathBuf>,
    /// Open this intent id or action key at start.
    #[arg(long)]
    open: Option<String>,
    /// Show what the local cache holds for this coordinator, without connecting.
    #[arg(long)]
    offline: bool,
    /// Where the console keeps its cache (default: the user's data directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Show every time in UTC rather than this machine's zone.
    #[arg(long)]
    utc: bool,
    /// CA certificates (PEM) to trust beside the system's, for an https:// coordinator
    /// whose certificate a private CA signed.
    #[arg(long, env = "INTENTDESK_CA_FILE")]
    ca_file: Option<PathBuf>,
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
    match &cli.command {
        // The demo logs to a file in its data directory (`demo` sets it up).
        None | Some(Command::Demo(_)) => {}
        // A simulation's coordinators would log every step; only its report is wanted.
        Some(Command::Simulate(_)) => init_logging("off"),
        Some(_) => init_logging("info"),
    }
    let result = match cli.command {
        None => demo(cli.demo),
        Some(Command::Demo(args)) => demo(args),
        Some(Command::Console(args)) => console(args),
        Some(Command::Coordinator(args)) => runtime().and_then(|rt| rt.block_on(coordinator(args))),
        Some(Command::Sandbox(args)) => {
            runtime().and_then(|rt| rt.block_on(intentdesk::sandbox::run_cli(args)))
        }
        Some(Command::Load(args)) => {
            match runtime().and_then(|rt| rt.block_on(intentdesk::workload::run_cli(args))) {
                Ok(0) => Ok(()),
                Ok(code) => return ExitCode::from(u8::try_from(code).unwrap_or(1)),
                Err(e) => Err(e),
            }
        }
        Some(Command::Simulate(args)) => match intentdesk::sim::run_cli(args) {
            Ok(0) => Ok(()),
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("intentdesk: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `RUST_LOG`, or `default` without it.
fn filter(default: &str) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
}

/// Whether standard error is a terminal, which alone gets colour codes.
fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// Services log to standard error (where a service manager collects it).
fn init_logging(default: &str) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter(default))
        .with_ansi(stderr_is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

/// The demo runs in the terminal of whoever started it: warnings and errors go there, and
/// everything from `info` up to `intentdesk.log` in the data directory, with each intent as
/// it is created (a debug line elsewhere; `RUST_LOG` changes both). Its path is returned, to
/// be said once.
fn init_demo_logging(data_dir: &std::path::Path) -> Option<PathBuf> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let terminal = tracing_subscriber::fmt::layer()
        .with_ansi(stderr_is_terminal())
        .with_writer(std::io::stderr)
        .with_filter(filter("warn"));
    let path = data_dir.join("intentdesk.log");
    let file = std::fs::create_dir_all(data_dir)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
        })
        .map_err(|e| eprintln!("intentdesk: cannot write {}: {e}", path.display()))
        .ok();
    let written = file.is_some();
    let file = file.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f))
            .with_filter(filter("info,intentdesk::coordinator::ingest=debug"))
    });
    let _ = tracing_subscriber::registry()
        .with(terminal)
        .with(file)
        .try_init();
    written.then_some(path)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn demo(args: DemoArgs) -> anyhow::Result<()> {
    use intentdesk::embedded::{Embedded, default_data_dir};
    let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
    let log = init_demo_logging(&data_dir);
    let rt = runtime()?;
    let embedded = rt.block_on(Embedded::start(&data_dir, true))?;
    eprintln!(
        "intentdesk: embedded coordinator at {}",
        embedded.coordinator_url
    );
    eprintln!("intentdesk: sandbox downstream at {}", embedded.sandbox_url);
    eprintln!("intentdesk: database {}", embedded.database.display());
    if let Some(log) = log {
        eprintln!(
            "intentdesk: log {} (warnings and errors also here)",
            log.display()
        );
    }
    let result = if args.headless || !cfg!(feature = "console") {
        eprintln!("intentdesk: admin token for this run: {}", embedded.token);
        eprintln!("intentdesk: running headless; Ctrl-C or SIGTERM stops");
        rt.block_on(intentdesk::serving::stop_requested());
        Ok(())
    } else {
        open_console(&embedded, &data_dir, args.open, args.utc, rt.handle())
    };
    rt.block_on(embedded.shutdown());
    result
}

#[cfg(feature = "console")]
fn open_console(
    embedded: &intentdesk::embedded::Embedded,
    data_dir: &std::path::Path,
    open: Option<String>,
    utc: bool,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<()> {
    let options = intentdesk::console::ConsoleOptions {
        label: "embedded demo".into(),
        coordinator_url: embedded.coordinator_url.clone(),
        token: embedded.token.clone(),
        offline: false,
        open,
        cache_path: Some(data_dir.join("console-cache.sqlite")),
        fixed_now_ms: None,
        utc,
        ca_file: None,
    };
    intentdesk::console::run_native(options, runtime.clone())
        .context("no window could be opened (is there a display?); `intentdesk demo --headless` runs without one")
}

#[cfg(not(feature = "console"))]
fn open_console(
    _embedded: &intentdesk::embedded::Embedded,
    _data_dir: &std::path::Path,
    _open: Option<String>,
    _utc: bool,
    _runtime: &tokio::runtime::Handle,
) -> anyhow::Result<()> {
    anyhow::bail!("this build has no console (built without the `console` feature)")
}

#[cfg(feature = "console")]
fn console(args: ConsoleArgs) -> anyhow::Result<()> {
    let token = match &args.token_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?
            .trim()
            .to_string(),
        None => String::new(),
    };
    if token.is_empty() && !args.offline {
        anyhow::bail!("the token file is empty");
    }
    let data_dir = args
        .data_dir
        .unwrap_or_else(intentdesk::embedded::default_data_dir);
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let rt = runtime()?;
    let options = intentdesk::console::ConsoleOptions {
        label: args.coordinator.clone(),
        coordinator_url: args.coordinator,
        token,
        offline: args.offline,
        open: args.open,
        cache_path: Some(data_dir.join("console-cache.sqlite")),
        fixed_now_ms: None,
        utc: args.utc,
        ca_file: args.ca_file,
    };
    intentdesk::console::run_native(options, rt.handle().clone())
}

#[cfg(not(feature = "console"))]
fn console(_args: ConsoleArgs) -> anyhow::Result<()> {
    anyhow::bail!("this build has no console (built without the `console` feature)")
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
    run(listener, config, intentdesk::serving::stop_requested()).await
}
