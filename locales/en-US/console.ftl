# The desktop console, English.
# Keys are `area-element[-variant]`; fa-IR/console.ftl has the same keys and variables.

## Top bar

topbar-connection-embedded = Embedded demo
topbar-connection-remote = Connected to { $url }
topbar-status-live = Live
topbar-status-stale = Stale
topbar-tenant = Tenant
topbar-provider = Provider
topbar-time-range = Time range
topbar-search = Search
topbar-search-hint = Intent id, action key, receipt or amount
topbar-locale = Language
topbar-locale-en = English
topbar-locale-fa = فارسی

## Views

view-intents = Intents
view-dashboard = Dashboard
view-intent-title = Intent { $intent }

## Intents table

table-column-intent = Intent
table-column-state = State
table-column-tenant = Tenant
table-column-operation = Operation
table-column-tier = Tier
table-column-attempts = Attempts
table-column-amplification = Attempts per intent
table-column-age = Age
table-column-deadline = Time to deadline
table-column-providers = Providers
table-column-receipt = Receipt
table-column-created = Created
table-count =
    { $count ->
        [one] One intent
       *[other] { $count } intents
    }
table-empty = No intents match these filters.
table-receipt-none = No receipt yet

## Intent states

state-new = New
state-prepared = Prepared
state-authorized = Authorized
state-executing = Executing
state-committed = Committed
state-rejected = Rejected
state-cancelled = Cancelled
state-expired = Expired
state-indeterminate = Outcome unknown
state-indeterminate-hint = It is not known whether the downstream system applied this. The intent stays here until a receipt or other evidence settles it; it has not failed.
state-paused = Paused

## Consequence tiers

tier-read = Read
tier-compute = Compute
tier-proposal = Proposal
tier-write = Write
tier-financial = Financial

## Filters

filter-all = All
filter-state = State
filter-tier = Tier
filter-clear = Clear filters
filter-active =
    { $count ->
        [one] One filter active
       *[other] { $count } filters active
    }

## Stale data

stale-banner =
    { $seconds ->
        [one] Connection lost. Showing data from one second ago; commands wait until it is back.
       *[other] Connection lost. Showing data from { $seconds } seconds ago; commands wait until it is back.
    }
stale-retry = Reconnect now

## Commands

command-pause = Pause
command-resume = Resume
command-reconcile = Reconcile
command-close = Close
command-confirm = Confirm
command-cancel = Cancel
command-pause-confirm =
    { $count ->
        [one] Pause one intent in { $scope }? It sends nothing more until resumed; what was already sent is not undone.
       *[other] Pause { $count } intents in { $scope }? They send nothing more until resumed; what was already sent is not undone.
    }
command-resume-confirm =
    { $count ->
        [one] Resume one intent in { $scope }? It continues where it stopped, with the same action key.
       *[other] Resume { $count } intents in { $scope }? They continue where they stopped, with the same action keys.
    }
command-reconcile-confirm = Ask the downstream system whether intent { $intent } was applied, using action key { $key }. Nothing is sent again.
command-close-confirm = Close intent { $intent } as { $disposition }? This is final and is recorded with your evidence.
command-close-disposition-committed = applied (committed)
command-close-disposition-cancelled = not applied (cancelled)
command-close-evidence = Evidence
command-close-evidence-hint = What shows the outcome, e.g. a document number in the ERP
command-dry-run =
    { $count ->
        [one] Dry run: one intent would be affected.
       *[other] Dry run: { $count } intents would be affected.
    }
command-disabled-role = Your role ({ $role }) may not do this.
command-disabled-state = Not possible while the intent is { $state }.
command-done = Done.
command-refused = The command was not accepted: { $reason }

## Errors

error-connection = Cannot reach the coordinator at { $url }.
error-unauthorized = Not signed in, or the token was refused.
error-forbidden = Your role may not do this.
error-not-found = Intent { $intent } was not found.
error-conflict = The intent changed in the meantime. Reload it and try again.
error-unexpected = Something went wrong: { $detail }
error-release-not-eligible = This release may not act for the operation: { $detail }

## Dates and text

date-gregorian = Gregorian: { $date }
text-copy = Copy

## Intents table, filters and top bar
action-copy-id = Copy intent id
action-copy-key = Copy action key
command-palette = Command palette
command-refresh = Refresh
command-save-view = Save current view
command-search = Search
command-show-dashboard = Show dashboard
command-show-intents = Show intents
command-switch-locale = Switch language
field-action-key = Action key
field-actor = Actor
field-args-hash = Arguments hash
field-attempts = Attempts
field-operation = Operation
field-purpose = Purpose
field-receipt = Receipt
field-release = Release
field-tenant = Tenant
field-tool = Tool
filter-any = Any
filter-locale = Language
filter-min-attempts = At least attempts
filter-more = More
filter-no = No
filter-operation = Operation
filter-paused = Paused
filter-release = Release
filter-remove = Remove this filter
filter-search = Search
filter-since = From
filter-tool = Tool
filter-until = Until
filter-yes = Yes
intent-attempts = Attempts
intent-close-view = Close
intent-receipts = Receipts
intent-transitions = State changes
range-15m = Last 15 minutes
range-1h = Last hour
range-24h = Last 24 hours
range-7d = Last 7 days
range-all = All time
state-unknown = unknown to this console
table-column-locale = Language
table-from-cache = shown from the local cache
table-showing = Showing
table-sorted-ascending = { $column }, sorted ascending
table-sorted-descending = { $column }, sorted descending
topbar-status-connecting = Connecting
topbar-status-offline = Offline
topbar-status-since = since
revisit-notice-title = Revisit the retry/failover gate:
revisit-notice-more = and { $count } more
revisit-notice-acknowledge = Acknowledge
revisit-notice-acknowledge-hint = Hide these changes at this desk; they stay in the coordinator's audit trail.
revisit-retention-shortened = { $subject }: key retention shortened from { $old } to { $new }
revisit-contract-changed = { $subject }: { $field } changed from { $old } to { $new }
revisit-provider-first-seen = New provider { $subject }
revisit-operation-first-seen = { $subject }: new operation { $operation } (creates { $resource })
revisit-release-first-seen = New release { $subject }
revisit-tool-first-seen = New tool { $subject } ({ $tier })
revisit-tool-new-tier = Tool { $subject } now used for { $tier } (before only { $before })
views-menu = Saved views
views-saved-name = View
table-attempts-of = { $used } of { $max }
unit-d = d
unit-h = h
unit-m = m
unit-s = s
unit-ms = ms

## Dashboard
dashboard-slice = Slice by
dashboard-slice-none = Nothing (all together)
dashboard-threshold-heading = Alert when
dashboard-threshold-duplicates = duplicate effects above
dashboard-threshold-p99 = amplification p99 above
dashboard-threshold-oldest = oldest indeterminate above (min)
dashboard-threshold-goodput = goodput drop on the hour before (%)
dashboard-threshold-late = late results (% of attempts)
dashboard-threshold-error-empty = Type a number; { $previous } stays in force.
dashboard-threshold-error-number = Not a number; { $previous } stays in force.
dashboard-threshold-error-whole = Type a whole number; { $previous } stays in force.
dashboard-threshold-error-range = Must be between { $min } and { $max }; { $previous } stays in force.
dashboard-threshold = threshold
dashboard-budget = budget ({ $budget })
dashboard-chart-histogram = Attempts per intent
dashboard-chart-amplification = Amplification of the intents created over time (mean, p99)
dashboard-chart-indeterminate = Indeterminate intents over time
dashboard-chart-age = Indeterminate age (oldest, p95, p50)
dashboard-chart-board = Oldest indeterminate intents
dashboard-chart-attempts = Attempts started
dashboard-chart-goodput = Goodput: committed intents per minute
dashboard-chart-goodput-attempt = Goodput per attempt
dashboard-chart-late = Late results (share of the attempts started)
dashboard-chart-duplicates = Duplicate effects
dashboard-chart-divergence = Failover divergence
dashboard-axis-intents = Intents
dashboard-axis-attempts-per-intent = Attempts per intent
dashboard-axis-age = Age (h:mm)
dashboard-axis-attempts = Attempts
dashboard-axis-per-minute = Per minute
dashboard-axis-ratio = Share
dashboard-axis-effects = Effects
dashboard-click-histogram = Click to list the intents with at least this many attempts
dashboard-click-created = Click to list the intents created in this interval
dashboard-click-indeterminate = Click to list the intents indeterminate now, oldest first
dashboard-click-committed = Click to list the committed intents created in this interval
dashboard-series-mean = mean
dashboard-series-p99 = p99
dashboard-series-oldest = oldest
dashboard-series-p95 = p95
dashboard-series-p50 = p50
dashboard-series-all = All
dashboard-tile-intents = Intents
dashboard-tile-attempts = Attempts
dashboard-tile-amplification = Amplification mean / p99
dashboard-tile-lookup-amplification = Lookups per intent mean / max
dashboard-tile-indeterminate = Indeterminate now
dashboard-tile-age = Oldest / p95 / p50 age
dashboard-tile-committed = Committed
dashboard-tile-goodput-hour = Committed last hour / hour before
dashboard-tile-duplicates = Duplicate effects
dashboard-tile-late = Late results
dashboard-tile-divergence = Failover divergence
dashboard-board-age = Indeterminate for
dashboard-loading = Loading...
dashboard-empty = No data in this range
dashboard-note-indeterminate = Indeterminate over time counts the intents that were indeterminate at the end of each interval, from their recorded state changes; ages are measured at the same moments.
dashboard-note-cohort = Amplification and divergence describe the intents created in each interval, late results the attempts started in it; attempts, goodput and duplicate effects are counted when they happened.
dashboard-note-provider = Sliced by provider, an intent counts under every provider its attempts used.
dashboard-note-time = Times are in this computer's time zone.
dashboard-badge-p99 = amplification p99 { $value } > { $limit }
dashboard-badge-oldest = oldest indeterminate { $age } > { $limit } min
dashboard-badge-duplicates = duplicate effects { $value } > { $limit }
dashboard-badge-goodput = goodput down { $value }% on the previous hour > { $limit }%
dashboard-badge-late = late results { $value }% > { $limit }%
dashboard-badge-hint = A dashboard threshold is crossed; click to open the dashboard.
timeline-fit-activity = Fit activity
timeline-fit-span = Creation to deadline
timeline-legend = Legend and keys

## Intent view: timeline, envelope, action-key ledger, audit trail, commands, export

intent-refresh = Refresh
intent-export = Export JSON...
intent-pause = Pause...
intent-resume = Resume...
intent-reconcile = Reconcile now...
intent-close = Close...
intent-cancel = Cancel...
intent-attempts-of = { $attempts } of { $max } attempts
intent-signed-in = Signed in as { $name } ({ $role }).
intent-role-checking = Checking what your role may do...
intent-role-unknown = The coordinator did not say what your role may do; it decides when you confirm.
intent-disabled-pause-role = Pause and resume: your role ({ $role }) may not; engineers and admins may.
intent-disabled-reconcile-role = Reconcile: your role ({ $role }) may not; supervisors, engineers and admins may.
intent-disabled-close-role = Close: your role ({ $role }) may not; supervisors, engineers and admins may.
intent-disabled-resume-none = Resume: no pause covers this intent.
intent-disabled-reconcile-state = Reconcile: only an indeterminate intent is looked up; this one is { $state }.
intent-disabled-close-final = Close: the intent is { $state }, which is final.
intent-disabled-cancel-role = Cancel: your role ({ $role }) may not; supervisors, engineers and admins may.
intent-disabled-cancel-final = Cancel: the intent is { $state }, which is final; there is nothing left to cancel.
intent-disabled-cancel-requested = Cancel: cancellation is already requested; the intent waits for evidence of what was applied.
intent-command-error = The command did not go through: { $reason }
intent-queue-full = the console is busy; try again
intent-tab-timeline = Timeline
intent-tab-envelope = Envelope
intent-tab-ledger = Action key
intent-tab-audit = Audit trail

timeline-title = Timeline
timeline-axis-direction = Time, left to right
timeline-row-state = State
timeline-row-events = Receipts, commands
timeline-row-overview = All attempts
timeline-no-attempts = No attempts yet.
timeline-help = Ctrl+wheel or + and - zoom; drag, Shift+wheel or the arrow keys pan; the wheel scrolls lanes; Home shows everything. Click a lane to see its attempt.
timeline-select-hint = Click an attempt in the timeline to see all its fields.
timeline-click-to-select = Click to show every field.
timeline-hedge-group = Hedged with the other attempts of group { $group }
timeline-cluster = { $count } marks here; zoom in to tell them apart.
timeline-overview-count =
    { $count ->
        [one] One attempt running
       *[other] { $count } attempts running
    }
timeline-overview-succeeded = succeeded
timeline-overview-unknown = outcome unknown
timeline-overview-failed = failed
timeline-overview-other = running or abandoned
timeline-line-deadline = deadline
timeline-line-reserve = confirmation reserve
timeline-line-key-forget = key may be forgotten
timeline-line-now = now
timeline-line-next-lookup = next lookup
timeline-line-lookups-exhausted = lookups exhausted
timeline-mark-transition = State change
timeline-mark-dispatch = Dispatch
timeline-mark-lost = Lost response
timeline-mark-timeout = Timeout
timeline-mark-lookup = Lookup by action key
timeline-mark-replay = Replayed first result
timeline-mark-mismatch = Key mismatch (422)
timeline-mark-receipt = Receipt
timeline-mark-webhook = Webhook receipt
timeline-mark-command = Operator command
timeline-cancel-requested = Cancellation requested: the state stays until evidence settles it.
timeline-outcome-pending = running
timeline-outcome-succeeded = succeeded
timeline-outcome-failed = failed
timeline-outcome-timed-out = timed out (outcome unknown)
timeline-outcome-lost = response lost (outcome unknown)
timeline-outcome-abandoned = abandoned

attempt-id = Attempt
attempt-kind = Kind
attempt-provider = Provider
attempt-region = Region
attempt-model = Model
attempt-worker = Worker
attempt-provider-request-id = Provider request id
attempt-hedge-group = Hedge group
attempt-hedge-lost = Lost to another hedge
attempt-cost = Reported cost
attempt-original-release = Release of the intent
attempt-release-change = Release change
attempt-release-changed = Another release than the intent's: a failover to it
attempt-outcome = Outcome
attempt-error-class = Error class
attempt-http-status = HTTP status
attempt-retry-after = Retry-After
attempt-proposal-hash = Proposal hash
attempt-presented-key = Presented key
attempt-replayed = Replayed
attempt-sent = May have been sent
attempt-late = Late
attempt-detail = Detail
attempt-started = Started
attempt-ended = Ended
attempt-duration = Took
attempt-downstream-resource = Downstream resource
attempt-key-retention = Sent under key retention

envelope-title = Envelope
envelope-intent-id = Intent
envelope-consequence = Consequence tier
envelope-authorization = Authorization (approver)
envelope-downstream = Downstream scope
envelope-created = Created
envelope-deadline = Deadline
envelope-key-retention = Key retention (sent under)
envelope-key-forget = Key may be forgotten at
envelope-cancel-requested = Cancellation requested
envelope-cancel-by = Cancellation asked by
envelope-cancel-reason = Why cancel
envelope-workflow = Workflow
envelope-parent = Made for intent
envelope-supersedes = Replaces
envelope-superseded-by = Replaced by
links-title = Linked intents
links-workflow = Workflow { $workflow }
links-revisions = Revisions (each replaces the one before)
links-this = this intent
links-cancel-requested = cancellation requested
envelope-max-attempts = Attempts / budget
envelope-lookups = Lookups / attempts
envelope-lookups-value = { $lookups } / { $attempts }
envelope-last-lookup = Last lookup
envelope-next-lookup = Next automatic lookup
envelope-lookups-exhausted = Lookups exhausted
envelope-retry-owner = Retry owner
envelope-receipt-id = Receipt
envelope-downstream-ref = Downstream reference
envelope-locale = Origin language
envelope-caller-key = Caller's idempotency key
envelope-first-dispatch = First dispatch
envelope-indeterminate-since = Indeterminate since
envelope-committed-at = Committed at
envelope-args = The frozen command: what was, or may have been, ordered
envelope-args-empty = No arguments
envelope-args-marks = Warning: this text holds invisible direction marks, written out here as ⟦U+…⟧. They can make a supplier or an amount look like something else; check it with the agent's owner.
envelope-args-hash-matches = These arguments are exactly the ones the hash covers.
envelope-args-hash-differs = Warning: these arguments do not give the recorded hash. Do not act on them before the coordinator's data is checked.
envelope-args-canonical = Canonical JSON (the text the hash covers)
envelope-args-copy = Copy the canonical JSON
envelope-approved-at = Approved at
envelope-approval-expires = Approval expires
envelope-policy-version = Approved under policy
envelope-no-policy = no policy
envelope-created-by = Created by
envelope-downstream-resource = Downstream resource (as sent)
envelope-key-retention-now = Key retention configured now
retry-owner-coordinator = Coordinator (it alone sends and retries mutating work)
retry-owner-agent = Agent (it retries the work it reports, within the budget)

ledger-title = Action-key ledger
ledger-no-key = This intent has no action key: it never reaches a mutating downstream.
ledger-summary = Fresh executions: { $fresh }. Replays of the first result: { $replays }. Refused as mismatches: { $mismatches }.
ledger-ingest = The agent's own intent key: replayed requests { $replays }, refused with different arguments { $mismatches }.
ledger-forget-at = The downstream may forget this key at { $at }.
ledger-forget-unknown = Not known yet when the downstream may forget this key: nothing was dispatched.
ledger-warning-passed = Warning: the downstream may already have forgotten this key (since { $at }). A retry now would not be deduplicated and could apply the action twice.
ledger-warning-retry-after = Warning: retries are allowed until { $until }, but the downstream may forget this key at { $at }. A retry after that would not be deduplicated and could apply the action twice.
ledger-no-uses = No attempt has presented this key yet.
ledger-use-fresh = Fresh execution
ledger-use-replay = Replay of the first result
ledger-use-mismatch = Refused: same key, different body (422)
ledger-use-unknown = Outcome unknown: may have executed
ledger-use-in-flight = Waiting for the answer
ledger-use-not-applied = Not applied
ledger-use-lookup-found = Lookup: found downstream
ledger-use-lookup-not-found = Lookup: not found, or no answer
ledger-lookups = Lookups of this key: { $count } (attempts: { $attempts }). Last: { $last }.
ledger-lookups-never = never
ledger-lookups-next = Next automatic lookup at { $at }; each one that finds nothing waits longer.
ledger-lookups-exhausted = Lookups exhausted at { $at }: the coordinator looks this key up no more by itself. It waits for an operator, who can reconcile it now.
ledger-after-forget = after the key may have been forgotten
ledger-no-receipts = No receipt yet.
ledger-receipt-authoritative = authoritative
ledger-receipt-duplicate = duplicate, ignored
ledger-sent-under = The key was first sent under a key retention of { $retention }.
ledger-retention-shorter-now = Warning: the connector's key retention is now { $live }, shorter than the { $sent } this key was sent under. The coordinator keeps to the shorter one: the time above already counts with it, and no resend leaves after it.
ledger-retention-longer-now = Note: the connector's key retention is now { $live }, longer than the { $sent } this key was sent under. The coordinator keeps to the { $sent } the key was sent with.

audit-title = Audit trail
audit-show-dry-runs = Show dry runs
audit-empty = No operator command has touched this intent.
audit-who = By { $actor } ({ $role })
audit-why = Reason: { $reason }
audit-no-reason = No reason given.
audit-evidence = Evidence: reference { $reference }; note { $note }
audit-status-applied = Applied
audit-status-refused = Refused
audit-status-dry-run = Dry run
audit-status-accepted = Accepted, looking up
audit-result-refused = Refused: { $reason }
audit-result-dry-run =
    { $count ->
        [one] Would cover one open intent.
       *[other] Would cover { $count } open intents.
    }
audit-result-pause =
    { $count ->
        [one] Paused; it covered one open intent when applied.
       *[other] Paused; it covered { $count } open intents when applied.
    }
audit-result-resume =
    { $count ->
        [one] One pause ended.
       *[other] { $count } pauses ended.
    }
audit-result-close = Closed: { $from } -> { $to }.
audit-result-reconcile-running = The lookup is running.
audit-result-reconcile-others = Looked up { $count } other intents; not this one.
audit-result-reconcile-committed = Found downstream as { $reference }: committed.
audit-result-reconcile-resent = Proved absent: the same command was sent again with the same key.
audit-result-reconcile-still = Still indeterminate: { $why }
audit-result-reconcile-not-indeterminate = Nothing to look up: the intent was { $state }.
audit-result-reconcile-failed = The lookup failed; the intent is unchanged.
audit-result-reconcile-not-due = Not looked up: the next automatic lookup is not due yet.
audit-result-reconcile-exhausted = Not looked up: the automatic lookups are exhausted; an operator's reconcile looks it up.
audit-result-reconcile-cancelled = Proved absent while cancellation was requested: cancelled, not sent again.
audit-result-cancel-cancelled = Cancelled: nothing had crossed to the downstream.
audit-result-cancel-requested = Cancellation requested: a send may have crossed, so the intent waits for evidence.

dialog-title-pause = Pause
dialog-title-resume = Resume
dialog-title-reconcile = Reconcile now
dialog-title-close = Close with a disposition
dialog-title-cancel = Cancel the intent
dialog-target-intent = Target: intent { $intent }
dialog-target-scope = Target: every intent with { $scope }
dialog-target-everything = any tenant, provider and tool
dialog-scope = Scope
dialog-scope-intent = This intent only
dialog-scope-intent-final = This intent is final; there is nothing left to pause.
dialog-scope-tenant = Every intent of tenant { $tenant }
dialog-scope-provider = Every intent using provider { $provider }
dialog-scope-tool = Every intent using tool { $tool }
dialog-scope-limited = Your token is limited to { $tenants }; the scope stays inside.
dialog-dry-run-asking = Asking the coordinator which intents this covers...
dialog-dry-run-result =
    { $count ->
        [0] It covers no open intent now.
        [one] It covers one open intent now:
       *[other] It covers { $count } open intents now:
    }
dialog-dry-run-more = ...and { $count } more.
dialog-dry-run-failed = The dry run failed: { $reason }
dialog-dry-run-future = Intents that enter this scope later are held too, until it is resumed.
dialog-will = What will happen
dialog-will-not = What will not happen
dialog-pause-will = No new attempt and no automatic retry starts for the intents in scope until someone resumes them.
dialog-pause-will-not = Work already in flight is not cancelled and may still complete. Read-only lookups continue. Nothing is rolled back.
dialog-resume-will = The pause ends: attempts and retries it held back may start again, with the same action keys.
dialog-resume-will-not = Nothing is sent twice, and nothing decided during the pause is undone.
dialog-reconcile-will = The coordinator asks the downstream, read only, for a record under action key { $key }. If one is found, the intent becomes committed with it as the receipt. If the downstream proves there is none and still remembers the key, the same command is sent again with the same key, which cannot create a second record.
dialog-reconcile-will-not = No new key is made and nothing is sent blindly. If the answer proves nothing, the intent stays indeterminate.
dialog-close-committed-will = The intent is recorded as committed, with { $reference } as its receipt. Retries stop. This is final.
dialog-close-cancelled-will = The intent is recorded as cancelled, on your evidence that nothing was applied downstream. Retries stop. This is final.
dialog-close-will-not = Nothing is sent to the downstream: no record there is created, changed or rolled back.
dialog-cancel-will = Nothing of this intent has crossed to the downstream: it ends cancelled, and any send still planned is withdrawn. This is final.
dialog-cancel-crossed-will = A send of this intent may already have reached the downstream. The cancellation is recorded as requested: no new attempt starts, and the intent keeps its state until evidence settles it. A receipt makes it committed; a lookup that proves nothing was applied makes it cancelled.
dialog-cancel-will-not = Nothing is rolled back downstream: a record already created there stays, and its result is counted as late.
dialog-disposition = Disposition
dialog-disposition-committed = Committed: it was applied
dialog-disposition-cancelled = Cancelled: nothing was applied
dialog-reference = Receipt or downstream reference
dialog-reference-optional = Receipt or downstream reference (optional)
dialog-reference-hint = e.g. the purchase order number in the ERP
dialog-note = Evidence that nothing was applied
dialog-note-optional = Evidence (optional)
dialog-note-hint = What was checked, and where
dialog-reason = Reason
dialog-reason-optional = Reason (optional)
dialog-reason-hint = Why, for the audit trail
dialog-needs-reason = A reason is required.
dialog-needs-reference = Closing as committed needs a receipt id or downstream reference.
dialog-needs-evidence = Closing as cancelled needs evidence that nothing was applied.
dialog-needs-dry-run = Wait for the dry run to show what this covers.
dialog-committed-not-now = Committed is possible only while the intent is executing or indeterminate.
dialog-confirm-pause = Confirm pause
dialog-confirm-resume = Confirm resume
dialog-confirm-reconcile = Reconcile
dialog-confirm-close = Confirm close
dialog-cancel = Cancel
dialog-sending = Sending command { $id }. If the answer is lost it is sent again with the same id, so it applies once.
dialog-refused = The coordinator refused it: { $reason }
dialog-failed = Not confirmed: { $reason }. It may or may not have arrived. Sending again is safe: it carries the same command id and applies at most once.
dialog-send-again = Send again
dialog-resume-which = Which pause to end
dialog-error-forbidden = your role may not do this ({ $detail })

export-title-intent = Export the intent as JSON
export-title-table = Export the table as CSV
export-what-intent = The envelope, every attempt, the receipts, state changes, audit trail, pauses and the action-key ledger.
export-what-table =
    { $count ->
        [one] One intent, as the table shows it now.
       *[other] { $count } intents, as the table shows them now.
    }
export-path = File
export-save = Save
export-close = Close
export-writing = Writing...
export-done = Saved to { $path }
export-failed = Not saved: { $reason }
export-no-intent = No intent is open.
command-export-intent = Export the open intent as JSON
command-export-table = Export the table as CSV
dialog-needs-scope = Choose what the pause covers.
dialog-target-unchosen = Target: not chosen yet
