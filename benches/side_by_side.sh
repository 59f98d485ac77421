#!/usr/bin/env bash
# Whole orders through intentdesk beside Restate, in one run, with one load generator.
#
#   LOAD_DIR=<folder with the peer's load.mjs and its undici> \
#   [PEER_RUN=<the Restate peer's run.sh>] bash benches/side_by_side.sh
#
# For each durability (power_loss, then process_crash) it starts the release binary's
# sandbox (fault-free, webhooks on) and a coordinator on a fresh SQLite file, and drives it
# with the peer's closed-loop load generator:
#   - `intentdesk-order`: each request a whole order (create -> authorize -> dispatch), then
#     drained until every dispatched order is committed: the end-to-end figure;
#   - `intentdesk`: creates only: the acceptance figure and its p99.
# After each order run it checks the promises, not only the speed: the sandbox made exactly
# one effect per committed order (no duplicate, none missing), and every order accepted was
# committed. With PEER_RUN it first runs the Restate peer at the same concurrency and
# duration (its `send` drain is the figure to hold ours against).
#
# The machine's speed can move by a fifth within minutes, and a ratio from one pair of runs
# moves with it: ROUNDS=n repeats the whole (Restate, then ours) n times, one after the
# other, and ends with each round's ratio of our `power_loss` drain to Restate's `send`
# drain and their median. Under each round's ratio: the CPU an order cost the coordinator,
# the sandbox and the load generator, and how many orders a second the machine's cores
# could give at that cost with none of them idle, beside three times the peer's drain; and
# the coordinator's CPU thread by thread (`coordinator_threads` in results.jsonl; the
# threads of the runtime's blocking pool, which run reads, bear its workers' name).
#
# BOUND=1 adds to each round, after the peer, the same order load against the order path's
# HTTP exchanges with no store and no checks behind them (`examples/order_shape_bound.rs`,
# with the same sandbox): how many orders a second the load generator, the sandbox and this
# machine allow before anything intentdesk stores or decides. Each round then says what
# share of that bound ours drained, and three times the peer's drain asks for.
#
# Knobs: CONCURRENCY (32), DURATION (20), WARMUP (2), DURABILITIES ("power_loss
# process_crash"), ROUNDS (1), PORT (7410; the sandbox takes PORT+10), BIN (built here if
# unset), BOUND (unset), BOUND_BIN (built here if BOUND is set and it is not), OUT (a fresh
# temporary folder; results.jsonl and the logs stay there).
# POSTGRES (unset): the URL of a PostgreSQL server's admin database (`.ci/postgres start`
# prints one); each coordinator then runs on a fresh database there, made with `psql` and
# dropped after its run, instead of a SQLite file. POSTGRES_VIA: the server's URL up to its
# port as the coordinators are to reach it, when not directly (through
# `benches/delay_relay.py`, as a server on another machine).
# Loopback only; every process it starts is stopped when it ends.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${LOAD_DIR:?set LOAD_DIR to the folder holding load.mjs and node_modules/undici}"
[ -f "$LOAD_DIR/load.mjs" ] || { echo "no load.mjs in $LOAD_DIR" >&2; exit 2; }
CONCURRENCY="${CONCURRENCY:-32}"
DURATION="${DURATION:-20}"
WARMUP="${WARMUP:-2}"
DURABILITIES="${DURABILITIES:-power_loss process_crash}"
ROUNDS="${ROUNDS:-1}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a whole number of rounds, 1 or more" >&2; exit 2; }
PORT="${PORT:-7410}"
SANDBOX_PORT=$((PORT + 10))
OUT="${OUT:-$(mktemp -d -t intentdesk-side-by-side.XXXXXX)}"
mkdir -p "$OUT"
results="$OUT/results.jsonl"
: > "$results"

if [ -z "${BIN:-}" ]; then
  (cd "$here" && cargo build --quiet --release --no-default-features --bin intentdesk)
  BIN="${CARGO_TARGET_DIR:-$here/target}/release/intentdesk"
fi
BIN="$(realpath "$BIN")"
if [ "${BOUND:-}" = 1 ]; then
  if [ -z "${BOUND_BIN:-}" ]; then
    (cd "$here" && cargo build --quiet --release --no-default-features --example order_shape_bound)
    BOUND_BIN="${CARGO_TARGET_DIR:-$here/target}/release/examples/order_shape_bound"
  fi
  [ -x "$BOUND_BIN" ] || { echo "BOUND_BIN $BOUND_BIN is not a program" >&2; exit 2; }
elif [ -n "${BOUND:-}" ]; then
  echo "BOUND is 1 or unset, not $BOUND" >&2; exit 2
fi

log() { printf '[side-by-side %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

pids=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT INT TERM

# The Restate peer, at the same concurrency and duration, for round $1.
run_peer() {
  local round="$1"
  log "Restate peer: $PEER_RUN"
  local before
  before="$(date +%s)"
  CONCURRENCY="$CONCURRENCY" DURATION="$DURATION" WARMUP="$WARMUP" REPLAY=0.5 SEND=1 \
    bash "$PEER_RUN" > "$OUT/restate-$round.out" 2>&1
  local peer_results
  peer_results="$(find "$(dirname "$PEER_RUN")" "${PEER_DIR:-$LOAD_DIR/..}" -name results.jsonl \
    -newermt "@$before" 2>/dev/null | head -1)"
  [ -n "$peer_results" ] || { echo "the Restate run left no results.jsonl" >&2; exit 1; }
  sed "s/^{/{\"system\":\"restate\",\"round\":$round,/" "$peer_results" >> "$results"
}

sha() { printf %s "$(cat "$1")" | sha256sum | cut -d' ' -f1; }

# Each thread of process $1: its id, its name and the clock ticks it has run.
thread_ticks() {
  local t stat name
  for t in /proc/"$1"/task/*; do
    stat="$(cat "$t/stat" 2>/dev/null)" || continue
    name="$(cat "$t/comm" 2>/dev/null)" || continue
    # After the name's closing parenthesis, user and system time are the 12th and 13th fields.
    # shellcheck disable=SC2086
    set -- ${stat##*) }
    printf '%s %s %s\n' "${t##*/}" "${name// /_}" "$((${12} + ${13}))"
  done
}

# The coordinator's CPU thread by thread, a second in from each end of the measured window,
# into $2 as JSON: whether one of its threads runs out of core, or they take turns.
sample_threads() {
  local pid="$1" into="$2" span=$((DURATION - 2))
  [ "$span" -gt 0 ] || return 0
  sleep $((WARMUP + 1))
  thread_ticks "$pid" > "$into.before"
  sleep "$span"
  thread_ticks "$pid" > "$into.after"
  join <(sort "$into.before") <(sort "$into.after") |
    awk -v span="$span" -v hz="$(getconf CLK_TCK)" '
      { pct = 100 * ($5 - $3) / hz / span; if (pct >= 0.5) printf "%s\t%.1f\n", $2, pct }' |
    sort -t$'\t' -k2,2nr |
    awk -F'\t' 'BEGIN { printf "[" } { printf "%s{\"name\":\"%s\",\"cpu_pct\":%s}", (NR > 1 ? "," : ""), $1, $2 }
      END { print "]" }' > "$into"
  rm -f "$into.before" "$into.after"
}

# A fault-free sandbox in folder $1, posting its webhooks to whatever listens on PORT; its
# process id is in $! after.
start_sandbox() {
  "$BIN" sandbox --listen "127.0.0.1:$SANDBOX_PORT" --faults none \
    --webhook-url "http://127.0.0.1:$PORT" --webhook-token-file "$1/webhook.token" \
    > "$1/sandbox.log" 2>&1 &
}

# Wait for what listens on PORT and for the sandbox to answer; stop, naming $1 and the logs'
# folder $2, if they do not within 10 s.
wait_up() {
  for _ in $(seq 100); do
    if curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" &&
      curl -sf -o /dev/null "http://127.0.0.1:$SANDBOX_PORT/healthz"; then return 0; fi
    sleep 0.1
  done
  echo "$1 did not come up (logs in $2)" >&2
  exit 1
}

# One coordinator and sandbox on a fresh database; runs one load shape against them, for
# round $3.
run_one() {
  local durability="$1" shape="$2" round="$3" dir="$OUT/$1-$2"
  [ "$ROUNDS" = 1 ] || dir="$OUT/$round-$1-$2"
  mkdir -p "$dir"
  # An OUT given again keeps its folders: a database left there from an earlier run would
  # count that run's orders as this one's.
  rm -f "$dir"/intentdesk.sqlite "$dir"/intentdesk.sqlite-wal "$dir"/intentdesk.sqlite-shm
  printf %s "load-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')" > "$dir/admin.token"
  printf %s "hook-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')" > "$dir/webhook.token"
  local database="intentdesk.sqlite" pg_database=""
  if [ -n "${POSTGRES:-}" ]; then
    pg_database="bench_$(date +%s%N)"
    psql -q "$POSTGRES" -c "CREATE DATABASE $pg_database" > /dev/null
    database="${POSTGRES_VIA:-${POSTGRES%/*}}/$pg_database"
  fi
  "$BIN" coordinator --print-example-config | sed \
    -e "s/<hex sha256 of the bearer token>/$(sha "$dir/admin.token")/" \
    -e "s/<hex sha256 of the connector's token>/$(sha "$dir/webhook.token")/" \
    -e 's/^name = "ops-admin"/name = "load"\nmay_approve_own = true/' \
    -e "s/^durability = .*/durability = \"$durability\"/" \
    -e "s#^database = .*#database = \"$database\"#" \
    -e "s/127.0.0.1:7410/127.0.0.1:$PORT/; s/127.0.0.1:7420/127.0.0.1:$SANDBOX_PORT/" \
    > "$dir/coordinator.toml"
  start_sandbox "$dir"
  local sandbox=$!
  (cd "$dir" && exec "$BIN" coordinator --config coordinator.toml) > "$dir/coordinator.log" 2>&1 &
  local coordinator=$!
  pids=("$sandbox" "$coordinator")
  wait_up "coordinator or sandbox" "$dir"

  log "$durability $shape: $CONCURRENCY callers, ${DURATION}s after ${WARMUP}s"
  sample_threads "$coordinator" "$dir/threads.json" &
  local sampler=$!
  (cd "$LOAD_DIR" && node load.mjs --shape "$shape" --auth-token-file "$dir/admin.token" \
    --url "http://127.0.0.1:$PORT/v1/intents" --concurrency "$CONCURRENCY" \
    --duration "$DURATION" --warmup "$WARMUP" --label "$shape-c$CONCURRENCY" \
    --pids "coordinator=$coordinator,sandbox=$sandbox" --json "$dir/result.jsonl") > "$dir/load.out"

  wait "$sampler" || true
  local effects metrics committed writes commits threads="[]"
  [ ! -s "$dir/threads.json" ] || threads="$(cat "$dir/threads.json")"
  effects="$(curl -sf "http://127.0.0.1:$SANDBOX_PORT/_sandbox/effects")"
  metrics="$(curl -sf -H "Authorization: Bearer $(cat "$dir/admin.token")" "http://127.0.0.1:$PORT/metrics")"
  committed="$(sed -n 's/^intentdesk_intents{state="committed"} //p' <<< "$metrics")"
  # The store's write jobs and group commits over the whole run, warm-up and drain included.
  writes="$(sed -n 's/^intentdesk_store_writes_total //p' <<< "$metrics")"
  commits="$(sed -n 's/^intentdesk_store_commits_total //p' <<< "$metrics")"
  tail -1 "$dir/result.jsonl" | node -e '
    const [durability, effects, committed, writes, commits, round, threads] = process.argv.slice(1);
    const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const e = JSON.parse(effects);
    r.system = "intentdesk"; r.durability = durability; r.round = Number(round);
    r.sandbox_effects = e; r.committed = Number(committed || 0);
    r.store_writes = Number(writes || 0); r.store_commits = Number(commits || 0);
    r.coordinator_threads = JSON.parse(threads);
    console.log(JSON.stringify(r));' "$durability" "$effects" "$committed" "$writes" "$commits" "$round" "$threads" >> "$results"
  stop_all
  [ -z "$pg_database" ] || psql -q "$POSTGRES" -c "DROP DATABASE $pg_database" > /dev/null

  if [ "$shape" = intentdesk-order ]; then
    tail -1 "$results" | node -e '
      const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const e = r.sandbox_effects, d = r.drain;
      const bad = [];
      if (e.duplicate_effects !== 0) bad.push(`${e.duplicate_effects} duplicate effects`);
      if (e.effects !== r.committed) bad.push(`${e.effects} effects for ${r.committed} committed orders`);
      if (!d || !d.drained) bad.push(`${d ? d.still_in_flight : "?"} orders never committed`);
      if (r.errors) bad.push(`${r.errors} failed requests`);
      if (bad.length) { console.error("PROMISE BROKEN: " + bad.join("; ")); process.exit(1); }'
  fi
}

# The order load against the order path's HTTP exchanges with no store behind them, with
# the same sandbox, for round $1 (BOUND=1).
run_bound() {
  local round="$1" dir="$OUT/bound"
  [ "$ROUNDS" = 1 ] || dir="$OUT/$round-bound"
  mkdir -p "$dir"
  # Tokens as the coordinator's runs have them, so that each request carries the same headers.
  printf %s "load-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')" > "$dir/admin.token"
  printf %s "hook-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')" > "$dir/webhook.token"
  start_sandbox "$dir"
  local sandbox=$!
  "$BOUND_BIN" "127.0.0.1:$PORT" "http://127.0.0.1:$SANDBOX_PORT" > "$dir/bound.log" 2>&1 &
  local bound=$!
  pids=("$sandbox" "$bound")
  wait_up "the bound or its sandbox" "$dir"
  log "no store (bound): $CONCURRENCY callers, ${DURATION}s after ${WARMUP}s"
  (cd "$LOAD_DIR" && node load.mjs --shape intentdesk-order --auth-token-file "$dir/admin.token" \
    --url "http://127.0.0.1:$PORT/v1/intents" --concurrency "$CONCURRENCY" \
    --duration "$DURATION" --warmup "$WARMUP" --label "intentdesk-order-c$CONCURRENCY" \
    --pids "coordinator=$bound,sandbox=$sandbox" --json "$dir/result.jsonl") > "$dir/load.out"
  local effects
  effects="$(curl -sf "http://127.0.0.1:$SANDBOX_PORT/_sandbox/effects")"
  tail -1 "$dir/result.jsonl" | node -e '
    const [effects, round] = process.argv.slice(1);
    const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
    r.system = "bound"; r.round = Number(round); r.sandbox_effects = JSON.parse(effects);
    console.log(JSON.stringify(r));' "$effects" "$round" >> "$results"
  stop_all
  # A bound whose sends failed would be a bound too low: every order sent once, all drained.
  tail -1 "$results" | node -e '
    const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const e = r.sandbox_effects, d = r.drain, bad = [];
    if (!d || !d.drained) bad.push(`${d ? d.still_in_flight : "?"} orders never answered by the sandbox`);
    if (d && e.effects !== d.accepted_incl_warmup) bad.push(`${e.effects} effects for ${d.accepted_incl_warmup} orders`);
    if (r.errors) bad.push(`${r.errors} failed requests`);
    if (bad.length) { console.error("THE BOUND FAILED: " + bad.join("; ")); process.exit(1); }'
}

for round in $(seq "$ROUNDS"); do
  [ -z "${PEER_RUN:-}" ] || run_peer "$round"
  [ "${BOUND:-}" != 1 ] || run_bound "$round"
  for durability in $DURABILITIES; do
    run_one "$durability" intentdesk-order "$round"
    run_one "$durability" intentdesk "$round"
  done
done

# ---- The table.
node -e '
  const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const rss = (r, name) => (r.processes.find((p) => p.name === name) || {}).rss_max_mib;
  const cpu = (r, name) => (r.processes.find((p) => p.name === name) || {}).cpu_pct;
  const rounds = Math.max(...rows.map((r) => r.round));
  const out = ["| round | system | run | per second | p50 / p99 ms | server CPU % | server RSS max MiB | checks |",
               "|---|---|---|---|---|---|---|---|"];
  for (const r of rows) {
    const who = r.system === "restate" ? "Restate" : r.system === "bound" ? "no store (bound)" :
      `intentdesk ${r.durability}`;
    const server = r.system === "restate" ? "restate-server" : "coordinator";
    const rate = r.drain ? `${r.drain.e2e_completed_per_s} drained (${r.rps_ok} accepted)` : `${r.rps_ok}`;
    const checks = r.system === "restate" ? "" :
      r.system === "bound" ? `${r.sandbox_effects.effects} effects, machine ${r.machine_cpu_busy_pct} % busy` :
      r.label.startsWith("intentdesk-order") ?
        `${r.committed} committed, ${r.sandbox_effects.effects} effects, ${r.sandbox_effects.duplicate_effects} duplicates; ` +
          `${(r.store_writes / r.committed).toFixed(2)} writes an order, ${(r.store_writes / r.store_commits).toFixed(1)} a commit` :
        `${r.errors} errors`;
    out.push(`| ${r.round} | ${who} | ${r.label} | ${rate} | ${r.fresh.p50_ms} / ${r.fresh.p99_ms} | ${cpu(r, server)} | ${rss(r, server)} | ${checks} |`);
  }
  // The coordinator thread by thread in each order run: one thread out of core, or turns.
  for (const r of rows) {
    if (r.system === "intentdesk" && r.drain && (r.coordinator_threads || []).length > 0) {
      const threads = r.coordinator_threads.map((t) => `${t.name} ${t.cpu_pct} %`).join(", ");
      out.push(`round ${r.round}, ${r.durability}, the coordinator by thread: ${threads}`);
    }
  }
  // Each round: our power_loss drain over Restate send drain, from the same round.
  const drained = (round, pick) => rows.find((r) => r.round === round && pick(r) && r.drain);
  const ratios = [];
  for (let round = 1; round <= rounds; round++) {
    const peer = drained(round, (r) => r.system === "restate" && r.label.startsWith("send"));
    const ours = drained(round, (r) => r.system === "intentdesk" && r.durability === "power_loss");
    if (peer && ours) {
      const ratio = ours.drain.e2e_completed_per_s / peer.drain.e2e_completed_per_s;
      ratios.push(ratio);
      out.push(`round ${round}: ${ours.drain.e2e_completed_per_s} against ${peer.drain.e2e_completed_per_s} drained: ${ratio.toFixed(2)}x`);
      // What an order cost each process in CPU over the measured window, and how many orders
      // a second the cores of this machine could give at that cost if nothing stood idle:
      // with the ceiling above three times the peer, idle time stood between, not CPU.
      const names = ["coordinator", "sandbox", "loadgen"];
      if (ours.fresh.rps > 0 && names.every((name) => cpu(ours, name) !== undefined)) {
        const parts = names.map((name) => [name, 1e4 * cpu(ours, name) / ours.fresh.rps]);
        const each = parts.reduce((sum, [, us]) => sum + us, 0);
        const cores = require("os").cpus().length;
        out.push(`  CPU an order: ${parts.map(([name, us]) => `${name} ${us.toFixed(0)}`).join(", ")} µs; ` +
          `${each.toFixed(0)} µs in all, a ceiling of ${(cores * 1e6 / each).toFixed(0)} orders/s on ${cores} cores ` +
          `against 3x the peer, ${(3 * peer.drain.e2e_completed_per_s).toFixed(0)}/s; machine ${ours.machine_cpu_busy_pct} % busy`);
      } else {
        out.push("  CPU an order: not measured in this round (no orders, or a process unwatched)");
      }
    }
    // The same load with nothing stored behind the same HTTP (BOUND=1), with or without the
    // peer, beside the order run of each durability.
    const bound = drained(round, (r) => r.system === "bound");
    if (bound) {
      const share = (rate) => (100 * rate / bound.drain.e2e_completed_per_s).toFixed(0);
      const each = rows.filter((r) => r.round === round && r.system === "intentdesk" && r.drain)
        .map((r) => `${r.durability} ${share(r.drain.e2e_completed_per_s)} %`);
      out.push(`round ${round}, with no store behind the same HTTP: ${bound.drain.e2e_completed_per_s} drained, ` +
        `the machine ${bound.machine_cpu_busy_pct} % busy; ours ${each.join(", ") || "not run"} of it` +
        (peer ? `, 3x the peer ${share(3 * peer.drain.e2e_completed_per_s)} %` : ""));
    }
  }
  if (ratios.length > 1) {
    const s = [...ratios].sort((a, b) => a - b), m = s.length >> 1;
    const median = s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
    out.push(`median of ${s.length} rounds: ${median.toFixed(2)}x (${s[0].toFixed(2)}-${s[s.length - 1].toFixed(2)}x)`);
  }
  console.log(out.join("\n"));' "$results"
log "results and logs: $OUT"
