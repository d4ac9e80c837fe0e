//! The forensic summary a step reports, parsed and checked against its flow.

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Flow;

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Tests {
    #[serde(default)]
    pub passed: u32,
    #[serde(default)]
    pub failed: u32,
    #[serde(default)]
    pub skip: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Lint {
    #[serde(default)]
    pub errors: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Concern {
    pub severity: String,
    pub description: String,
    #[serde(default)]
    pub location: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Measurements {
    #[serde(default)]
    pub tests: Tests,
    #[serde(default)]
    pub lint: Lint,
    #[serde(default)]
    pub diff: Option<Value>,
    #[serde(default)]
    pub concerns: Vec<Concern>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Iteration {
    pub current: u32,
    pub max: u32,
}

/// The compact forensic summary a step hands to the router.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForensicSummary {
    pub step_completed: String,
    #[serde(default)]
    pub agent: String,
    pub status: String,
    #[serde(default)]
    pub forensics: Measurements,
    pub iteration: Iteration,
    #[serde(default)]
    pub previous_failure_signature: Option<String>,
    /// This step's failure signature, when the step knows it.
    #[serde(default)]
    pub failure_signature: Option<String>,
    #[serde(default)]
    pub can_further_iteration_help: Option<bool>,
}

const STATUSES: [&str; 4] = ["VERIFIED", "UNVERIFIED", "FAILED", "BLOCKED"];
const SEVERITIES: [&str; 4] = ["HIGH", "MEDIUM", "LOW", "INFO"];

impl ForensicSummary {
    /// Parses and checks a summary against the flow; errors name the field and the fix.
    pub fn parse(text: &str, flow: &Flow) -> Result<ForensicSummary> {
        let s: ForensicSummary = serde_json::from_str(text)
            .map_err(|e| anyhow!("the forensic summary is not valid: {e}"))?;
        if flow.step_index(&s.step_completed).is_none() {
            bail!(
                "step_completed {:?} is not a step of flow '{}' (steps: {})",
                s.step_completed,
                flow.name,
                flow.steps
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !STATUSES.contains(&s.status.as_str()) {
            bail!(
                "status {:?} is not one of {}",
                s.status,
                STATUSES.join(", ")
            );
        }
        for c in &s.forensics.concerns {
            if !SEVERITIES.contains(&c.severity.as_str()) {
                bail!(
                    "concern severity {:?} is not one of {}",
                    c.severity,
                    SEVERITIES.join(", ")
                );
            }
        }
        if s.iteration.max == 0 || s.iteration.current == 0 {
            bail!("iteration.current and iteration.max start at 1");
        }
        Ok(s)
    }

    pub(super) fn high_concerns(&self) -> usize {
        self.forensics
            .concerns
            .iter()
            .filter(|c| c.severity == "HIGH")
            .count()
    }

    /// The signature of this step's failure: given, or derived from the measurements.
    pub fn signature(&self) -> Option<String> {
        self.failure_signature.clone().or_else(|| {
            (self.forensics.lint.errors > 0 && self.forensics.tests.failed == 0)
                .then(|| "lint_errors".to_string())
        })
    }
}
