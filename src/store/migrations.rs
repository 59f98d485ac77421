//! The schema's versioned migrations, one list for both backends. Each entry runs once, in
//! order, inside one transaction; a migration is never edited after release: add a new one.
//!
//! Written in the SQL both speak: `INTEGER PRIMARY KEY` sequences, text enums, 0/1 flags
//! and unix-millisecond integers. PostgreSQL reads them through [`for_postgres`]: 64-bit
//! integers throughout, and identity columns for the sequences.

/// The migrations, oldest first.
pub const MIGRATIONS: &[&str] = &[
    // 1: the whole first schema.
    r#"
CREATE TABLE intents (
    seq                      INTEGER PRIMARY KEY,
    id                       TEXT NOT NULL UNIQUE,
    tenant                   TEXT NOT NULL,
    caller_key               TEXT NOT NULL,
    actor                    TEXT NOT NULL,
    purpose                  TEXT NOT NULL,
    operation                TEXT NOT NULL,
    tool                     TEXT NOT NULL,
    tier                     TEXT NOT NULL,
    args_json                TEXT NOT NULL,
    canonical_json           TEXT NOT NULL,
    args_hash                TEXT NOT NULL,
    search_text              TEXT NOT NULL,
    release_id               TEXT NOT NULL,
    locale                   TEXT NOT NULL,
    connector                TEXT NOT NULL,
    action_key               TEXT NOT NULL UNIQUE,
    state                    TEXT NOT NULL,
    state_reason             TEXT,
    authorization_version    TEXT,
    approver                 TEXT,
    authorized_at_ms         INTEGER,
    authorization_expires_at_ms INTEGER,
    attempts                 INTEGER NOT NULL DEFAULT 0,
    max_attempts             INTEGER NOT NULL,
    crossed                  INTEGER NOT NULL DEFAULT 0,
    created_at_ms            INTEGER NOT NULL,
    updated_at_ms            INTEGER NOT NULL,
    deadline_at_ms           INTEGER NOT NULL,
    indeterminate_since_ms   INTEGER,
    committed_at_ms          INTEGER,
    first_dispatch_at_ms     INTEGER,
    key_retention_secs       INTEGER,
    receipt_id               TEXT,
    downstream_ref           TEXT,
    retry_owner              TEXT NOT NULL DEFAULT 'coordinator'
);
CREATE INDEX intents_tenant_state ON intents (tenant, state, seq);
CREATE INDEX intents_state ON intents (state, seq);
CREATE INDEX intents_created ON intents (created_at_ms);
CREATE INDEX intents_attempts ON intents (attempts, seq);
CREATE INDEX intents_deadline ON intents (deadline_at_ms, seq);
CREATE INDEX intents_indeterminate ON intents (indeterminate_since_ms) WHERE state = 'indeterminate';
CREATE INDEX intents_receipt ON intents (receipt_id) WHERE receipt_id IS NOT NULL;
CREATE INDEX intents_downstream ON intents (downstream_ref) WHERE downstream_ref IS NOT NULL;

-- The ingest idempotency record: the caller's key within a tenant names one intent.
CREATE TABLE ingest_keys (
    tenant        TEXT NOT NULL,
    caller_key    TEXT NOT NULL,
    intent_seq    INTEGER NOT NULL REFERENCES intents (seq),
    args_hash     TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    replays       INTEGER NOT NULL DEFAULT 0,
    mismatches    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, caller_key)
);

-- Which providers an intent's attempts used, for the provider filter.
CREATE TABLE intent_providers (
    provider   TEXT NOT NULL,
    intent_seq INTEGER NOT NULL REFERENCES intents (seq),
    PRIMARY KEY (intent_seq, provider)
);
CREATE INDEX intent_providers_provider ON intent_providers (provider, intent_seq);

CREATE TABLE attempts (
    seq                  INTEGER PRIMARY KEY,
    id                   TEXT NOT NULL UNIQUE,
    intent_seq           INTEGER NOT NULL REFERENCES intents (seq),
    tenant               TEXT NOT NULL,
    kind                 TEXT NOT NULL,
    provider             TEXT NOT NULL,
    region               TEXT,
    model                TEXT,
    release_id           TEXT,
    worker               TEXT,
    provider_request_id  TEXT,
    hedge_group          TEXT,
    outcome              TEXT NOT NULL,
    error_class          TEXT,
    http_status          INTEGER,
    retry_after_ms       INTEGER,
    proposal_hash        TEXT,
    presented_key        TEXT,
    replayed             INTEGER,
    sent                 INTEGER NOT NULL DEFAULT 0,
    late                 INTEGER NOT NULL DEFAULT 0,
    detail               TEXT,
    started_at_ms        INTEGER NOT NULL,
    ended_at_ms          INTEGER
);
CREATE INDEX attempts_intent ON attempts (intent_seq, seq);
CREATE INDEX attempts_started ON attempts (started_at_ms);
CREATE INDEX attempts_key ON attempts (presented_key) WHERE presented_key IS NOT NULL;

CREATE TABLE outbox (
    seq                 INTEGER PRIMARY KEY,
    intent_seq          INTEGER NOT NULL REFERENCES intents (seq),
    attempt_seq         INTEGER NOT NULL REFERENCES attempts (seq),
    action_key          TEXT NOT NULL,
    connector           TEXT NOT NULL,
    operation           TEXT NOT NULL,
    payload_json        TEXT NOT NULL,
    status              TEXT NOT NULL,
    available_at_ms     INTEGER NOT NULL,
    claimed_by          TEXT,
    claim_expires_at_ms INTEGER,
    claims              INTEGER NOT NULL DEFAULT 0,
    created_at_ms       INTEGER NOT NULL,
    done_at_ms          INTEGER
);
CREATE INDEX outbox_ready ON outbox (status, available_at_ms);

CREATE TABLE receipts (
    seq            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    intent_seq     INTEGER NOT NULL REFERENCES intents (seq),
    action_key     TEXT NOT NULL,
    downstream_id  TEXT NOT NULL,
    source         TEXT NOT NULL,
    event_id       TEXT,
    authoritative  INTEGER NOT NULL,
    received_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX receipts_one_authoritative ON receipts (intent_seq) WHERE authoritative = 1;
CREATE INDEX receipts_intent ON receipts (intent_seq, seq);
CREATE INDEX receipts_downstream ON receipts (downstream_id);

CREATE TABLE webhook_events (
    connector      TEXT NOT NULL,
    event_id       TEXT NOT NULL,
    action_key     TEXT NOT NULL,
    received_at_ms INTEGER NOT NULL,
    deliveries     INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (connector, event_id)
);

CREATE TABLE transitions (
    seq         INTEGER PRIMARY KEY,
    intent_seq  INTEGER NOT NULL REFERENCES intents (seq),
    from_state  TEXT,
    to_state    TEXT NOT NULL,
    event       TEXT NOT NULL,
    reason      TEXT,
    command_seq INTEGER,
    at_ms       INTEGER NOT NULL
);
CREATE INDEX transitions_intent ON transitions (intent_seq, seq);

CREATE TABLE commands (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    actor         TEXT NOT NULL,
    role          TEXT NOT NULL,
    body_hash     TEXT NOT NULL,
    body_json     TEXT NOT NULL,
    reason        TEXT,
    dry_run       INTEGER NOT NULL,
    status        TEXT NOT NULL,
    result_json   TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX commands_created ON commands (created_at_ms);

CREATE TABLE command_targets (
    command_seq INTEGER NOT NULL REFERENCES commands (seq),
    intent_seq  INTEGER NOT NULL REFERENCES intents (seq),
    PRIMARY KEY (command_seq, intent_seq)
);
CREATE INDEX command_targets_intent ON command_targets (intent_seq);

CREATE TABLE pauses (
    seq                INTEGER PRIMARY KEY,
    command_seq        INTEGER NOT NULL REFERENCES commands (seq),
    tenant             TEXT,
    provider           TEXT,
    tool               TEXT,
    operation          TEXT,
    intent_id          TEXT,
    reason             TEXT NOT NULL,
    created_by         TEXT NOT NULL,
    created_at_ms      INTEGER NOT NULL,
    resumed_at_ms      INTEGER,
    resumed_by_command INTEGER
);

CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    tenant     TEXT,
    intent_id  TEXT,
    payload    TEXT NOT NULL,
    at_ms      INTEGER NOT NULL
);
"#,
    // 2: the oldest-indeterminate-first list is filtered by a bound state, which a partial
    // index cannot serve; a full index on (state, since) serves both it and the age summary.
    r#"
DROP INDEX intents_indeterminate;
CREATE INDEX intents_state_indeterminate ON intents (state, indeterminate_since_ms, seq);
"#,
    // 3: a list page walks its sort order along an index (see `store::paging::Order`); the
    // two orders without one get theirs. Operation and tool are filtered on alone and never
    // change after creation, so their indexes cost only at insert.
    r#"
CREATE INDEX intents_operation ON intents (operation, seq);
CREATE INDEX intents_tool ON intents (tool, seq);
CREATE INDEX intents_updated ON intents (updated_at_ms, seq);
CREATE INDEX intents_indeterminate_order
    ON intents (coalesce(indeterminate_since_ms, 9223372036854775807), seq);
"#,
    // 4: a release is filtered on alone in an incident (the one just deployed), and a new
    // release matches few intents or none; without an index that read the whole table
    // (0.75 s at a million intents). Set at creation only, so it costs only at insert.
    r#"
CREATE INDEX intents_release ON intents (release_id, seq);
"#,
    // 5: the trust boundary. An attempt records who reported it (the coordinator's own
    // dispatches and lookups: nobody), so only its reporter may finish it; attempts reported
    // before this migration have none and stay finishable by any agent of their tenant. A
    // caller key records the principal that used it, so the same principal reusing it for
    // another tenant is a mismatch. Webhook deliveries are deduplicated per action key, so
    // an event id stored for one key never hides a receipt for another. Planned sends are
    // found by intent, as a final state withdraws them.
    r#"
ALTER TABLE attempts ADD COLUMN reported_by TEXT;
CREATE INDEX outbox_intent ON outbox (intent_seq, status);
ALTER TABLE ingest_keys ADD COLUMN principal TEXT;
CREATE INDEX ingest_keys_principal ON ingest_keys (principal, caller_key) WHERE principal IS NOT NULL;
CREATE TABLE webhook_deliveries (
    connector      TEXT NOT NULL,
    event_id       TEXT NOT NULL,
    action_key     TEXT NOT NULL,
    received_at_ms INTEGER NOT NULL,
    deliveries     INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (connector, action_key, event_id)
);
INSERT INTO webhook_deliveries (connector, event_id, action_key, received_at_ms, deliveries)
    SELECT connector, event_id, action_key, received_at_ms, deliveries FROM webhook_events;
DROP TABLE webhook_events;
ALTER TABLE webhook_deliveries RENAME TO webhook_events;
"#,
    // 6: where PostgreSQL's writers leave their change-feed events until they are numbered
    // in commit order (`events::sequence_pending`). SQLite numbers them as it commits, and
    // leaves this table empty.
    r#"
CREATE TABLE events_pending (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    tenant     TEXT,
    intent_id  TEXT,
    payload    TEXT NOT NULL,
    at_ms      INTEGER NOT NULL
);
"#,
    // 7: the deadline sweep reads only open intents. Along the whole deadline index it
    // walked every finished intent whose deadline had passed before the first open one:
    // 0.9-1.4 s a sweep on a million intents, every two seconds.
    r#"
CREATE INDEX intents_open_deadline ON intents (deadline_at_ms)
    WHERE state IN ('new', 'prepared', 'authorized', 'executing');
"#,
    // 8: the gate's revisit signals and what a send crossed under. Each connector's contract
    // as last seen at start, the names (providers, releases, tools at a tier) seen so far,
    // and the revisit events that changes and first sightings make. A dispatch attempt keeps
    // the resource and key retention it was sent with, and an intent's `key_retention_secs`
    // becomes the retention its key was first sent under. Who retries an intent's work
    // follows its tier: the agent for the work it reports, the coordinator for mutating work.
    r#"
CREATE TABLE connector_contracts (
    connector     TEXT PRIMARY KEY,
    contract_json TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE TABLE gate_sightings (
    kind             TEXT NOT NULL,
    name             TEXT NOT NULL,
    variant          TEXT NOT NULL,
    first_seen_at_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, name, variant)
);
CREATE TABLE revisits (
    seq       INTEGER PRIMARY KEY,
    kind      TEXT NOT NULL,
    subject   TEXT NOT NULL,
    field     TEXT NOT NULL,
    old_value TEXT,
    new_value TEXT NOT NULL,
    tenant    TEXT,
    at_ms     INTEGER NOT NULL
);
ALTER TABLE attempts ADD COLUMN downstream_resource TEXT;
ALTER TABLE attempts ADD COLUMN key_retention_secs INTEGER;
UPDATE intents SET retry_owner = 'agent' WHERE tier IN ('read', 'compute', 'proposal');
"#,
    // 9: lookups pace themselves. Each intent counts its lookups (all, and the automatic ones
    // its budget counts), keeps when the last was made and when the next automatic one is
    // due, and when the budget ran out: a restart resumes the backoff where it was. Lookups
    // made before are counted, and count against the budget.
    r#"
ALTER TABLE intents ADD COLUMN lookups INTEGER NOT NULL DEFAULT 0;
ALTER TABLE intents ADD COLUMN automatic_lookups INTEGER NOT NULL DEFAULT 0;
ALTER TABLE intents ADD COLUMN last_lookup_at_ms INTEGER;
ALTER TABLE intents ADD COLUMN next_lookup_at_ms INTEGER;
ALTER TABLE intents ADD COLUMN lookups_exhausted_at_ms INTEGER;
UPDATE intents SET lookups = (SELECT count(*) FROM attempts a WHERE a.intent_seq = intents.seq AND a.kind = 'lookup');
UPDATE intents SET automatic_lookups = lookups,
    last_lookup_at_ms = (SELECT max(a.started_at_ms) FROM attempts a WHERE a.intent_seq = intents.seq AND a.kind = 'lookup');
CREATE INDEX intents_lookup_due ON intents (next_lookup_at_ms) WHERE state = 'indeterminate';
"#,
    // 10: approvals by someone else, under a policy. An intent keeps the principal that
    // created it (never its approver) and the policy version it was approved under; an
    // attempt, what it cost as its reporter says, and whether it was a hedge that lost.
    r#"
ALTER TABLE attempts ADD COLUMN cost_micros INTEGER;
ALTER TABLE attempts ADD COLUMN hedge_lost INTEGER NOT NULL DEFAULT 0;
ALTER TABLE intents ADD COLUMN created_by TEXT;
ALTER TABLE intents ADD COLUMN policy_version TEXT;
UPDATE intents SET created_by = (SELECT k.principal FROM ingest_keys k WHERE k.intent_seq = intents.seq);
"#,
    // 11: cancellation as an observation, and linked intents. Who asked to cancel an intent,
    // when and why (the request stays beside the state until evidence settles it); the
    // caller's workflow an intent belongs to, the intent it was made for (its parent), and
    // the intent a corrected order replaces. An intent is replaced at most once.
    r#"
ALTER TABLE intents ADD COLUMN cancel_requested_at_ms INTEGER;
ALTER TABLE intents ADD COLUMN cancel_requested_by TEXT;
ALTER TABLE intents ADD COLUMN cancel_reason TEXT;
ALTER TABLE intents ADD COLUMN workflow_id TEXT;
ALTER TABLE intents ADD COLUMN parent_intent_id TEXT;
ALTER TABLE intents ADD COLUMN supersedes TEXT;
ALTER TABLE intents ADD COLUMN superseded_by TEXT;
CREATE INDEX intents_workflow ON intents (tenant, workflow_id) WHERE workflow_id IS NOT NULL;
CREATE UNIQUE INDEX intents_supersedes ON intents (supersedes) WHERE supersedes IS NOT NULL;
"#,
    // 12: no query looks attempts up by the key they presented (an intent's ledger filters
    // its own attempts); the index only cost every dispatch a page of its own, scattered by
    // tenant.
    r#"
DROP INDEX attempts_key;
"#,
    // 13: the open states of the deadline index as a chain of equalities. SQLite checks a
    // partial index's condition on a row's old and new values at every change of its state,
    // and an `IN` list of more than two values makes it build and drop a temporary b-tree each
    // time: two per state change, a tenth of the order path's work. The deadline sweep names
    // the same condition (`sweeps::OPEN`), which is what lets it use the index.
    r#"
DROP INDEX intents_open_deadline;
CREATE INDEX intents_open_deadline ON intents (deadline_at_ms)
    WHERE (state = 'new' OR state = 'prepared' OR state = 'authorized' OR state = 'executing');
"#,
    // 14: a webhook's deliveries are remembered under the intent they receipt. Keyed by the
    // connector and the action key, which begins with the tenant, each first delivery's entry
    // landed in one of as many places as there are tenants: about eleven of the log's 120
    // pages a group commit wrote under whole orders over 16 tenants
    // (docs/throughput-log.md). Keyed by the intent's sequence they land at the end, beside
    // each other; the key is the table (no rowid beside it), and the connector and the
    // action key are the intent's own. An event id repeated for another intent is a
    // delivery of its own, as before. No foreign key: intents are never deleted, and
    // PostgreSQL would check the copy row by row with the intents table locked against
    // writes.
    //
    // `webhook_events` stays as it was, unread from here on: coordinators of schema 13 still
    // running while a newer one migrates go on recording there (a repeat of a delivery one
    // of them recorded is then counted anew by a newer one, and observed again: harmless, as
    // a receipt is observed once). Dropped, it would fail their every webhook.
    r#"
CREATE TABLE webhook_arrivals (
    intent_seq     INTEGER NOT NULL,
    event_id       TEXT NOT NULL,
    received_at_ms INTEGER NOT NULL,
    deliveries     INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (intent_seq, event_id)
) WITHOUT ROWID;
INSERT INTO webhook_arrivals (intent_seq, event_id, received_at_ms, deliveries)
    SELECT i.seq, w.event_id, w.received_at_ms, w.deliveries
    FROM webhook_events w JOIN intents i ON i.action_key = w.action_key AND i.connector = w.connector;
"#,
    // 15: when the coordinator's own create answer or lookup last named the record a webhook
    // committed an intent to. A webhook's receipt alone holds no record against other intents
    // (a connector's token could name any id); confirmed by the coordinator's own call, it
    // does, as a receipt that call brought would have.
    r#"
ALTER TABLE receipts ADD COLUMN confirmed_at_ms INTEGER;
"#,
    // 16: the attempts whose answer named no key and a record another intent held (a
    // downstream answering from the wrong record), counted at every scrape of `/metrics`:
    // a partial index holds only them, so the count reads no other attempt. Its predicate is
    // the store's `refused_answers_sql!`, word for word.
    r#"
CREATE INDEX attempts_refused_answers ON attempts (intent_seq)
    WHERE detail IN ('a success answer naming a record another intent holds',
         'a lookup answer naming a record another intent holds');
"#,
    // 17: the pauses in force. Every read of an intent asks whether a pause holds it, and
    // every pause ever made stays as a row once resumed: the question read all of them, for
    // each intent read (0.48 ms an intent with 10,000 resumed, four times an order in the
    // writer, fifty times a list page). A partial index holds only those not resumed.
    r#"
CREATE INDEX pauses_active ON pauses (tenant, tool, operation, intent_id, provider)
    WHERE resumed_at_ms IS NULL;
"#,
    // 18: the lookups due, in the order they came due. The reconciler's pass read every
    // indeterminate intent, those whose lookup budget is spent (left for an operator, and
    // piling up) included, and sorted them all for a page. The index holds only those with
    // budget left, in the pass's order. Migration 9's, which no query uses now, stays:
    // dropping it would hold every read of `intents` on PostgreSQL until the migration ends,
    // stalling the coordinators of the schema before that still run during an upgrade.
    r#"
CREATE INDEX intents_lookups_due ON intents ((coalesce(next_lookup_at_ms, 0)), indeterminate_since_ms)
    WHERE state = 'indeterminate' AND lookups_exhausted_at_ms IS NULL;
"#,
    // 19: the commands that name an intent as their target. An intent's detail lists them,
    // and found them by matching every command body's text: a read of every command ever
    // recorded. The index is over the target the body names, computed by the database, so
    // a command recorded by a coordinator of an earlier schema is in it too.
    r#"
CREATE INDEX commands_target_intent ON commands (json_extract(body_json, '$.target.intent_id'));
"#,
    // 20: the intents of a consequence tier, and of a locale. The console filters lists by
    // both, and a tier or a locale few intents have (the financial ones, the Persian ones)
    // was found only by reading every intent: a second a page on a million intents. Both
    // are set at creation and never change, so an order writes each index once.
    r#"
CREATE INDEX intents_tier ON intents (tier, seq);
CREATE INDEX intents_locale ON intents (locale, seq);
"#,
    // 21: an intent's arguments, as given, canonical and folded for search, in a row of their
    // own, written once. SQLite writes a row whole at every update, and an intent's row is
    // updated at each step of an order, its send's outbox row at the claim and at the end:
    // with the arguments in both, a purchase order of ten lines cost the writer three fifths
    // more an order than one of none, and one of forty three times as much. SQLite stores a
    // new intent's arguments here and leaves the intent's own columns, and its send's
    // payload, empty (`Dialect::payload_apart`); an intent made before keeps them where they
    // were. PostgreSQL keeps them in the intent's row, where large values are stored apart
    // already and an update that leaves them unchanged does not copy them, so coordinators
    // of the previous schema still running read every intent whole. No foreign key: the row
    // is written in the intent's own transaction and intents are never deleted, and on
    // PostgreSQL adding one would lock the intents against every write while the running
    // coordinators' open writes end.
    r#"
CREATE TABLE intent_payloads (
    intent_seq     INTEGER NOT NULL PRIMARY KEY,
    args_json      TEXT NOT NULL,
    canonical_json TEXT NOT NULL,
    search_text    TEXT NOT NULL
);
"#,
];

/// A migration as PostgreSQL runs it.
pub fn for_postgres(sql: &str) -> String {
    // A PostgreSQL table is a heap beside its indexes whatever it is told.
    sql.replace("WITHOUT ROWID", "")
        // A body's target, as `Dialect::json_text` reads it, so queries find the index.
        .replace(
            "json_extract(body_json, '$.target.intent_id')",
            &crate::store::sql::Dialect::Postgres.json_text("body_json", &["target", "intent_id"]),
        )
        .replace(
            "INTEGER PRIMARY KEY",
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        )
        .replace("INTEGER", "BIGINT")
}
