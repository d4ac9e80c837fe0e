//! Flows: steps, the detour catalogue, limits and the charter; the compiled-in example.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use super::DecisionKind;

#[derive(Debug, Clone, Deserialize)]
pub struct Flow {
    pub name: String,
    #[serde(default)]
    pub charter: Charter,
    #[serde(default)]
    pub limits: Limits,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub detours: Vec<Detour>,
    /// INJECT_FLOW and INJECT_NODES, when this flow allows the model stage to choose them
    /// (never by default: injecting work is a flow's decision, not the model's).
    #[serde(default)]
    pub may_inject: Vec<DecisionKind>,
}

#[derive(Debug, Clone, Deserialize, Default)]
pub struct Charter {
    #[serde(default)]
    pub goal: String,
    #[serde(default)]
    pub non_goals: Vec<String>,
    #[serde(default)]
    pub key_question: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Limits {
    pub max_iterations: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_iterations: 3 }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub id: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub terminal: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Detour {
    pub signature: String,
    pub target: String,
    #[serde(default)]
    pub description: String,
}

/// The example build flow, compiled in so that `sextant route` and the router console work
/// from any folder (and from the installed package).
pub const EXAMPLE_FLOW: &str = include_str!("../../../examples/flow.toml");

impl Flow {
    /// The compiled-in example flow (`examples/flow.toml`, named "build").
    pub fn example() -> Flow {
        Flow::parse(EXAMPLE_FLOW, Path::new("examples/flow.toml"))
            .expect("the example flow is valid")
    }

    pub fn load(path: &Path) -> Result<Flow> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Flow::parse(&text, path)
    }

    /// Parses a flow file's text (`path` picks JSON or TOML and names the file in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Flow> {
        let flow: Flow = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(text)
                .with_context(|| format!("{} is not a valid flow", path.display()))?
        } else {
            toml::from_str(text)
                .with_context(|| format!("{} is not a valid flow", path.display()))?
        };
        if let Some(k) = flow
            .may_inject
            .iter()
            .find(|k| !matches!(k, DecisionKind::InjectFlow | DecisionKind::InjectNodes))
        {
            bail!(
                "{}: may_inject lists {}; only INJECT_FLOW and INJECT_NODES can be listed",
                path.display(),
                k.as_str()
            );
        }
        if flow.steps.is_empty() {
            bail!("{}: a flow needs at least one step", path.display());
        }
        if flow.name.is_empty() || flow.name.contains(['/', '\\']) || flow.name.starts_with('.') {
            bail!(
                "{}: flow name {:?} cannot name a folder",
                path.display(),
                flow.name
            );
        }
        Ok(flow)
    }

    pub(super) fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }

    pub(super) fn next_step(&self, id: &str) -> Option<&Step> {
        self.step_index(id).and_then(|i| self.steps.get(i + 1))
    }

    pub(super) fn detour_for(&self, signature: &str) -> Option<&Detour> {
        self.detours.iter().find(|d| d.signature == signature)
    }
}
