//! The decision log: `RUN_BASE/<flow>/routing/decisions.jsonl`, one validated decision per
//! line, locked and fsynced.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{Decision, Flow, ForensicSummary};
use crate::jsonl::now_rfc3339;
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
        o.remove("rests_on");
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
