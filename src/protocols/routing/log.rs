//! The decision log: `RUN_BASE/<flow>/routing/decisions.jsonl`, one validated decision per
//! line, locked and fsynced.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{Decision, Flow, ForensicSummary};
use crate::schemas::{self, SchemaId};

/// The decision log of a flow: `RUN_BASE/<flow>/routing/decisions.jsonl`.
pub fn log_path(run_base: &Path, flow: &str) -> PathBuf {
    run_base.join(flow).join("routing").join("decisions.jsonl")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogEntry {
    pub timestamp: String,
    pub step_id: String,
    #[serde(flatten)]
    pub decision: Decision,
    pub forensic_summary: ForensicSummary,
}

/// Checks the decision's seed fields against the schema and appends it to the flow's log
/// under `run_base`; returns the log's path.
pub fn record(
    run_base: &Path,
    flow: &Flow,
    summary: &ForensicSummary,
    decision: &Decision,
) -> Result<PathBuf> {
    let mut seed_fields = serde_json::to_value(decision)?;
    if let Some(o) = seed_fields.as_object_mut() {
        o.remove("decided_by");
    }
    schemas::validate(SchemaId::RoutingDecision, &seed_fields)?;
    let log = log_path(run_base, &flow.name);
    append_log(
        &log,
        &LogEntry {
            timestamp: now_rfc3339(),
            step_id: summary.step_completed.clone(),
            decision: decision.clone(),
            forensic_summary: summary.clone(),
        },
    )?;
    Ok(log)
}

/// Appends one decision to the log (locked, fsynced; see `crate::jsonl`).
pub fn append_log(path: &Path, entry: &LogEntry) -> Result<()> {
    crate::jsonl::append(path, entry)
}

/// Reads the log; lines that do not parse (a torn write) are skipped.
pub fn read_log(path: &Path) -> Result<Vec<LogEntry>> {
    crate::jsonl::read(path)
}

/// RFC 3339 UTC timestamp with seconds.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}
