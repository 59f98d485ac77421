//! The embedded default as a newcomer starts it: `intentdesk demo --headless` in a terminal
//! that must not flood. Warnings and errors go to the terminal, the rest to a log file in
//! the data directory, and nothing written where no terminal is gets colour codes.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

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
    // Running once the workload's intents reach the log.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("coordinator listening") && text.lines().count() > 20 {
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
    assert!(
        terminal.contains("intentdesk.log"),
        "the terminal says where the log is: {terminal}"
    );
    let written = std::fs::read_to_string(&log).expect("the log");
    assert!(written.contains(" INFO "), "{written}");
    assert!(!written.contains('\u{1b}'), "no colour codes in the file");
}
