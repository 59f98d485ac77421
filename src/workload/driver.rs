//! The driver: turns the generator's plans into real HTTP calls against a coordinator, at
//! a steady rate, with bounded concurrency.
//!
//! For each plan the simulated agent creates its intent under its caller key (sometimes
//! sending the key again, from the same or the other interface, or with a changed amount),
//! authorises it, and then either reports its provider calls as attempts (failing over to
//! the next provider after a failure, hedging some reads and computations, waiting out
//! `Retry-After`, stopping when the coordinator refuses) or asks the coordinator to
//! dispatch. Provider calls are simulated: the driver waits their latency and reports the
//! outcome the plan drew. Dispatches are real: the coordinator sends them downstream.
//!
//! [`DriverConfig::steady`] is the embedded default's workload: two intents a second until
//! shutdown, nothing kept but totals.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

use super::error::WorkloadError;
use super::generator::{Call, CallOutcome, Generator, Mix, Plan, Replay, Step, Work};
use crate::client::ingest::{Answer, Created, IngestClient};
use crate::clock::SharedClock;
use crate::coordinator::create::MAX_BATCH;
use crate::domain::{ActionKey, AttemptOutcome, ConsequenceTier, IntentId, IntentState};
use crate::wire::{AttemptReport, BatchIntent, CreateIntent, Intent, NewAttempt};

/// How a workload runs.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    pub coordinator: Url,
    /// The agents' token: they create, report and dispatch.
    pub token: String,
    /// The approver's token (an approver, supervisor or admin); `None` approves with
    /// `token`, which the coordinator refuses unless that token may approve its own.
    pub approver_token: Option<String>,
    pub seed: u64,
    /// Goes into every caller key; unique per run against one database.
    pub run_tag: String,
    pub mix: Mix,
    /// New plans started per second.
    pub rate_per_sec: f64,
    /// Stop after this many plans; `None` runs until shutdown.
    pub intents: Option<u64>,
    /// Plans in progress at once.
    pub concurrency: usize,
    /// Plans whose intents one create request carries: 1 sends each plan's by
    /// `POST /v1/intents`; more create that many plans' intents together by
    /// `POST /v1/intents/batch`, as an agent splitting a requisition would (at most
    /// [`MAX_BATCH_PLANS`], and at most `concurrency`).
    pub batch: usize,
    pub request_timeout: Duration,
    /// How long one call is repeated while the coordinator is unreachable.
    pub patience: Duration,
    /// Keep every created intent in the log (for a report); totals are always kept.
    pub keep_intents: bool,
    /// Where the run reads the time (its start and end).
    pub clock: SharedClock,
}

impl DriverConfig {
    /// The embedded default: a modest steady workload until shutdown.
    pub fn steady(coordinator: Url, token: String, seed: u64, clock: SharedClock) -> DriverConfig {
        DriverConfig {
            coordinator,
            token,
            approver_token: None,
            seed,
            run_tag: run_tag(seed, clock.now_ms()),
            mix: Mix::default(),
            rate_per_sec: 2.0,
            intents: None,
            concurrency: 32,
            batch: 1,
            request_timeout: Duration::from_secs(10),
            patience: Duration::from_secs(30),
            keep_intents: false,
            clock,
        }
    }
}

/// The most plans one batch request carries: a plan may send its key a second time in the
/// same request, and a request holds at most [`MAX_BATCH`] intents.
pub const MAX_BATCH_PLANS: usize = MAX_BATCH / 2;

/// A short tag for a run: the seed mixed with the start time, as 8 hex digits.
pub fn run_tag(seed: u64, now_ms: u64) -> String {
    let mut mix = crate::domain::SplitMix64::new(seed ^ now_ms.rotate_left(23));
    format!("{:08x}", mix.next_u64() as u32)
}

/// What the agents did, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DriveTotals {
    /// Plans started (those cut short by a shutdown included).
    pub planned: u64,
    /// Distinct intents the agents were given ids for (repeats included).
    pub intents_created: u64,
    /// Requests that created intents, a batch's one request counted once.
    pub create_requests: u64,
    pub replays_sent: u64,
    /// Replays from the other interface (Persian against ASCII digits).
    pub cross_interface_replays: u64,
    /// Replays answered with the intent the key already named.
    pub replays_same_intent: u64,
    /// Replays answered with another intent: must stay 0.
    pub replays_other_intent: u64,
    pub changed_reuse_refused: u64,
    /// A changed reuse that was accepted: must stay 0.
    pub changed_reuse_accepted: u64,
    /// Instructions repeated on purpose under a new key.
    pub repeats: u64,
    pub attempts_reported: u64,
    /// Attempts the coordinator refused (budget, deadline, authorisation, pause).
    pub attempts_refused: u64,
    /// Attempts the coordinator marked late when they finished.
    pub late_reported: u64,
    pub dispatch_calls: u64,
    pub dispatches_enqueued: u64,
    pub errors: u64,
}

impl DriveTotals {
    fn add(&mut self, o: &DriveTotals) {
        self.planned += o.planned;
        self.intents_created += o.intents_created;
        self.create_requests += o.create_requests;
        self.replays_sent += o.replays_sent;
        self.cross_interface_replays += o.cross_interface_replays;
        self.replays_same_intent += o.replays_same_intent;
        self.replays_other_intent += o.replays_other_intent;
        self.changed_reuse_refused += o.changed_reuse_refused;
        self.changed_reuse_accepted += o.changed_reuse_accepted;
        self.repeats += o.repeats;
        self.attempts_reported += o.attempts_reported;
        self.attempts_refused += o.attempts_refused;
        self.late_reported += o.late_reported;
        self.dispatch_calls += o.dispatch_calls;
        self.dispatches_enqueued += o.dispatches_enqueued;
        self.errors += o.errors;
    }
}

/// One intent an agent was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driven {
    pub id: IntentId,
    pub action_key: ActionKey,
    pub tier: ConsequenceTier,
    pub caller_key: String,
}

/// Everything a run did.
#[derive(Debug, Clone, Default)]
pub struct DriveLog {
    pub totals: DriveTotals,
    pub intents: Vec<Driven>,
    /// The first few errors, for the operator running the load.
    pub errors: Vec<String>,
    pub started_at_ms: u64,
    pub finished_at_ms: u64,
}

const ERRORS_KEPT: usize = 20;

/// What one plan did.
#[derive(Debug, Default)]
struct PlanRun {
    totals: DriveTotals,
    intents: Vec<Driven>,
    error: Option<String>,
}

impl DriveLog {
    fn absorb_all(&mut self, runs: Vec<PlanRun>, keep_intents: bool) {
        for run in runs {
            self.absorb(run, keep_intents);
        }
    }

    fn absorb(&mut self, run: PlanRun, keep_intents: bool) {
        self.totals.add(&run.totals);
        if keep_intents {
            self.intents.extend(run.intents);
        }
        if let Some(error) = run.error {
            if self.errors.len() < ERRORS_KEPT {
                tracing::warn!(%error, "a workload plan failed");
                self.errors.push(error);
            } else {
                tracing::debug!(%error, "a workload plan failed");
            }
        }
    }
}

/// Drive plans until `config.intents` have run, or until `shutdown` resolves (then plans
/// in progress are abandoned).
pub async fn drive(
    config: &DriverConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<DriveLog, WorkloadError> {
    if !(config.rate_per_sec.is_finite() && config.rate_per_sec > 0.0) {
        return Err(WorkloadError::Invalid(
            "the rate must be a positive number of intents per second".into(),
        ));
    }
    if config.concurrency == 0 {
        return Err(WorkloadError::Invalid(
            "the concurrency must be at least 1".into(),
        ));
    }
    if !(1..=MAX_BATCH_PLANS).contains(&config.batch) || config.batch > config.concurrency {
        return Err(WorkloadError::Invalid(format!(
            "the batch must be from 1 to {MAX_BATCH_PLANS} plans a request (a plan may send \
             its key twice, and a request holds at most {MAX_BATCH} intents), and no more than \
             the concurrency ({})",
            config.concurrency
        )));
    }
    let mut api = IngestClient::new(
        config.coordinator.clone(),
        &config.token,
        config.request_timeout,
        config.patience,
        config.seed,
    )?;
    if let Some(approver) = &config.approver_token {
        api = api.with_approver(approver);
    }
    let mut generator = Generator::new(config.seed, &config.run_tag, config.mix);
    let permits = Arc::new(Semaphore::new(config.concurrency));
    let mut tasks: JoinSet<Vec<PlanRun>> = JoinSet::new();
    let mut log = DriveLog {
        started_at_ms: config.clock.now_ms(),
        ..DriveLog::default()
    };
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / config.rate_per_sec));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    let mut launched = 0u64;
    let interrupted = loop {
        while let Some(Ok(runs)) = tasks.try_join_next() {
            log.absorb_all(runs, config.keep_intents);
        }
        // A batch's plans start together, one tick apart from the next batch's.
        let plans = config
            .intents
            .map_or(config.batch as u64, |n| n.saturating_sub(launched))
            .min(config.batch as u64) as u32;
        if plans == 0 {
            break false;
        }
        let mut stopped = false;
        for _ in 0..plans {
            tokio::select! {
                () = &mut shutdown => {
                    stopped = true;
                    break;
                }
                _ = ticker.tick() => {}
            }
        }
        if stopped {
            break true;
        }
        let mut permit = tokio::select! {
            () = &mut shutdown => break true,
            permit = permits.clone().acquire_many_owned(plans) => match permit {
                Ok(permit) => permit,
                Err(_) => break true,
            },
        };
        // Each plan holds a place of its own, given back as soon as that plan ends.
        let plans: Vec<(Plan, Option<OwnedSemaphorePermit>)> = (0..plans)
            .map(|_| (generator.next_plan(), permit.split(1)))
            .collect();
        launched += plans.len() as u64;
        log.totals.planned += plans.len() as u64;
        let (api, mix, batched) = (api.clone(), config.mix, config.batch > 1);
        tasks.spawn(async move {
            if batched {
                return run_batch(&api, plans, mix).await;
            }
            let mut runs = Vec::with_capacity(plans.len());
            for (plan, place) in plans {
                runs.push(run_plan(&api, &plan, &mix).await);
                drop(place);
            }
            runs
        });
    };
    if interrupted {
        tasks.abort_all();
    }
    while let Some(done) = tasks.join_next().await {
        if let Ok(runs) = done {
            log.absorb_all(runs, config.keep_intents);
        }
    }
    log.finished_at_ms = config.clock.now_ms();
    Ok(log)
}

/// Carry one plan out; an error ends the plan and is recorded, never the run.
async fn run_plan(api: &IngestClient, plan: &Plan, mix: &Mix) -> PlanRun {
    let mut run = PlanRun::default();
    match carry_out(api, plan, mix, &mut run).await {
        Ok(()) => run,
        Err(e) => failed(run, plan, &e),
    }
}

async fn carry_out(
    api: &IngestClient,
    plan: &Plan,
    mix: &Mix,
    run: &mut PlanRun,
) -> Result<(), WorkloadError> {
    let view = create(api, plan, run).await?;
    go_on(api, plan, mix, &view, run).await
}

/// Carry out plans whose intents are created together, in one batch: each plan's intent
/// under its key and, where the plan sends its key again, that request too, as the next
/// intent of the same batch (which answers it as a replay, or refuses a changed order).
/// Each plan then goes on alone, side by side, holding its own `place` among the plans in
/// progress; an error ends only its own plan, and a plan that panicked is lost as a plan
/// sent alone would be.
async fn run_batch(
    api: &IngestClient,
    plans: Vec<(Plan, Option<OwnedSemaphorePermit>)>,
    mix: Mix,
) -> Vec<PlanRun> {
    let mut items = Vec::new();
    let mut places = Vec::with_capacity(plans.len());
    for (plan, _) in &plans {
        let mut item = |intent: &CreateIntent| {
            items.push(BatchIntent {
                idempotency_key: plan.caller_key.clone(),
                intent: intent.clone(),
            });
            items.len() - 1
        };
        let first = item(&plan.request);
        let again = match &plan.replay {
            Replay::None => None,
            Replay::Same => Some(item(&plan.request)),
            Replay::OtherInterface(other) | Replay::Changed(other) => Some(item(other)),
        };
        places.push((first, again));
    }
    // The one request is counted with the first plan's run, as it is sent.
    let sent = |at: usize| {
        let mut run = PlanRun::default();
        run.totals.create_requests = u64::from(at == 0);
        run
    };
    let results = match api.create_batch(items).await {
        Ok(results) => results,
        Err(e) => {
            return plans
                .iter()
                .enumerate()
                .map(|(at, (plan, _))| failed(sent(at), plan, &e))
                .collect();
        }
    };
    let created = |at: usize| -> Result<Created, WorkloadError> {
        let result = results.get(at).ok_or_else(|| {
            WorkloadError::Invalid(format!("the batch answered no result at {at}"))
        })?;
        IngestClient::batch_created(result)
    };
    let mut runs = Vec::with_capacity(plans.len());
    let mut going = JoinSet::new();
    for (at, ((plan, place), (first, again))) in plans.into_iter().zip(places).enumerate() {
        let mut run = sent(at);
        let opened = created(first).and_then(|first| {
            if let Some(again) = again {
                count_second(&mut run, &plan, &first, &created(again)?);
            }
            created_view(&plan, &first)
        });
        match opened {
            Err(e) => runs.push(failed(run, &plan, &e)),
            Ok(view) => {
                record(&mut run, &plan, &view);
                let api = api.clone();
                going.spawn(async move {
                    let run = match go_on(&api, &plan, &mix, &view, &mut run).await {
                        Ok(()) => run,
                        Err(e) => failed(run, &plan, &e),
                    };
                    drop(place);
                    run
                });
            }
        }
    }
    while let Some(done) = going.join_next().await {
        if let Ok(run) = done {
            runs.push(run);
        }
    }
    runs
}

/// `run` of `plan`, ended by `e`.
fn failed(mut run: PlanRun, plan: &Plan, e: &WorkloadError) -> PlanRun {
    run.totals.errors += 1;
    run.error = Some(format!("{}: {e}", plan.caller_key));
    run
}

/// After its intent was created: the plan's work on it, and its deliberate repeat.
async fn go_on(
    api: &IngestClient,
    plan: &Plan,
    mix: &Mix,
    view: &Intent,
    run: &mut PlanRun,
) -> Result<(), WorkloadError> {
    work_on(api, plan, mix, view, run).await?;
    if let Some(key) = &plan.repeat_key {
        run.totals.repeats += 1;
        run.totals.create_requests += 1;
        let again = api.create(key, &plan.request).await?;
        let view = again.view().cloned().ok_or_else(|| {
            WorkloadError::Invalid(format!(
                "the repeat key {key} already names an intent with other arguments"
            ))
        })?;
        record(run, plan, &view);
        work_on(api, plan, mix, &view, run).await?;
    }
    Ok(())
}

fn record(run: &mut PlanRun, plan: &Plan, view: &Intent) {
    run.totals.intents_created += 1;
    run.intents.push(Driven {
        id: view.id.clone(),
        action_key: view.action_key.clone(),
        tier: view.consequence,
        caller_key: plan.caller_key.clone(),
    });
}

/// Create the intent, sending its key again as the plan says; the intent the key names.
async fn create(
    api: &IngestClient,
    plan: &Plan,
    run: &mut PlanRun,
) -> Result<Intent, WorkloadError> {
    let key = plan.caller_key.as_str();
    // Each request is counted as it is sent.
    run.totals.create_requests += 1;
    let (first, again) = match &plan.replay {
        Replay::None => (api.create(key, &plan.request).await?, None),
        Replay::Same => {
            let first = api.create(key, &plan.request).await?;
            run.totals.create_requests += 1;
            (first, Some(api.create(key, &plan.request).await?))
        }
        Replay::OtherInterface(other) => {
            // Someone presses send in both interfaces at about the same time.
            run.totals.create_requests += 1;
            let (a, b) = tokio::join!(api.create(key, &plan.request), api.create(key, other));
            (a?, Some(b?))
        }
        Replay::Changed(changed) => {
            let first = api.create(key, &plan.request).await?;
            run.totals.create_requests += 1;
            (first, Some(api.create(key, changed).await?))
        }
    };
    if let Some(again) = &again {
        count_second(run, plan, &first, again);
    }
    let view = created_view(plan, &first)?;
    record(run, plan, &view);
    Ok(view)
}

/// The intent the plan's key names, from the answer to its first create.
fn created_view(plan: &Plan, first: &Created) -> Result<Intent, WorkloadError> {
    first.view().cloned().ok_or_else(|| {
        WorkloadError::Invalid(format!(
            "the caller key {} already names an intent with other arguments",
            plan.caller_key
        ))
    })
}

/// Count what the plan's second request under its key was answered, beside its first.
fn count_second(run: &mut PlanRun, plan: &Plan, first: &Created, again: &Created) {
    match &plan.replay {
        Replay::None => {}
        Replay::Same => count_replay(run, first, again),
        Replay::OtherInterface(_) => {
            run.totals.cross_interface_replays += 1;
            count_replay(run, first, again);
        }
        Replay::Changed(_) => match again {
            Created::Mismatch => run.totals.changed_reuse_refused += 1,
            Created::New(_) | Created::Replayed(_) => run.totals.changed_reuse_accepted += 1,
        },
    }
}

fn count_replay(run: &mut PlanRun, a: &Created, b: &Created) {
    run.totals.replays_sent += 1;
    match (a.view(), b.view()) {
        (Some(x), Some(y)) if x.id == y.id => run.totals.replays_same_intent += 1,
        _ => run.totals.replays_other_intent += 1,
    }
}

async fn work_on(
    api: &IngestClient,
    plan: &Plan,
    mix: &Mix,
    view: &Intent,
    run: &mut PlanRun,
) -> Result<(), WorkloadError> {
    if view.state == IntentState::Prepared {
        // A refusal means the intent already moved on (authorised by an earlier try).
        api.authorize(&view.id, None).await?;
    }
    match &plan.work {
        Work::Dispatch { calls } => {
            let answers = if *calls > 1 {
                let (a, b) = tokio::join!(api.dispatch(&view.id), api.dispatch(&view.id));
                vec![a?, b?]
            } else {
                vec![api.dispatch(&view.id).await?]
            };
            for answer in answers {
                run.totals.dispatch_calls += 1;
                if answer == Answer::Done(true) {
                    run.totals.dispatches_enqueued += 1;
                }
            }
            Ok(())
        }
        Work::Attempts(steps) => report_calls(api, plan, mix, view, steps, run).await,
    }
}

/// How one simulated call ended for the agent.
enum CallEnd {
    Succeeded,
    Refused,
    Failed {
        wait_ms: u64,
    },
    /// The coordinator's answer to starting the attempt was lost; the call was not made.
    Lost,
}

/// How many times a plan makes a call again after the answer to starting it was lost.
const LOST_REDOS: u32 = 3;

async fn report_calls(
    api: &IngestClient,
    plan: &Plan,
    mix: &Mix,
    view: &Intent,
    steps: &[Step],
    run: &mut PlanRun,
) -> Result<(), WorkloadError> {
    let mut n = 0usize;
    let mut redos = 0u32;
    let mut index = 0usize;
    while let Some(step) = steps.get(index) {
        let ends = match step {
            Step::Single(call) => {
                n += 1;
                vec![one_call(api, plan, view, call, None, n, run).await?]
            }
            Step::Hedge(a, b) => {
                n += 2;
                let group = format!("hedge-{}", plan.caller_key);
                let (mut ra, mut rb) = (PlanRun::default(), PlanRun::default());
                let (ea, eb) = tokio::join!(
                    one_call(api, plan, view, a, Some(&group), n - 1, &mut ra),
                    one_call(api, plan, view, b, Some(&group), n, &mut rb),
                );
                run.totals.add(&ra.totals);
                run.totals.add(&rb.totals);
                vec![ea?, eb?]
            }
        };
        if ends
            .iter()
            .any(|e| matches!(e, CallEnd::Succeeded | CallEnd::Refused))
        {
            return Ok(());
        }
        // A call whose start was lost was never made: make it again, a few times at most.
        if ends.iter().all(|e| matches!(e, CallEnd::Lost)) && redos < LOST_REDOS {
            redos += 1;
            continue;
        }
        index += 1;
        let wait_ms = ends
            .iter()
            .map(|e| {
                if let CallEnd::Failed { wait_ms } = e {
                    *wait_ms
                } else {
                    0
                }
            })
            .max()
            .unwrap_or(0);
        let backoff_ms = (100.0 * mix.latency_scale) as u64;
        tokio::time::sleep(Duration::from_millis(wait_ms.max(backoff_ms))).await;
    }
    Ok(())
}

/// Report one provider call: start the attempt, wait its latency, report how it ended.
async fn one_call(
    api: &IngestClient,
    plan: &Plan,
    view: &Intent,
    call: &Call,
    hedge_group: Option<&str>,
    n: usize,
    run: &mut PlanRun,
) -> Result<CallEnd, WorkloadError> {
    let request_id = format!("req_{}_{n}", plan.caller_key);
    let start = NewAttempt {
        kind: crate::workload::catalog::OPERATIONS
            .iter()
            .find(|o| o.operation == plan.request.operation)
            .map(|o| o.kind),
        provider: call.provider.to_string(),
        region: Some(call.region.to_string()),
        model: Some(call.model.to_string()),
        release_id: Some(call.release_id.clone()),
        worker: Some(call.worker.clone()),
        provider_request_id: Some(request_id.clone()),
        hedge_group: hedge_group.map(str::to_string),
        proposal_hash: None,
    };
    let attempt = match api.start_attempt(&view.id, &start).await {
        Ok(Answer::Done(id)) => id,
        Ok(Answer::Refused { .. }) => {
            run.totals.attempts_refused += 1;
            return Ok(CallEnd::Refused);
        }
        // The answer was lost: the attempt may have started, but the call was not made.
        Err(WorkloadError::Lost { .. }) => return Ok(CallEnd::Lost),
        Err(e) => return Err(e),
    };
    run.totals.attempts_reported += 1;
    tokio::time::sleep(Duration::from_millis(call.latency_ms)).await;
    let transient = if view.consequence == ConsequenceTier::Read {
        "transient_read"
    } else {
        "transient_compute"
    };
    let (mut end, result) = match call.outcome {
        CallOutcome::Succeeded => (
            AttemptReport {
                provider_request_id: Some(request_id),
                proposal_hash: call.proposal_hash.clone(),
                ..AttemptReport::new(AttemptOutcome::Succeeded)
            },
            CallEnd::Succeeded,
        ),
        CallOutcome::Transient { status } => (
            AttemptReport {
                error_class: Some(transient.to_string()),
                http_status: Some(status),
                ..AttemptReport::new(AttemptOutcome::Failed)
            },
            CallEnd::Failed { wait_ms: 0 },
        ),
        CallOutcome::Overloaded { retry_after_ms } => (
            AttemptReport {
                error_class: Some("overloaded".to_string()),
                http_status: Some(429),
                retry_after_ms: Some(retry_after_ms),
                ..AttemptReport::new(AttemptOutcome::Failed)
            },
            CallEnd::Failed {
                wait_ms: retry_after_ms,
            },
        ),
        CallOutcome::TimedOut => (
            AttemptReport {
                error_class: Some(transient.to_string()),
                ..AttemptReport::new(AttemptOutcome::TimedOut)
            },
            CallEnd::Failed { wait_ms: 0 },
        ),
    };
    // What the call cost: a simulated provider's price, 10 millionths per millisecond.
    end.cost_micros = Some(call.latency_ms.saturating_mul(10));
    if api.finish_attempt(&view.id, &attempt, &end).await? {
        run.totals.late_reported += 1;
    }
    Ok(result)
}
