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
topbar-status-connecting = Connecting
topbar-status-offline = Offline
topbar-status-since = since
views-menu = Saved views
views-saved-name = View

## Dashboard
dashboard-slice = Slice by
dashboard-slice-none = Nothing (all together)
dashboard-threshold-p99 = Alert when amplification p99 is above
dashboard-threshold-oldest = or the oldest indeterminate is older than (minutes)
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
dashboard-chart-late = Late results
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
dashboard-tile-indeterminate = Indeterminate now
dashboard-tile-age = Oldest / p95 / p50 age
dashboard-tile-committed = Committed
dashboard-tile-duplicates = Duplicate effects
dashboard-tile-late = Late results
dashboard-tile-divergence = Failover divergence
dashboard-board-age = Indeterminate for
dashboard-loading = Loading...
dashboard-empty = No data in this range
dashboard-note-indeterminate = Indeterminate over time counts the intents that were indeterminate at the end of each interval, from their recorded state changes; ages are measured at the same moments.
dashboard-note-cohort = Amplification and divergence describe the intents created in each interval; attempts, goodput, late results and duplicate effects are counted when they happened.
dashboard-note-provider = Sliced by provider, an intent counts under every provider its attempts used.
dashboard-note-time = Times are in this computer's time zone.
dashboard-badge-p99 = amplification p99 { $value } > { $limit }
dashboard-badge-oldest = oldest indeterminate { $age } > { $limit } min
dashboard-badge-hint = A dashboard threshold is crossed; click to open the dashboard.
timeline-fit-activity = Fit activity
timeline-fit-span = Creation to deadline
timeline-legend = Legend and keys
