//! What the integration tests share: the real parts started on loopback ([`deploy`]) and,
//! for the console's tests, a rig that drives them and the app from the test's thread
//! ([`console`]).
#![allow(dead_code)] // each test file uses part of it

pub mod backends;
pub mod deploy;

#[cfg(feature = "console")]
pub mod console;

/// Send SIGTERM to `child`, as a service manager stops a service.
pub async fn terminate(child: &tokio::process::Child) {
    let pid = child.id().expect("a running child").to_string();
    let sent = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(sent.success(), "SIGTERM is delivered");
}
