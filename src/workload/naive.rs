//! The naive baseline: the same plans, sent by a client with no coordinator, that retries
//! at every layer and makes up a fresh idempotency key for every HTTP request.
//!
//! Three nested layers each retry what the layer beneath gave up on: the agent (3 tries,
//! 500 ms apart), its SDK (3 tries, 100 ms apart) and the HTTP client (2 tries, at once):
//! up to 18 calls for one instruction. Any failure counts (a 503, a refused or dropped
//! connection, a timeout); a lost answer is taken as a failure and retried under a new
//! key. A repeated instruction (a replay from the other interface, a changed amount under
//! the same caller key) is simply sent again. Provider calls for non-mutating work follow
//! the plan's drawn outcomes in turn.
//!
//! Its report uses the sandbox's ground truth per key, grouped by logical intent (one plan,
//! or one deliberate repeat): a duplicate effect is a second effect of one instruction.
//! `attempts` counts every call of every layer; `late_results` counts downstream calls the
//! client saw fail (a timeout, a lost answer) that took effect all the same; there is no
//! `indeterminate`: the naive client relabels every unknown outcome as a failure, and
//! `naive.failed_but_applied` counts the instructions where that was wrong.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

use super::catalog::resource_of;
use super::error::WorkloadError;
use super::generator::{Call, CallOutcome, Generator, Mix, Plan, Replay, Step, Work};
use super::report::{Amplification, Indeterminate, NaiveFigures, Report};
use crate::client::ingest::with_trailing_slash;
use crate::clock::SharedClock;
use crate::domain::metrics::goodput_per_min;
use crate::wire::CreateIntent;

/// Tries per layer, outermost first: agent, SDK, HTTP client.
const LAYERS: [u32; 3] = [3, 3, 2];
/// Waits before a layer's next try, outermost first.
const LAYER_WAIT_MS: [u64; 3] = [500, 100, 0];

/// How the baseline runs.
#[derive(Debug, Clone)]
pub struct NaiveConfig {
    pub sandbox: Url,
    pub seed: u64,
    pub run_tag: String,
    pub mix: Mix,
    pub rate_per_sec: f64,
    pub intents: u64,
    pub concurrency: usize,
    /// One downstream call's timeout (give it the connector's `timeout_ms`).
    pub call_timeout: Duration,
    /// Where the run reads the time.
    pub clock: SharedClock,
}

/// One instruction's calls.
#[derive(Debug, Default)]
struct Instruction {
    calls: u64,
    downstream_calls: u64,
    /// Keys of downstream calls, with whether the client saw it succeed.
    keys: Vec<(String, bool)>,
    succeeded: bool,
    budget: u32,
}

/// Run the baseline and report it; `faults` is only echoed in the report.
pub async fn run_naive(config: &NaiveConfig, faults: &str) -> Result<Report, WorkloadError> {
    if !(config.rate_per_sec.is_finite() && config.rate_per_sec > 0.0) || config.concurrency == 0 {
        return Err(WorkloadError::Invalid(
            "the rate and the concurrency must be positive".into(),
        ));
    }
    let http = crate::tls::client(None)
        .map_err(|e| WorkloadError::Invalid(e.to_string()))?
        .timeout(config.call_timeout)
        .no_proxy()
        .pool_max_idle_per_host(64)
        .build()
        .map_err(|e| WorkloadError::Invalid(format!("cannot build the HTTP client: {e}")))?;
    let sandbox = with_trailing_slash(config.sandbox.clone());
    let started_at_ms = config.clock.now_ms();
    let mut generator = Generator::new(config.seed, &config.run_tag, config.mix);
    let permits = Arc::new(Semaphore::new(config.concurrency));
    let mut tasks: JoinSet<Vec<Instruction>> = JoinSet::new();
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / config.rate_per_sec));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    for _ in 0..config.intents {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| WorkloadError::Invalid("the concurrency limit closed".into()))?;
        ticker.tick().await;
        let plan = generator.next_plan();
        let (http, sandbox, mix) = (http.clone(), sandbox.clone(), config.mix);
        tasks.spawn(async move {
            let done = run_plan(&http, &sandbox, &plan, &mix).await;
            drop(permit);
            done
        });
    }
    let mut instructions = Vec::new();
    while let Some(done) = tasks.join_next().await {
        if let Ok(list) = done {
            instructions.extend(list);
        }
    }
    let finished_at_ms = config.clock.now_ms();
    tally(
        &http,
        &sandbox,
        instructions,
        config.seed,
        faults,
        started_at_ms,
        finished_at_ms,
    )
    .await
}

/// The plan's instructions: the original (with its replays) and any deliberate repeat.
async fn run_plan(
    http: &reqwest::Client,
    sandbox: &Url,
    plan: &Plan,
    mix: &Mix,
) -> Vec<Instruction> {
    let mut first = Instruction {
        budget: plan.request.max_attempts,
        ..Instruction::default()
    };
    send(http, sandbox, plan, &plan.request, mix, &mut first, "a").await;
    match &plan.replay {
        Replay::None => {}
        Replay::Same => send(http, sandbox, plan, &plan.request, mix, &mut first, "b").await,
        Replay::OtherInterface(other) | Replay::Changed(other) => {
            send(http, sandbox, plan, other, mix, &mut first, "b").await
        }
    }
    let mut out = vec![first];
    if plan.repeat_key.is_some() {
        let mut repeat = Instruction {
            budget: plan.request.max_attempts,
            ..Instruction::default()
        };
        send(http, sandbox, plan, &plan.request, mix, &mut repeat, "r").await;
        out.push(repeat);
    }
    out
}

/// Send one instruction through every layer until a call succeeds or all layers give up.
async fn send(
    http: &reqwest::Client,
    sandbox: &Url,
    plan: &Plan,
    request: &CreateIntent,
    mix: &Mix,
    into: &mut Instruction,
    tag: &str,
) {
    let calls: Vec<&Call> = match &plan.work {
        Work::Attempts(steps) => steps
            .iter()
            .flat_map(|s| match s {
                Step::Single(c) => vec![c],
                Step::Hedge(a, b) => vec![a, b],
            })
            .collect(),
        Work::Dispatch { .. } => Vec::new(),
    };
    let mut n = 0usize;
    for layer0 in 0..LAYERS[0] {
        for layer1 in 0..LAYERS[1] {
            for layer2 in 0..LAYERS[2] {
                n += 1;
                into.calls += 1;
                let ok = match resource_of(&request.operation) {
                    Some(resource) => {
                        let key = format!("naive-{}-{tag}{n}", plan.caller_key);
                        let ok = create(http, sandbox, resource, &key, &request.args).await;
                        into.downstream_calls += 1;
                        into.keys.push((key, ok));
                        ok
                    }
                    None => simulate(calls.get((n - 1) % calls.len().max(1)).copied()).await,
                };
                if ok {
                    into.succeeded = true;
                    return;
                }
                if layer2 + 1 < LAYERS[2] {
                    pause(LAYER_WAIT_MS[2], mix).await;
                }
            }
            if layer1 + 1 < LAYERS[1] {
                pause(LAYER_WAIT_MS[1], mix).await;
            }
        }
        if layer0 + 1 < LAYERS[0] {
            pause(LAYER_WAIT_MS[0], mix).await;
        }
    }
}

async fn pause(ms: u64, mix: &Mix) {
    tokio::time::sleep(Duration::from_millis(
        (ms as f64 * mix.latency_scale) as u64,
    ))
    .await;
}

/// A provider call as the plan drew it; the naive client ignores `Retry-After`.
async fn simulate(call: Option<&Call>) -> bool {
    let Some(call) = call else { return true };
    tokio::time::sleep(Duration::from_millis(call.latency_ms)).await;
    call.outcome == CallOutcome::Succeeded
}

/// One downstream create under `key`; true when the client saw it succeed.
async fn create(
    http: &reqwest::Client,
    sandbox: &Url,
    resource: &str,
    key: &str,
    args: &Value,
) -> bool {
    let Ok(url) = sandbox.join(resource) else {
        return false;
    };
    match http
        .post(url)
        .header("Idempotency-Key", key)
        .json(args)
        .send()
        .await
    {
        Ok(response) => {
            let ok = response.status().is_success();
            // Reading the body is part of the call: a dropped connection fails here.
            ok && response.bytes().await.is_ok()
        }
        Err(_) => false,
    }
}

async fn effects(http: &reqwest::Client, sandbox: &Url, key: &str) -> Result<u64, WorkloadError> {
    let url = sandbox
        .join("_sandbox/effects")
        .map_err(|e| WorkloadError::BadUrl {
            url: sandbox.to_string(),
            detail: e.to_string(),
        })?;
    let what = "read effects";
    let response = http
        .get(url)
        .query(&[("action_key", key)])
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| WorkloadError::Lost {
            what,
            detail: crate::client::ingest::kind(&e).to_string(),
        })?;
    if response.status() != StatusCode::OK {
        return Err(WorkloadError::Unexpected {
            what,
            status: response.status().as_u16(),
            body: String::new(),
        });
    }
    let body: Value = response
        .json()
        .await
        .map_err(|e| WorkloadError::Unexpected {
            what,
            status: 200,
            body: e.to_string(),
        })?;
    Ok(body.get("effects").and_then(Value::as_u64).unwrap_or(0))
}

async fn tally(
    http: &reqwest::Client,
    sandbox: &Url,
    instructions: Vec<Instruction>,
    seed: u64,
    faults: &str,
    started_at_ms: u64,
    finished_at_ms: u64,
) -> Result<Report, WorkloadError> {
    let mut figures = NaiveFigures::default();
    let (mut effects_total, mut duplicates, mut late, mut budget_exceeded) = (0, 0, 0, 0);
    let mut states = BTreeMap::new();
    let mut per_intent = Vec::with_capacity(instructions.len());
    for instruction in &instructions {
        per_intent.push(instruction.calls);
        figures.downstream_calls += instruction.downstream_calls;
        if instruction.calls > u64::from(instruction.budget) {
            budget_exceeded += 1;
        }
        let mut applied = 0;
        for (key, seen_ok) in &instruction.keys {
            let n = effects(http, sandbox, key).await?;
            applied += n;
            if n > 0 && !seen_ok {
                late += 1;
            }
        }
        effects_total += applied;
        duplicates += applied.saturating_sub(1);
        if applied > 0 {
            figures.applied += 1;
        }
        if !instruction.succeeded && applied > 0 {
            figures.failed_but_applied += 1;
        }
        let state = if instruction.succeeded {
            "committed"
        } else {
            "failed"
        };
        *states.entry(state.to_string()).or_insert(0u64) += 1;
    }
    let committed = states.get("committed").copied().unwrap_or(0);
    Ok(Report {
        mode: "naive".to_string(),
        seed,
        faults: faults.to_string(),
        intents: instructions.len() as u64,
        attempts: per_intent.iter().sum(),
        amplification: Amplification::of(&per_intent),
        duplicate_effects: duplicates,
        effects: effects_total,
        indeterminate: Indeterminate::default(),
        late_results: late,
        goodput_per_min: goodput_per_min(committed, finished_at_ms.saturating_sub(started_at_ms)),
        budget_exceeded,
        states,
        elapsed_secs: finished_at_ms.saturating_sub(started_at_ms) as f64 / 1000.0,
        settled: true,
        agents: None,
        naive: Some(figures),
    })
}
