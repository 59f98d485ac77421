//! The embedded default as a newcomer starts it: `intentdesk demo --headless` in a terminal
//! that must not flood. Warnings and errors go to the terminal, the rest to a log file in
//! the data directory, and nothing written where no terminal is gets colour codes.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use intentdesk::workload::catalog::PROVIDERS;

/// Guards against a hang; never a stand-in for synchronisation.
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_logs_to_its_data_directory_and_keeps_the_terminal_quiet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_intentdesk"))
        .args(["demo", "--headless", "--data-dir"])
        .arg(dir.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the demo starts");
    let log = dir.path().join("intentdesk.log");
    // Running once the workload's intents have reached every provider: each provider's first
    // sighting is one certain line in the log of a new database. (How many other lines come
    // first depends on the faults the sandboxes draw, so a count of lines would not do.)
    let deadline = Instant::now() + PATIENCE;
    let sighted = |text: &str, name: &str| {
        text.lines()
            .any(|line| line.contains("first_seen=") && line.contains(&format!("provider {name}")))
    };
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("coordinator listening")
            && PROVIDERS.iter().all(|p| sighted(&text, p.name))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the demo's log never filled: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    common::terminate(&child).await;
    let mut stderr = child.stderr.take().expect("stderr");
    let mut terminal = String::new();
    tokio::time::timeout(PATIENCE, stderr.read_to_string(&mut terminal))
        .await
        .expect("the demo stops")
        .expect("read");
    let status = child.wait().await.expect("reaped");
    assert!(
        status.success(),
        "the demo exited with {status}: {terminal}"
    );

    assert!(
        !terminal.contains('\u{1b}'),
        "no colour codes where no terminal is: {terminal:?}"
    );
    assert!(
        !terminal.contains(" INFO "),
        "info lines stay out of the terminal: {terminal}"
    );
    // A fault-free start of the demo warns of nothing: first sightings of every name (a new
    // database's lot) are in the audit and the console, not the terminal.
    assert!(
        !terminal.contains(" WARN "),
        "nothing to warn of in the demo's normal work: {terminal}"
    );
    assert!(
        terminal.contains("intentdesk.log"),
        "the terminal says where the log is: {terminal}"
    );
    let written = std::fs::read_to_string(&log).expect("the log");
    assert!(written.contains(" INFO "), "{written}");
    assert!(!written.contains('\u{1b}'), "no colour codes in the file");
}

/// The embedded default's first minute shows the product's point: a payment whose outcome
/// cannot be proven waits, indeterminate, for an operator — and keeps waiting while the
/// workload goes on — beside a paused scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_shows_an_intent_waiting_for_an_operator_within_its_first_minute() {
    use intentdesk::client::Client;
    use intentdesk::embedded::{Embedded, scene};
    use intentdesk::workload::generator::LEGACY_CONNECTOR;

    let dir = tempfile::tempdir().expect("temp dir");
    let demo = Embedded::start(dir.path(), true)
        .await
        .expect("the demo starts");
    let client = Client::new(&demo.coordinator_url, &demo.token).expect("a client");
    let query = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let waiting = query(&[("state", "indeterminate"), ("provider", LEGACY_CONNECTOR)]);
    let started = Instant::now();
    let first = loop {
        if let Ok(page) = client.intents(&waiting).await
            && let Some(intent) = page.items.into_iter().next()
        {
            break intent;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no intent of {LEGACY_CONNECTOR} became indeterminate within a minute"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // It lasts: twenty more intents later (several of the reconciler's passes), it is still
    // waiting for an operator.
    let everything = query(&[("limit", "1")]);
    let total = |page: intentdesk::wire::IntentPage<_>| page.total;
    let seen = total(client.intents(&everything).await.expect("a page"));
    loop {
        let now = total(client.intents(&everything).await.expect("a page"));
        if now >= seen + 20 {
            break;
        }
        assert!(
            started.elapsed() < PATIENCE * 3,
            "the workload stalled at {now} intents"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let still = client.intent(first.id.as_str()).await.expect("the intent");
    assert_eq!(
        still.intent.state.wire(),
        "indeterminate",
        "{:?}",
        still.intent
    );

    let pauses = client.get_json("/v1/pauses", &[]).await.expect("pauses");
    assert!(
        pauses.to_string().contains(scene::PAUSE_COMMAND_ID),
        "the scene's pause is active: {pauses}"
    );
    demo.shutdown().await;
}
