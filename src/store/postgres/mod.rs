//! The PostgreSQL backend: a [`Conn`](crate::store::sql::Conn) over the `tokio-postgres`
//! driver (run by a small runtime of each connection's own, as the store's operations are
//! synchronous; statements that need no answer of their own go with the next), the
//! schema's migrations, and a [`Backend`] whose store threads each own one connection: the
//! pool. Every write is a transaction of its own on one of the writer threads; several
//! coordinators may share one database, and the rows a write changes are locked for it
//! (the intent first, then its outbox rows, so two writes never wait on each other in a
//! circle).

mod conn;
pub mod schema;

use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use tokio_postgres::NoTls;

use super::db::{Backend, Db, ReadJob, WriteJob};
use super::queue::{Lane, WriteQueue};
use super::{Store, StoreError};
pub use conn::PgConn;

/// Store threads that write, each with its own connection.
pub const WRITERS: usize = 6;
/// Store threads that read.
pub const READERS: usize = 4;

/// A connection with its schema brought up to date.
pub fn connect(url: &str) -> Result<PgConn, StoreError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
        StoreError::Unavailable(format!(
            "the database URL {} is not valid: {e}",
            super::location::without_password(url)
        ))
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    notice_a_vanished_server(&mut config);
    config.application_name("intentdesk");
    let cannot = |e: &dyn std::fmt::Display| {
        StoreError::Unavailable(format!(
            "cannot connect to PostgreSQL at {}: {e}",
            super::location::without_password(url)
        ))
    };
    // The connection runs only while a statement waits for its answer, on this thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| cannot(&e))?;
    let (client, connection) = runtime
        .block_on(config.connect(NoTls))
        .map_err(|e| cannot(&e))?;
    let driver = runtime.spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "a PostgreSQL connection ended");
        }
    });
    let conn = PgConn::new(runtime, client, driver);
    // Notices ("relation already exists, skipping") are not worth an operator's log line.
    crate::store::sql::Conn::batch(&conn, "SET client_min_messages = warning")?;
    schema::migrate(&conn)?;
    Ok(conn)
}

/// The driver's idle time before the first keepalive probe when the URL names none: the
/// operating system's usual two hours.
const DRIVER_KEEPALIVE_IDLE: Duration = Duration::from_secs(2 * 60 * 60);

/// Notice within about a minute, not hours, a server that went away without closing the
/// connection (its machine lost, the network between cut): a store thread or the metric
/// follower waiting for an answer would otherwise wait on TCP's own timeouts, and hold
/// what it holds all that time. Probes start after 30 s of silence, 10 s apart, and three
/// unanswered end the connection; data unacknowledged for a minute ends it too. What the
/// URL names (`keepalives_idle`, `keepalives_interval`, `keepalives_retries`,
/// `tcp_user_timeout`) is kept; an idle time of exactly the driver's two hours reads as
/// unnamed.
fn notice_a_vanished_server(config: &mut tokio_postgres::Config) {
    if config.get_keepalives_idle() == DRIVER_KEEPALIVE_IDLE {
        config.keepalives_idle(Duration::from_secs(30));
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(Duration::from_secs(10));
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(3);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(Duration::from_secs(60));
    }
}

/// Open a store on the database at `url`.
pub fn open(url: &str) -> Result<Store, StoreError> {
    Ok(Store::on(Box::new(connect(url)?)))
}

/// [`open`] for reads: every transaction sees one snapshot (repeatable read), so a read of
/// several statements in one savepoint never shows a write half done; no statement starts
/// parallel workers, and each is planned for its own values. Writers stay at read committed
/// and take turns by row locks.
fn open_for_reads(url: &str) -> Result<Store, StoreError> {
    let store = open(url)?;
    store
        .conn()
        .batch("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")?;
    // A list's count over a million intents took 14 ms with two parallel workers and 6 ms
    // without: starting workers costs more than they save on reads this short, and the
    // coordinator's own threads want the cores.
    store
        .conn()
        .batch("SET max_parallel_workers_per_gather = 0")?;
    // A list's statement is prepared once per connection; a generic plan picked for one
    // tenant's filter is wrong for another whose rows are a hundred times fewer, so every
    // read is planned for its own values.
    store
        .conn()
        .batch("SET plan_cache_mode = force_custom_plan")?;
    // Named apart from the writers in `pg_stat_activity`, for whoever looks at what waits.
    store
        .conn()
        .batch("SET application_name = 'intentdesk reader'")?;
    // A read waiting on a lock another session holds (`VACUUM FULL`, a newer coordinator's
    // migration) gives up: it would otherwise wait as long as the lock is held, and so would
    // whatever waits for it (the metric index, the dashboard's reads behind it). The one
    // lock of the coordinators' own a read takes is the one that numbers pending events
    // before the feed is read (`events::sequence_pending`), held for a moment; after a long
    // lock on the feed, the first to number the backlog may hold it longer, and feed reads
    // then answer 503 until it is done.
    give_up_on_locks(&store, url)?;
    Ok(store)
}

/// [`open_for_reads`] for a long read on a connection of its own (the metric index's
/// whole load and its follower: 19-28 s a statement at a million intents): no statement
/// limit, whatever the URL's `options` set for the pool, which would otherwise end the
/// load every time and leave the index unloaded for ever.
fn open_for_long_reads(url: &str) -> Result<Store, StoreError> {
    let store = open_for_reads(url)?;
    store.conn().batch("SET statement_timeout = 0")?;
    Ok(store)
}

/// [`open`] for the writer threads. A write waiting on a lock another session holds (a
/// `LOCK TABLE`, a `VACUUM FULL`, a newer coordinator's migration) gives up as a read does,
/// and is answered 503: nothing was written, and the caller may send the same request
/// again. Without it every writer would wait as long as the lock is held, agents' requests
/// would hang until their own timeouts, and operators' commands with them. Writes of the
/// coordinators' own wait on each other's row locks only for one short transaction.
/// Background writes that give up (a claim, a recorded reply) are taken up again as after
/// a crash: the claim's lease runs out, and the reconciler looks the outcome up.
fn open_for_writes(url: &str) -> Result<Store, StoreError> {
    let store = open(url)?;
    store
        .conn()
        .batch("SET application_name = 'intentdesk writer'")?;
    give_up_on_locks(&store, url)?;
    Ok(store)
}

/// Let a statement wait [`LOCK_TIMEOUT`] for a lock, unless the URL's `options` set
/// `lock_timeout`. Set after connecting: the migrations' own lock, taken as a connection
/// opens, is still waited for.
fn give_up_on_locks(store: &Store, url: &str) -> Result<(), StoreError> {
    if !names_option(url, "lock_timeout") {
        store
            .conn()
            .batch(&format!("SET lock_timeout = {}", LOCK_TIMEOUT.as_millis()))?;
    }
    Ok(())
}

/// How long a read or a write waits for a lock before it is answered as unavailable.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether the URL's `options` set the server setting `name` (its value then stands):
/// `-c name=value`, `-cname=value` or `--name=value`.
fn names_option(url: &str, name: &str) -> bool {
    let Some(options) = url
        .parse::<tokio_postgres::Config>()
        .ok()
        .and_then(|config| config.get_options().map(str::to_string))
    else {
        return false;
    };
    let mut words = options.split_whitespace();
    while let Some(word) = words.next() {
        let setting = match word {
            "-c" => words.next().unwrap_or_default(),
            _ => word
                .strip_prefix("--")
                .or_else(|| word.strip_prefix("-c"))
                .unwrap_or_default(),
        };
        if setting.split('=').next() == Some(name) {
            return true;
        }
    }
    false
}

/// The store threads of one PostgreSQL database.
pub struct PgBackend {
    writes: Arc<WriteQueue>,
    reads: Mutex<mpsc::Sender<ReadJob>>,
    url: String,
}

impl PgBackend {
    /// Connect every store thread (so a wrong URL or credentials fail here, at start); the
    /// threads end when the backend is dropped. Each thread connects by itself: a
    /// connection runs its own small runtime, which may not be started, used or dropped
    /// on an async runtime's worker thread (a plain thread or a blocking task's is fine).
    pub fn open(url: &str) -> Result<PgBackend, StoreError> {
        let writes = WriteQueue::new();
        let (reads, read_queue) = mpsc::channel::<ReadJob>();
        let read_queue = Arc::new(Mutex::new(read_queue));
        let started = (|| {
            for n in 0..WRITERS {
                let writer = writes.writer();
                start(
                    &format!("store-writer-{n}"),
                    url,
                    open_for_writes,
                    move |store, url| {
                        let next = || writer.queue().take(1).pop();
                        serve(
                            store,
                            url,
                            open_for_writes,
                            next,
                            |store, mut job: WriteJob| {
                                let committed = write_one(store, &mut job);
                                if committed.is_ok() {
                                    writer.queue().committed(1);
                                }
                                job.finish()(committed.err().as_ref());
                            },
                        )
                    },
                )?;
            }
            for n in 0..READERS {
                let queue = read_queue.clone();
                start(
                    &format!("store-reader-{n}"),
                    url,
                    open_for_reads,
                    move |store, url| {
                        let next = || {
                            queue
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .recv()
                                .ok()
                        };
                        serve(store, url, open_for_reads, next, |store, job: ReadJob| {
                            job(store)
                        })
                    },
                )?;
            }
            Ok(())
        })();
        if let Err(e) = started {
            // The writers already started end with their queue.
            writes.close();
            return Err(e);
        }
        Ok(PgBackend {
            writes,
            reads: Mutex::new(reads),
            url: url.to_string(),
        })
    }
}

impl Drop for PgBackend {
    fn drop(&mut self) {
        self.writes.close();
    }
}

/// Run `job` in a transaction of its own and commit it. It runs first without savepoints:
/// each is two round trips to the server (`SAVEPOINT`, `RELEASE`), and an order's writes
/// made 24 of its 76 statements with them. Its writes whose count it does not read are
/// held back meanwhile and go with its next statement that waits for an answer
/// ([`PgConn`]). If it fails where a savepoint would have undone
/// part of it (a failed statement, an error or a panic inside an operation), the
/// transaction is rolled back and the job runs again with its savepoints, as SQLite's
/// writer runs a group again; its last run is its answer. One that failed to be sent again
/// later (a lock waited for [`LOCK_TIMEOUT`], a server out of resources) is rolled back and
/// answered so at once: a second run would only wait as long again.
fn write_one(store: &mut Store, job: &mut WriteJob) -> Result<(), StoreError> {
    let elide = |store: &Store, on: bool| {
        if let Some(elision) = store.conn().elision() {
            elision.set(on);
        }
    };
    store.conn().batch("BEGIN")?;
    elide(store, true);
    job.run(store);
    let taken = |store: &Store| {
        store
            .conn()
            .elision()
            .map_or((false, None), |e| (e.take_unrolled(), e.take_given_up()))
    };
    let (mut unrolled, mut given_up) = taken(store);
    // The writes the job held back go now, while one that fails still runs it again.
    if !unrolled && store.conn().flush().is_err() {
        (_, given_up) = taken(store);
        unrolled = true;
    }
    elide(store, false);
    if unrolled {
        store.conn().batch("ROLLBACK")?;
        if let Some(why) = given_up {
            return Err(StoreError::Unavailable(why));
        }
        return store.batch(|s| job.run(s));
    }
    let committed = store.conn().batch("COMMIT");
    if committed.is_err() {
        let _ = store.conn().batch("ROLLBACK");
    }
    committed
}

/// Start a store thread that connects to `url` and then runs `serve`; whether it connected
/// is known when this returns.
fn start(
    name: &str,
    url: &str,
    open: Opener,
    serve: impl FnOnce(Store, &str) + Send + 'static,
) -> Result<(), StoreError> {
    let (connected, outcome) = mpsc::channel::<Result<(), StoreError>>();
    let url = url.to_string();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || match open(&url) {
            Ok(store) => {
                let _ = connected.send(Ok(()));
                serve(store, &url);
            }
            Err(e) => {
                let _ = connected.send(Err(e));
            }
        })
        .map_err(|e| StoreError::Unavailable(format!("cannot start a store thread: {e}")))?;
    outcome
        .recv()
        .map_err(|_| StoreError::Unavailable("a store thread stopped while connecting".into()))?
}

/// How a store thread connects: [`open_for_writes`] or [`open_for_reads`].
type Opener = fn(&str) -> Result<Store, StoreError>;

/// Take jobs from `next` until it has none, reconnecting (with `open`) when the server was
/// lost.
fn serve<J>(
    mut store: Store,
    url: &str,
    open: Opener,
    mut next: impl FnMut() -> Option<J>,
    run: impl Fn(&mut Store, J),
) {
    while let Some(job) = next() {
        if store.conn().is_broken() {
            match open(url) {
                Ok(fresh) => store = fresh,
                Err(e) => tracing::error!(error = %e, "reconnecting to PostgreSQL failed"),
            }
        }
        run(&mut store, job);
    }
}

impl Backend for PgBackend {
    fn write(&self, job: WriteJob, lane: Lane) -> Result<(), StoreError> {
        self.writes.push(job, lane)
    }

    fn writer_alive(&self) -> bool {
        self.writes.is_open()
    }

    fn read(&self, job: ReadJob) -> Result<(), StoreError> {
        // Nothing panics while holding the queue (a send or a receive), so a poisoned lock
        // still holds a sound queue.
        self.reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(job)
            .map_err(|_| StoreError::Unavailable("the store's readers have stopped".into()))
    }

    fn open_reader(&self) -> Result<Store, StoreError> {
        open_for_long_reads(&self.url)
    }

    fn write_stats(&self) -> crate::store::queue::WriteStats {
        self.writes.stats()
    }
}

/// A PostgreSQL database as a [`Db`].
pub fn db(url: &str) -> Result<Db, StoreError> {
    Ok(Db::new(Arc::new(PgBackend::open(url)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noticed(url: &str) -> tokio_postgres::Config {
        let mut config: tokio_postgres::Config = url.parse().expect("URL");
        notice_a_vanished_server(&mut config);
        config
    }

    #[test]
    fn a_vanished_server_is_noticed_within_a_minute_unless_the_url_says_otherwise() {
        let config = noticed("postgresql://intentdesk@127.0.0.1/intentdesk");
        assert!(config.get_keepalives());
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(30));
        assert_eq!(
            config.get_keepalives_interval(),
            Some(Duration::from_secs(10))
        );
        assert_eq!(config.get_keepalives_retries(), Some(3));
        assert_eq!(
            config.get_tcp_user_timeout(),
            Some(&Duration::from_secs(60))
        );

        let config = noticed(
            "postgresql://intentdesk@127.0.0.1/intentdesk?keepalives_idle=5\
             &keepalives_interval=2&keepalives_retries=9&tcp_user_timeout=7",
        );
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(5));
        assert_eq!(
            config.get_keepalives_interval(),
            Some(Duration::from_secs(2))
        );
        assert_eq!(config.get_keepalives_retries(), Some(9));
        assert_eq!(config.get_tcp_user_timeout(), Some(&Duration::from_secs(7)));
    }

    #[test]
    fn a_lock_timeout_the_url_sets_stands() {
        let base = "postgresql://intentdesk@127.0.0.1/intentdesk";
        assert!(!names_option(base, "lock_timeout"));
        assert!(!names_option(
            &format!("{base}?options=-c%20statement_timeout%3D5000"),
            "lock_timeout"
        ));
        assert!(!names_option(
            &format!("{base}?options=-c%20deadlock_timeout%3D2000"),
            "lock_timeout"
        ));
        for set in [
            "-c%20lock_timeout%3D2000",
            "-clock_timeout%3D2000",
            "--lock_timeout%3D2000",
            "-c%20work_mem%3D64MB%20-c%20lock_timeout%3D2000",
        ] {
            assert!(
                names_option(&format!("{base}?options={set}"), "lock_timeout"),
                "{set}"
            );
        }
    }
}
