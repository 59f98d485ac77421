//! The `sandbox` subcommand: its flags and the entry point that serves until Ctrl-C.

use std::path::PathBuf;

use anyhow::Context as _;
use reqwest::Url;
use tokio::net::TcpListener;

use super::faults::FaultSpec;
use super::server;
use super::state::{SandboxOptions, SandboxState};
use super::webhooks::WebhookTarget;

/// Flags of `intentdesk sandbox`.
#[derive(Debug, Clone, clap::Args)]
pub struct SandboxArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7420")]
    pub listen: String,

    /// Faults at start, e.g. `overload=0.1,delay_ms=3000@0.1,redeliver=3`; `none` for
    /// none. Replace them at run time with `POST /_sandbox/faults`.
    #[arg(long, value_name = "SPEC", default_value = "none")]
    pub faults: FaultSpec,

    /// Where to post a webhook per created record. A URL without a path (such as
    /// `http://127.0.0.1:7410`) means the coordinator's `/v1/receipts/<connector>`.
    #[arg(long, value_name = "URL")]
    pub webhook_url: Option<Url>,

    /// File holding the bearer token presented with webhooks.
    #[arg(long, value_name = "F", requires = "webhook_url")]
    pub webhook_token_file: Option<PathBuf>,

    /// The connector name the coordinator knows this sandbox by.
    #[arg(long, value_name = "NAME", default_value = "erp")]
    pub connector: String,

    /// Seed for fault decisions, to reproduce a run; taken from the clock when absent.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// Runs the sandbox with `args` until Ctrl-C.
pub async fn run_cli(args: SandboxArgs) -> anyhow::Result<()> {
    let webhook = match &args.webhook_url {
        Some(url) => {
            let token = match &args.webhook_token_file {
                Some(path) => Some(read_token(path)?),
                None => {
                    tracing::warn!("no --webhook-token-file; webhooks go without a token");
                    None
                }
            };
            let url = receipts_url(url, &args.connector)?;
            tracing::info!(url = %url, "webhooks enabled");
            Some(WebhookTarget { url, token })
        }
        None => None,
    };
    let options = SandboxOptions {
        seed: args.seed,
        ..SandboxOptions::default()
    };
    let state = SandboxState::with_options(args.faults, webhook, options);
    let listener = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    server::run(listener, state, crate::serving::stop_requested())
        .await
        .context("sandbox server failed")
}

fn read_token(path: &PathBuf) -> anyhow::Result<String> {
    let raw = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the webhook token file {}", path.display()))?;
    let token = raw.trim();
    anyhow::ensure!(
        !token.is_empty(),
        "the webhook token file {} is empty",
        path.display()
    );
    Ok(token.to_owned())
}

/// The URL webhooks go to: `url` as given when it has a path, otherwise the
/// coordinator's receipts endpoint for `connector`.
pub fn receipts_url(url: &Url, connector: &str) -> anyhow::Result<Url> {
    anyhow::ensure!(
        matches!(url.scheme(), "http" | "https"),
        "the webhook URL must be http or https, got {}",
        url.scheme()
    );
    if url.path() != "/" {
        return Ok(url.clone());
    }
    anyhow::ensure!(
        !connector.is_empty()
            && connector
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "the connector name must be letters, digits, `-` or `_`, got `{connector}`"
    );
    let mut full = url.clone();
    full.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("the webhook URL cannot take a path"))?
        .clear()
        .extend(["v1", "receipts", connector]);
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::{SandboxArgs, receipts_url};
    use clap::Parser;
    use reqwest::Url;

    fn url(s: &str) -> Url {
        s.parse().expect("test URL is valid")
    }

    #[test]
    fn a_bare_coordinator_url_points_at_the_connector_receipts() {
        let full = receipts_url(&url("http://127.0.0.1:7410"), "erp").expect("valid");
        assert_eq!(full.as_str(), "http://127.0.0.1:7410/v1/receipts/erp");
    }

    #[test]
    fn a_url_with_a_path_is_used_as_given() {
        let given = url("http://127.0.0.1:9/hooks/in");
        assert_eq!(receipts_url(&given, "erp").expect("valid"), given);
    }

    #[test]
    fn a_connector_name_with_slashes_is_refused() {
        assert!(receipts_url(&url("http://127.0.0.1:7410"), "../x").is_err());
    }

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: SandboxArgs,
    }

    #[test]
    fn flags_have_the_documented_defaults() {
        let Wrapper { args } = Wrapper::try_parse_from(["sandbox"]).expect("defaults parse");
        assert_eq!(args.listen, "127.0.0.1:7420");
        assert_eq!(args.faults.to_string(), "none");
        assert_eq!(args.connector, "erp");
        assert!(args.webhook_url.is_none());
    }

    #[test]
    fn a_bad_fault_spec_is_a_flag_error_naming_the_item() {
        let err = Wrapper::try_parse_from(["sandbox", "--faults", "overload=2"])
            .err()
            .expect("refused");
        assert!(err.to_string().contains("overload=2"), "{err}");
    }

    #[test]
    fn a_token_file_needs_a_webhook_url() {
        assert!(Wrapper::try_parse_from(["sandbox", "--webhook-token-file", "t"]).is_err());
    }
}
