//! Both backends for one test: a SQLite file in a temporary directory, and a fresh
//! database on the PostgreSQL server named by `INTENTDESK_TEST_POSTGRES` (`.ci/postgres
//! start` prints one). Without that variable the PostgreSQL half says so in one line and
//! passes: the SQLite half still runs.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use intentdesk::store::{Durability, Location, Store};

/// The variable naming the test server.
pub const POSTGRES_ENV: &str = "INTENTDESK_TEST_POSTGRES";

/// A fresh, empty database on the test server, as a URL; `None` (after one line saying how
/// to start a server) when there is none.
pub fn fresh_postgres() -> Option<String> {
    let Some(admin) = std::env::var(POSTGRES_ENV).ok().filter(|v| !v.is_empty()) else {
        eprintln!(
            "skipping the PostgreSQL half: set {POSTGRES_ENV}, e.g. \
             `export {POSTGRES_ENV}=$(.ci/postgres start)`"
        );
        return None;
    };
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "t_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    );
    // On a thread of its own: the blocking client may not run on an async runtime's thread.
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client = postgres::Client::connect(&admin, postgres::NoTls)
                .unwrap_or_else(|e| panic!("{POSTGRES_ENV}={admin} does not answer: {e}"));
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .expect("a test database is created");
        })
        .join()
        .expect("the test database is made")
    });
    let mut url = reqwest::Url::parse(&admin).expect("a URL");
    url.set_path(&format!("/{name}"));
    Some(url.to_string())
}

/// A store on a fresh PostgreSQL database, or `None` without a test server.
pub fn postgres_store() -> Option<Store> {
    let url = fresh_postgres()?;
    Some(intentdesk::store::postgres::open(&url).expect("the PostgreSQL store opens"))
}

/// A store on a new SQLite file.
pub fn sqlite_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("t.sqlite")).expect("store opens");
    (dir, store)
}

/// Tests run once on each backend: `on_both_backends! { fn name(store) { … } }` makes
/// `name::sqlite` and `name::postgres`, where `store` is the test's `Store`.
#[macro_export]
macro_rules! on_both_backends {
    ($($(#[$meta:meta])* fn $name:ident($store:ident) $body:block)*) => {$(
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn sqlite() {
                let (_dir, mut $store) = $crate::common::backends::sqlite_store();
                $body
            }

            #[test]
            fn postgres() {
                let Some(mut $store) = $crate::common::backends::postgres_store() else {
                    return;
                };
                $body
            }
        }
    )*};
}

/// Where a test's coordinator keeps its data.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A SQLite file in the test's directory.
    Sqlite,
    /// A fresh database of its own on the test server.
    Postgres(String),
}

impl Backend {
    /// The database for a coordinator whose files are in `dir`.
    pub fn database(&self, dir: &Path) -> Location {
        match self {
            Backend::Sqlite => Location::Sqlite(dir.join("coordinator.sqlite")),
            Backend::Postgres(url) => Location::Postgres(url.clone()),
        }
    }
}

/// Coordinator tests run once on each backend. Each named test is an `async fn
/// name(backend: Backend)`; `on_both_backends_tokio! { name, … }` makes `name::sqlite`
/// and `name::postgres` (which passes, after one line, without a test server). A list
/// after `multi_thread:` runs on two worker threads.
#[macro_export]
macro_rules! on_both_backends_tokio {
    (multi_thread: $($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::common::backends::Backend::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(url) = $crate::common::backends::fresh_postgres() {
                    super::$name($crate::common::backends::Backend::Postgres(url)).await
                }
            }
        }
    )*};
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn sqlite() {
                super::$name($crate::common::backends::Backend::Sqlite).await
            }

            #[tokio::test]
            async fn postgres() {
                if let Some(url) = $crate::common::backends::fresh_postgres() {
                    super::$name($crate::common::backends::Backend::Postgres(url)).await
                }
            }
        }
    )*};
}

/// Open the database at `location` and run `f` on it, on a thread of its own: a
/// PostgreSQL store is used, and dropped, off the async runtime's threads (its blocking
/// client has a runtime of its own).
pub fn with_store<T: Send>(location: &Location, f: impl FnOnce(&mut Store) -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut store =
                Store::open_at(location, Durability::PowerLoss).expect("open the database");
            f(&mut store)
        })
        .join()
        .expect("the store work finishes")
    })
}

/// Another session on `url` holding intent `id`'s row in an open transaction, until told.
pub async fn hold_row(
    url: String,
    id: String,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (held, holding) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("a session");
        let mut tx = client.transaction().expect("a transaction");
        tx.query_one("SELECT 1 FROM intents WHERE id = $1 FOR UPDATE", &[&id])
            .expect("the row is held");
        held.send(()).expect("the test waits");
        let _ = released.recv();
        tx.commit().expect("the row is let go");
    });
    holding.await.expect("the row is held");
    (release, thread)
}
