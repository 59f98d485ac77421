//! The dashboard's metric routes, aggregated here so the console only draws:
//!
//! - `GET /v1/metrics/chart?metric=&group_by=&bucket_secs=|buckets=&from=&to=&<filters>` —
//!   one time series per value of `group_by` (see `crate::metrics` for what
//!   each metric counts). Without `bucket_secs` the bucket is the first round step that
//!   makes at most `buckets` (default 300) buckets; without `from` the window starts at the
//!   first selected intent, without `to` it ends now.
//! - `GET /v1/metrics/histogram?group_by=&from=&to=&<filters>` — attempts per intent of the
//!   intents created in the window, with the budget most of them have.
//! - `GET /v1/metrics/overview?at=&<filters>` — the headline figures as of `at` (default
//!   now): the amplification, the indeterminate count and ages the top bar's badge watches.
//!
//! All three read one in-memory index shared by this router, brought up to date from the
//! change feed before each answer, and followed in the background about once a second
//! ([`follow`]) so that the answer after a burst of writes does not wait to read the burst.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};

use super::AppState;
use super::auth::Principal;
use super::error::ApiError;
use super::health::Liveness;
use super::operator::params::{FILTER_PARAMS, Params, RawQuery};
use crate::domain::Permission;
use crate::metrics::{self, ChartQuery, MetricIndex};
use crate::store::metric_source::MetricSource;
use crate::store::{Store, StoreError};
use crate::wire::{AttemptsHistogram, Chart, ChartMetric, GroupBy, Overview, PartStatus};

/// The most buckets one chart may have.
const MAX_BUCKETS: u64 = 100_000;
const DEFAULT_BUCKETS: u64 = 300;
/// Round bucket sizes, in seconds.
const STEPS_SECS: &[u64] = &[
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200,
    86_400, 172_800, 604_800,
];

/// The metric index, waited for without a thread: see [`Held`].
pub type Shared = Arc<tokio::sync::Mutex<Followed>>;

/// The metric index, and the last time bringing it up to date failed on the database.
pub struct Followed {
    index: MetricIndex,
    /// When a refresh last failed because the database did not answer in time, and why. A
    /// refresh that waited for the index meanwhile takes that answer instead of asking
    /// again: each would wait as long, one after another. A failure that came at once (a
    /// connection found lost) is not shared: the next refresh runs on another connection.
    failed: Option<(Instant, String)>,
}

impl Followed {
    pub fn new(index: MetricIndex) -> Followed {
        Followed {
            index,
            failed: None,
        }
    }
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/metrics/chart", get(chart))
        .route("/v1/metrics/histogram", get(histogram))
        .route("/v1/metrics/overview", get(overview))
}

/// Load the metric index in the background as the coordinator starts, on a connection of
/// its own, so the first dashboard does not wait for it (seconds at millions of attempts).
/// A dashboard asking meanwhile waits until it is loaded before it takes a read connection,
/// so lists and details are not held up behind it.
pub fn warm_up(state: &AppState) {
    let db = state.db.clone();
    let index = state.metrics.clone();
    state.metrics_ready.send_replace(false);
    // Loaded, failed or panicked: requests go on, and load what is missing themselves.
    let ready = ReadyWhenDropped {
        ready: state.metrics_ready.clone(),
        health: state.health.clone(),
        loaded: false,
    };
    state.health.set(INDEX_PART, PartStatus::Loading);
    tokio::task::spawn_blocking(move || {
        let mut ready = ready;
        let started = std::time::Instant::now();
        let loaded = db
            .open_reader()
            .and_then(|mut store| Held::blocking(&index).refresh(&mut store));
        match loaded {
            Ok(()) => {
                ready.loaded = true;
                tracing::info!(
                    ms = started.elapsed().as_millis() as u64,
                    "metric index loaded"
                )
            }
            Err(e) => tracing::warn!(error = %e, "the metric index was not loaded ahead"),
        }
    });
}

/// How often the metric index reads the change feed between requests.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// How long it waits after a read that failed before it tries again: a failed read may have
/// been a whole load, seconds at millions of attempts.
const FOLLOW_BACKOFF: std::time::Duration = std::time::Duration::from_secs(30);

/// The follower's part in `/healthz`.
pub(super) const FOLLOWER_PART: &str = "metric_follower";

/// Keep the metric index within about a second of the change feed, once the warm-up is over,
/// until the coordinator stops. While its reads fail `/healthz` shows it `failed` (requests
/// then bring the index up to date themselves), and `running` again once one succeeds. A
/// request still brings it up to date before it answers; this only leaves it little to
/// read. Without it, the first scrape of `/metrics` after twenty seconds of three thousand
/// orders a second read all of them while the dashboard's charts waited for the index
/// (0.6 s here, after 1.8 s when each intent took four statements).
pub async fn follow(state: AppState) {
    follow_at(state, FOLLOW_EVERY, FOLLOW_BACKOFF).await
}

/// [`follow`] every `every`, waiting `backoff` after a failed read.
async fn follow_at(state: AppState, every: std::time::Duration, backoff: std::time::Duration) {
    let mut stopping = state.stopping.clone();
    let mut ready = state.metrics_ready.subscribe();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reader = Kept(None);
    let mut failing = false;
    loop {
        let due = async {
            let _ = ready.wait_for(|ready| *ready).await;
            tick.tick().await;
        };
        if until_stopped(&mut stopping, due).await.is_none() {
            return;
        }
        let Some(read) = follow_step(&state, &mut reader, &mut stopping).await else {
            return;
        };
        let Err(error) = read else {
            if failing {
                tracing::info!("the metric index follows the change feed again");
                state.health.set(FOLLOWER_PART, PartStatus::Running);
            }
            failing = false;
            continue;
        };
        if !failing {
            tracing::warn!(%error, "the metric index could not follow the change feed; requests bring it up to date themselves");
            state.health.set(FOLLOWER_PART, PartStatus::Failed);
        }
        failing = true;
        if until_stopped(&mut stopping, tokio::time::sleep(backoff))
            .await
            .is_none()
        {
            return;
        }
    }
}

/// What `work` gives, or `None` once the coordinator stops first.
async fn until_stopped<T>(
    stopping: &mut tokio::sync::watch::Receiver<bool>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        done = work => Some(done),
        _ = stopping.wait_for(|stop| *stop) => None,
    }
}

/// One read of the follower on its own connection (`reader`, opened when it has none and
/// kept while reads succeed); `None` once the coordinator stops. A read in flight when it
/// stops is left to end by itself: on a database that stopped answering it could hold the
/// stop up for long.
async fn follow_step(
    state: &AppState,
    reader: &mut Kept,
    stopping: &mut tokio::sync::watch::Receiver<bool>,
) -> Option<Result<(), String>> {
    let failed = |e: &dyn std::fmt::Display| Some(Err(e.to_string()));
    // Connected before the index is taken: a connection waits for the server, and for a
    // newer coordinator's migration, with nobody's charts waiting behind it.
    let store = match reader.0.take() {
        Some(store) => store,
        None => {
            let db = state.db.clone();
            let open = tokio::task::spawn_blocking(move || open_follower(&db));
            match until_stopped(stopping, open).await? {
                Ok(Ok(store)) => store,
                Ok(Err(e)) => return failed(&e),
                Err(panicked) => return failed(&panicked),
            }
        }
    };
    let mut store = Kept(Some(store));
    // The index is waited for here, not on a blocking thread: a request's read that waits
    // on the database (a lock another session holds) holds no thread of ours.
    let index = until_stopped(stopping, Held::wait(&state.metrics)).await?;
    let read = tokio::task::spawn_blocking(move || follow_once(index, store.take()));
    match until_stopped(stopping, read).await? {
        Ok((kept, Ok(()))) => {
            *reader = Kept(kept);
            Some(Ok(()))
        }
        Ok((_, Err(e))) => failed(&e),
        Err(panicked) => failed(&panicked),
    }
}

/// The follower's connection between its reads. However the follower ends (stopped, or
/// dropped with the runtime), the connection is closed off the async threads: closing a
/// PostgreSQL connection blocks, which a tokio worker may not.
struct Kept(Option<Store>);

impl Kept {
    /// The connection, on a thread that may close it.
    fn take(&mut self) -> Store {
        self.0.take().expect("a kept connection is taken once")
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(store) = self.0.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            std::thread::spawn(move || drop(store));
        }
    }
}

/// The pages the follower's connection keeps: it reads what the last second changed, most
/// of it just written, so a small cache does; a reader of the shared pool would fill its 64
/// MiB with those pages, and every one of the pool's readers in turn.
const FOLLOWER_CACHE_KIB: i64 = 4_096;

/// The follower's own connection.
fn open_follower(db: &crate::store::Db) -> Result<Store, StoreError> {
    let store = db.open_reader()?;
    if store.conn().dialect() == crate::store::sql::Dialect::Sqlite {
        store
            .conn()
            .batch(&format!("PRAGMA cache_size = -{FOLLOWER_CACHE_KIB}"))?;
    }
    Ok(store)
}

/// Bring the index up to the feed on the follower's own connection; the connection is kept
/// for the next time unless the read failed.
fn follow_once(mut index: Held, mut store: Store) -> (Option<Store>, Result<(), StoreError>) {
    match index.refresh(&mut store) {
        Ok(()) => (Some(store), Ok(())),
        Err(e) => (None, Err(e)),
    }
}

/// The smallest round bucket that splits `span_ms` into at most `buckets`.
pub fn bucket_for(span_ms: u64, buckets: u64) -> u64 {
    let wanted = span_ms.div_ceil(buckets.max(1) * 1000).max(1);
    STEPS_SECS
        .iter()
        .copied()
        .find(|&s| s >= wanted)
        .unwrap_or_else(|| wanted.div_ceil(86_400) * 86_400)
}

/// The metric index's part in `/healthz`.
const INDEX_PART: &str = "metric_index";

/// Marks the metric index ready when the warm-up ends, however it ends (loaded, failed or
/// panicked: requests go on and load what is missing themselves), and says which in
/// `/healthz`.
struct ReadyWhenDropped {
    ready: Arc<tokio::sync::watch::Sender<bool>>,
    health: Arc<Liveness>,
    loaded: bool,
}

impl Drop for ReadyWhenDropped {
    fn drop(&mut self) {
        let status = if self.loaded {
            PartStatus::Ready
        } else {
            PartStatus::Failed
        };
        self.health.set(INDEX_PART, status);
        self.ready.send_replace(true);
    }
}

/// The metric index held for one refresh and what is read from it after. It is waited for
/// before a store reader is taken, never by a reader: a refresh that waits on the database
/// (a lock another session holds, until the readers' lock timeout) then keeps one reader
/// busy, not every reader with a dashboard request queued behind it, and lists and details
/// go on answering. After a panic while it was held the index may be half brought up to
/// date, so it is dropped and loaded anew from the store by the next refresh.
pub(super) struct Held {
    followed: tokio::sync::OwnedMutexGuard<Followed>,
    /// When this holder began to wait for the index.
    since: Instant,
}

/// How long a refresh must have waited before it failed for those who waited behind it to
/// take its answer.
const SHARED_FAILURE: std::time::Duration = std::time::Duration::from_secs(1);

impl Held {
    async fn wait(index: &Shared) -> Held {
        let since = Instant::now();
        Held {
            followed: index.clone().lock_owned().await,
            since,
        }
    }

    /// On a thread that may block (never a tokio worker).
    fn blocking(index: &Shared) -> Held {
        let since = Instant::now();
        Held {
            followed: index.clone().blocking_lock_owned(),
            since,
        }
    }

    /// Bring the index up to the feed on `store`, unless a refresh failed on the database
    /// while this one waited: its answer is this one's.
    fn refresh(&mut self, source: &mut dyn MetricSource) -> Result<(), StoreError> {
        if let Some((at, why)) = &self.followed.failed
            && *at >= self.since
        {
            return Err(StoreError::Unavailable(why.clone()));
        }
        let began = Instant::now();
        match metrics::refresh(&mut self.followed.index, source) {
            Ok(()) => {
                self.followed.failed = None;
                Ok(())
            }
            Err(StoreError::Unavailable(why)) => {
                if began.elapsed() >= SHARED_FAILURE {
                    self.followed.failed = Some((Instant::now(), why.clone()));
                }
                Err(StoreError::Unavailable(why))
            }
            Err(e) => Err(e),
        }
    }
}

impl Deref for Held {
    type Target = MetricIndex;
    fn deref(&self) -> &MetricIndex {
        &self.followed.index
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::warn!("a panic while the metric index was held; loading it anew");
            let releases = self.followed.index.releases().clone();
            self.followed.index = MetricIndex::with_releases(releases);
        }
    }
}

/// Run `f` with the index brought up to date on a read connection.
pub(super) async fn with_index<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&mut Store, &MetricIndex) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let _ = state
        .metrics_ready
        .subscribe()
        .wait_for(|ready| *ready)
        .await;
    let mut index = Held::wait(&state.metrics).await;
    Ok(state
        .db
        .read(move |store| {
            index.refresh(store)?;
            f(store, &index)
        })
        .await?)
}

fn group_by(p: &mut Params) -> GroupBy {
    match p.text("group_by") {
        None => GroupBy::None,
        Some(raw) => GroupBy::parse(&raw).unwrap_or_else(|| {
            let names: Vec<&str> = GroupBy::ALL.iter().map(|g| g.as_str()).collect();
            p.fail(
                "group_by",
                format!("unknown dimension; expected one of: {}", names.join(", ")),
            );
            GroupBy::None
        }),
    }
}

async fn chart(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<Chart>, ApiError> {
    principal.require(Permission::Read, "read metrics")?;
    let mut p = Params::new(
        query,
        &[
            FILTER_PARAMS,
            &["metric", "group_by", "bucket_secs", "buckets", "from", "to"],
        ],
    )?;
    let filter = p.filter(&principal);
    let names = || {
        ChartMetric::ALL
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let metric = match p.text("metric") {
        Some(raw) => ChartMetric::parse(&raw).or_else(|| {
            p.fail(
                "metric",
                format!("unknown metric; expected one of: {}", names()),
            );
            None
        }),
        None => {
            p.fail("metric", format!("required; one of: {}", names()));
            None
        }
    };
    let group_by = group_by(&mut p);
    let bucket_secs = p.number("bucket_secs", 1u64, 7 * 86_400);
    let buckets = p.number("buckets", 1u64, 10_000).unwrap_or(DEFAULT_BUCKETS);
    let from = p.number("from", 0u64, u64::MAX);
    let to = p.number("to", 0u64, u64::MAX);
    if let (Some(f), Some(t)) = (from, to)
        && f >= t
    {
        p.fail("from", "must be before `to`");
    }
    p.finish()?;
    let Some(metric) = metric else {
        return Err(ApiError::bad_request("no metric"));
    };
    let now = state.clock.now_ms();
    let chart = with_index(&state, move |store, index| {
        let to_ms = to.or(filter.until_ms).unwrap_or(now);
        let from_ms = match from.or(filter.since_ms) {
            Some(f) => f,
            None => match metrics::first_created(store, index, &filter)? {
                Some(first) if first < to_ms => first,
                _ => to_ms.saturating_sub(3_600_000),
            },
        }
        .min(to_ms.saturating_sub(1000));
        let span = to_ms - from_ms;
        let bucket_secs = bucket_secs.unwrap_or_else(|| bucket_for(span, buckets));
        if span / (bucket_secs * 1000) > MAX_BUCKETS {
            return Err(StoreError::Conflict(format!(
                "the window would have more than {MAX_BUCKETS} buckets; use larger buckets"
            )));
        }
        let q = ChartQuery {
            metric,
            group_by,
            bucket_ms: bucket_secs * 1000,
            from_ms,
            to_ms,
            now_ms: now.min(to_ms),
        };
        metrics::chart(store, index, &q, &filter)
    })
    .await?;
    Ok(Json(chart))
}

async fn histogram(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<AttemptsHistogram>, ApiError> {
    principal.require(Permission::Read, "read metrics")?;
    let mut p = Params::new(query, &[FILTER_PARAMS, &["group_by", "from", "to"]])?;
    let filter = p.filter(&principal);
    let group_by = group_by(&mut p);
    let from = p.number("from", 0u64, u64::MAX).unwrap_or(0);
    let to = p.number("to", 0u64, u64::MAX).unwrap_or(u64::MAX);
    p.finish()?;
    let h = with_index(&state, move |store, index| {
        metrics::attempts_histogram(store, index, group_by, &filter, from, to)
    })
    .await?;
    Ok(Json(h))
}

async fn overview(
    State(state): State<AppState>,
    principal: Principal,
    query: RawQuery,
) -> Result<Json<Overview>, ApiError> {
    principal.require(Permission::Read, "read metrics")?;
    let mut p = Params::new(query, &[FILTER_PARAMS, &["at"]])?;
    let filter = p.filter(&principal);
    let at = p
        .number("at", 0u64, u64::MAX)
        .unwrap_or_else(|| state.clock.now_ms());
    p.finish()?;
    let o = with_index(&state, move |store, index| {
        metrics::overview(store, index, &filter, at)
    })
    .await?;
    Ok(Json(o))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::{FOLLOWER_PART, Followed, Held, Shared, bucket_for, follow, follow_at, warm_up};
    use crate::coordinator::{AppState, Config};
    use crate::metrics::MetricIndex;
    use crate::metrics::tests::new_intent;
    use crate::store::IntentFilter;
    use crate::store::StoreError;
    use crate::store::metric_source::{
        Changed, EventMark, IndexAttempt, IndexIntent, IndexSpan, MetricSource,
    };
    use crate::store::ops::Intents;
    use crate::wire::PartStatus;

    /// A coordinator's state on the SQLite file at `path`, its metric index warmed up: from
    /// then on writes reach the index only through a follower, or a request (none here).
    async fn warmed_up(path: &std::path::Path) -> (AppState, tokio::sync::watch::Sender<bool>) {
        let text = format!(
            "listen = \"127.0.0.1:0\"\ndatabase = '{}'\n",
            path.display()
        );
        let config = Config::parse(&text, "test").expect("config");
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let state = AppState::new(config, stopping).expect("state");
        warm_up(&state);
        let mut ready = state.metrics_ready.subscribe();
        ready.wait_for(|ready| *ready).await.expect("warm-up");
        (state, stop)
    }

    async fn create(state: &AppState, n: u64) {
        let intent = new_intent(n);
        state
            .db
            .write(move |s| s.create_or_replay(&intent).map(|_| ()))
            .await
            .expect("create");
    }

    /// No request reads the index here: only the follower can bring it up to the feed, and
    /// it stops with the coordinator.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_index_follows_the_feed_between_requests() {
        let dir = tempfile::tempdir().expect("dir");
        let (state, stop) = warmed_up(&dir.path().join("f.sqlite")).await;
        let follower = tokio::spawn(follow(state.clone()));
        for n in 1..=3 {
            create(&state, n).await;
        }
        let last = state.db.read(|s| s.last_event()).await.expect("feed");
        assert!(last >= 3, "{last}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while state.metrics.lock().await.index.followed_to() != last {
            assert!(
                Instant::now() < deadline,
                "the index never followed the feed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.send(true).expect("stop");
        tokio::time::timeout(Duration::from_secs(30), follower)
            .await
            .expect("the follower stops with the coordinator")
            .expect("the follower ended without a panic");
    }

    /// The follower's reads fail while the change feed's table is away (as on a database
    /// that stopped answering): `/healthz` says so, and once the table is back the follower
    /// reads again after its back-off (here it reads every 10 ms and backs off 50 ms).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_follower_that_cannot_read_says_so_and_follows_again_once_it_can() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("f.sqlite");
        let (state, stop) = warmed_up(&path).await;
        state.health.set(FOLLOWER_PART, PartStatus::Running);
        let follower = tokio::spawn(follow_at(
            state.clone(),
            Duration::from_millis(10),
            Duration::from_millis(50),
        ));
        let status = |state: &AppState| state.health.snapshot()[FOLLOWER_PART].status;
        let deadline = Instant::now() + Duration::from_secs(60);
        let wait_for = |what: &str| {
            assert!(Instant::now() < deadline, "{what}");
        };

        let side = rusqlite::Connection::open(&path).expect("side connection");
        side.execute_batch("ALTER TABLE events RENAME TO events_away")
            .expect("away");
        while status(&state) != PartStatus::Failed {
            wait_for("the failing follower never showed in the health parts");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        side.execute_batch("ALTER TABLE events_away RENAME TO events")
            .expect("back");
        create(&state, 1).await;
        let last = state.db.read(|s| s.last_event()).await.expect("feed");
        while status(&state) != PartStatus::Running
            || state.metrics.lock().await.index.followed_to() != last
        {
            wait_for("the follower never followed the feed again");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.send(true).expect("stop");
        follower.await.expect("the follower ended without a panic");
    }

    /// A feed that fails as a database that does not answer would, after `delay`.
    struct Unanswered {
        delay: Duration,
        asked: usize,
    }

    impl MetricSource for Unanswered {
        fn snapshot(
            &mut self,
            f: &mut dyn FnMut(&mut dyn MetricSource) -> Result<(), StoreError>,
        ) -> Result<(), StoreError> {
            f(self)
        }
        fn last_event(&mut self) -> Result<i64, StoreError> {
            self.asked += 1;
            std::thread::sleep(self.delay);
            Err(StoreError::Unavailable(
                "canceling statement due to lock timeout".into(),
            ))
        }
        fn first_event(&mut self) -> Result<i64, StoreError> {
            unreachable!("read after the failure")
        }
        fn event_mark(&mut self, _: i64) -> Result<EventMark, StoreError> {
            unreachable!("read after the failure")
        }
        fn changed(&mut self, _: i64, _: i64, _: &mut Changed) -> Result<(), StoreError> {
            unreachable!("read after the failure")
        }
        fn each_intent(
            &mut self,
            _: &mut dyn FnMut(IndexIntent) -> Result<(), StoreError>,
        ) -> Result<(), StoreError> {
            unreachable!("read after the failure")
        }
        fn each_attempt(
            &mut self,
            _: &mut dyn FnMut(IndexAttempt) -> Result<(), StoreError>,
        ) -> Result<(), StoreError> {
            unreachable!("read after the failure")
        }
        fn indeterminate_spans(&mut self) -> Result<Vec<IndexSpan>, StoreError> {
            unreachable!("read after the failure")
        }
        fn duplicate_effects(&mut self) -> Result<Vec<(i64, u64)>, StoreError> {
            unreachable!("read after the failure")
        }
        fn selection(&mut self, _: &IntentFilter) -> Result<Option<HashSet<i64>>, StoreError> {
            unreachable!("read after the failure")
        }
    }

    /// How many times the feed is asked when one refresh fails `delay` into its read while
    /// a second waits for the index.
    async fn asked_with_one_waiting(delay: Duration) -> usize {
        let shared: Shared = Arc::new(tokio::sync::Mutex::new(Followed::new(
            MetricIndex::default(),
        )));
        let source = Arc::new(std::sync::Mutex::new(Unanswered { delay, asked: 0 }));
        let first = Held::wait(&shared).await;
        let second = Held::wait(&shared);
        tokio::pin!(second);
        // Polled once, the second has begun to wait, behind the first.
        tokio::select! {
            biased;
            _ = &mut second => panic!("the index was free"),
            () = std::future::ready(()) => {}
        }
        let refresh = |mut held: Held| {
            let source = source.clone();
            tokio::task::spawn_blocking(move || held.refresh(&mut *source.lock().expect("source")))
        };
        let failed = refresh(first).await.expect("the first refresh ran");
        assert!(
            matches!(failed, Err(StoreError::Unavailable(_))),
            "{failed:?}"
        );
        let second = refresh(second.await).await.expect("the second refresh ran");
        assert!(
            matches!(second, Err(StoreError::Unavailable(_))),
            "{second:?}"
        );
        source.lock().map(|s| s.asked).expect("source")
    }

    /// A refresh that waited long before it failed answers those who waited behind it; one
    /// that failed at once (a connection found lost) does not: they ask on their own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_failure_answers_those_who_waited_and_a_quick_one_does_not() {
        assert_eq!(
            asked_with_one_waiting(Duration::from_millis(1_100)).await,
            1
        );
        assert_eq!(asked_with_one_waiting(Duration::ZERO).await, 2);
    }

    #[test]
    fn buckets_are_round_and_never_too_many() {
        assert_eq!(bucket_for(3_600_000, 300), 15);
        assert_eq!(bucket_for(3_600_000, 60), 60);
        assert_eq!(bucket_for(30 * 86_400_000, 300), 10_800);
        assert_eq!(bucket_for(1, 300), 1);
        assert_eq!(bucket_for(400 * 86_400_000, 10), 3_456_000);
    }
}
