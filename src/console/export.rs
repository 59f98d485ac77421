//! Export for an incident report: the open intent as JSON (envelope, attempts, receipts,
//! state changes, audit trail, pauses and the action-key ledger) and the current table as
//! CSV. The operator types the path; the file is written on a thread of its own — never on
//! the UI thread — to a temporary file that is then renamed, so a reader never sees half a
//! file. Times in the files are unix milliseconds and ISO 8601 UTC; ids keep Latin digits.
//! The dialog that asks for the path is `views/export.rs`.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde_json::{Value, json};

use super::model::{IntentDetail, IntentRow};
use super::views::ledger::Ledger;

/// What is exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// The open intent, as JSON.
    Intent,
    /// The rows of the table as filtered now, as CSV.
    Table,
}

/// The export dialog, a write in progress and the last result.
#[derive(Debug, Default)]
pub struct ExportState {
    pub dialog: Option<(ExportKind, String)>,
    job: Option<mpsc::Receiver<Result<PathBuf, String>>>,
    /// The last export: where it went, or why it failed.
    pub last: Option<Result<PathBuf, String>>,
}

impl ExportState {
    /// Open the dialog with a file name that says what it holds.
    pub fn open(&mut self, kind: ExportKind, intent_id: Option<&str>, now_ms: u64) {
        let name = match (kind, intent_id) {
            (ExportKind::Intent, Some(id)) => format!("intent-{id}.json"),
            (ExportKind::Intent, None) => "intent.json".to_string(),
            (ExportKind::Table, _) => format!("intents-{}.csv", iso_utc(now_ms).replace(':', "-")),
        };
        let dir = std::env::current_dir().unwrap_or_default();
        self.dialog = Some((kind, dir.join(name).display().to_string()));
    }

    /// Whether a file is being written.
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Write `bytes` (made on the writer thread by `make`) to `path` off the UI thread.
    pub fn start(
        &mut self,
        ctx: &egui::Context,
        path: PathBuf,
        make: impl FnOnce() -> Result<Vec<u8>, String> + Send + 'static,
    ) {
        let (tx, rx) = mpsc::channel();
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let result =
                make().and_then(|bytes| write_atomic(&path, &bytes).map_err(|e| e.to_string()));
            let _ = tx.send(result.map(|()| path));
            ctx.request_repaint();
        });
        self.job = Some(rx);
        self.last = None;
    }

    /// Take the writer's answer, once it is there.
    pub fn poll(&mut self) {
        if let Some(rx) = &self.job {
            match rx.try_recv() {
                Ok(result) => {
                    self.last = Some(result);
                    self.job = None;
                }
                Err(mpsc::TryRecvError::Empty) => {}
                Err(mpsc::TryRecvError::Disconnected) => {
                    self.last = Some(Err("the writer stopped".into()));
                    self.job = None;
                }
            }
        }
    }
}

/// Write to a temporary file beside `path`, then rename it into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let tmp = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Unix milliseconds as `2026-11-30T09:35:55.123Z`.
pub fn iso_utc(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        ms % 1000
    )
}

/// One intent for an incident report.
pub fn intent_json(detail: &IntentDetail, coordinator: &str, now_ms: u64) -> Value {
    let ledger = Ledger::build(detail, now_ms);
    let uses: Vec<Value> = ledger
        .rows
        .iter()
        .map(|r| {
            json!({
                "attempt_id": detail.attempts[r.attempt].id,
                "use": format!("{:?}", r.use_),
                "after_key_may_be_forgotten": r.after_forget,
            })
        })
        .collect();
    let intent = &detail.intent;
    let canonical = intent
        .args
        .as_ref()
        .and_then(|args| crate::domain::canonical::canonicalize(args).ok());
    json!({
        "exported_at_ms": now_ms,
        "exported_at": iso_utc(now_ms),
        "coordinator": coordinator,
        // What was, or may have been, ordered: the exact text the hash covers.
        "frozen_command": {
            "operation": intent.operation,
            "connector": intent.connector,
            "canonical_args": canonical.as_ref().map(|c| c.json.clone()),
            "canonical_args_hash": intent.canonical_args_hash,
            // Unknown (null) when the arguments were not part of the read.
            "hash_matches": canonical.as_ref().map(|c| c.hash == intent.canonical_args_hash),
        },
        "intent": detail.intent,
        "attempts": detail.attempts,
        "receipts": detail.receipts,
        "transitions": detail.transitions,
        "audit": detail.commands,
        "pauses": detail.pauses,
        "action_key_ledger": {
            "action_key": ledger.key,
            "key_forget_at_ms": ledger.forget_at_ms,
            "fresh": ledger.fresh,
            "replays": ledger.replays,
            "mismatches": ledger.mismatches,
            "ingest_replays": detail.ingest_replays,
            "ingest_mismatches": detail.ingest_mismatches,
            "uses": uses,
        },
    })
}

/// A CSV cell: quoted when needed, and never read as a formula by a spreadsheet.
fn cell(value: &str) -> String {
    let value = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_string()
    };
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

/// The table's rows as CSV, one intent per line, with a header.
pub fn table_csv(rows: &[IntentRow]) -> String {
    let mut out = String::from(
        "intent_id,tenant,operation,tool,consequence,state,paused,attempts,max_attempts,created_at,\
         deadline_at,providers,receipt_id,downstream_ref,action_key,locale,release_id\n",
    );
    for r in rows {
        let fields = [
            r.id.to_string(),
            r.tenant.to_string(),
            r.operation.clone(),
            r.tool.clone(),
            r.consequence.to_string(),
            r.state.wire().to_string(),
            r.paused.to_string(),
            r.attempts.to_string(),
            r.max_attempts.to_string(),
            iso_utc(r.created_at_ms),
            if r.deadline_at_ms > 0 {
                iso_utc(r.deadline_at_ms)
            } else {
                String::new()
            },
            r.providers.join(";"),
            r.receipt_id.clone().unwrap_or_default(),
            r.downstream_ref.clone().unwrap_or_default(),
            r.action_key.to_string(),
            r.locale.to_string(),
            r.release_id.clone(),
        ];
        let line: Vec<String> = fields.iter().map(|f| cell(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_match_the_calendar() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(1_796_031_355_123), "2026-11-30T09:35:55.123Z");
        assert_eq!(iso_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn an_exported_intent_carries_its_frozen_command() {
        let args = json!({"supplier": "ACME-IR", "amount": "۳۵٬۵۰۰٬۰۰۰", "currency": "IRR"});
        let hash = crate::domain::canonical::canonicalize(&args)
            .expect("canonical")
            .hash;
        let detail: IntentDetail = serde_json::from_value(json!({"intent": {
            "id": "int_01kbx7q3p9d2m8v4r6t0y5zs09", "tenant": "pars-trading", "operation": "payment.initiate",
            "consequence": "financial", "state": "indeterminate", "created_at_ms": 1, "connector": "legacy-erp",
            "action_key": "pay:pars-trading:int_01kbx7q3p9d2m8v4r6t0y5zs09", "args": args, "canonical_args_hash": hash,
        }}))
        .expect("detail");
        let exported = intent_json(&detail, "http://c", 2);
        let frozen = &exported["frozen_command"];
        assert_eq!(
            frozen["canonical_args"],
            r#"{"amount":35500000,"currency":"IRR","supplier":"ACME-IR"}"#
        );
        assert_eq!(frozen["canonical_args_hash"], hash.as_str());
        assert_eq!(frozen["hash_matches"], true);
        assert_eq!(frozen["connector"], "legacy-erp");
    }

    #[test]
    fn csv_cells_are_quoted_and_never_formulas() {
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(cell("po:acme:int_01"), "po:acme:int_01");
    }
}
