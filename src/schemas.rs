//! The one registry of the five seed response formats: the JSON Schema files of
//! `schemas/`, compiled into the binary, each with a realistic example prompt (`make demo`,
//! the integration tests, `sextant bench generate`) and a validator compiled once.

use std::sync::OnceLock;

use anyhow::Result;
use serde_json::Value;

use crate::constrain::validate::SchemaValidator;

/// The seed formats, in `BUILTIN` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaId {
    NavigatorResponse = 0,
    RagResponse = 1,
    RoutingDecision = 2,
    NavigateToSection = 3,
    InterviewTurn = 4,
}

impl SchemaId {
    pub fn builtin(self) -> &'static BuiltinSchema {
        &BUILTIN[self as usize]
    }
}

/// Validates `value` against a seed format (validators are compiled on first use).
pub fn validate(id: SchemaId, value: &Value) -> Result<()> {
    static VALIDATORS: OnceLock<Vec<SchemaValidator>> = OnceLock::new();
    let validators = VALIDATORS.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|b| SchemaValidator::new(&b.schema()).expect("built-in schemas compile"))
            .collect()
    });
    validators[id as usize].validate(value)?;
    Ok(())
}

pub struct BuiltinSchema {
    /// Short name (`sextant generate --schema NAME` accepts it as well as a path).
    pub name: &'static str,
    pub file: &'static str,
    pub json: &'static str,
    pub system: &'static str,
    pub example_prompt: &'static str,
}

impl BuiltinSchema {
    pub fn schema(&self) -> Value {
        serde_json::from_str(self.json).expect("built-in schemas are valid JSON")
    }
}

pub const BUILTIN: [BuiltinSchema; 5] = [
    BuiltinSchema {
        name: "navigator-response",
        file: "schemas/navigator-response.schema.json",
        json: include_str!("../schemas/navigator-response.schema.json"),
        system: "You are a documentation navigator for a Kubernetes operations knowledge base. \
                 Answer only from the excerpts given, cite the file and section of each one \
                 you use, and say honestly when they do not answer the question.",
        example_prompt: "Excerpts:\n\
            [troubleshooting/rollback-procedures.md § Quick Rollback] To roll back a deployment, run \
            `kubectl rollout undo deployment/<name>`. This reverts to the previous revision.\n\
            [reference/kubectl-commands.md § Deployment Management] `kubectl rollout history \
            deployment/<name>` lists revisions; add `--to-revision=N` to undo to a specific one.\n\n\
            Question: How do I roll back a deployment?",
    },
    BuiltinSchema {
        name: "rag-response",
        file: "schemas/rag-response.schema.json",
        json: include_str!("../schemas/rag-response.schema.json"),
        system: "You answer questions from retrieved document chunks only. Copy the chunks you \
                 were given into retrieved_chunks with their id, page, text and score.",
        example_prompt: "Retrieved chunks:\n\
            id=pdfpage_12_chunk_0 page=12 score=0.92: Agentic AI represents a paradigm shift in \
            artificial intelligence where systems operate with increased autonomy and \
            goal-directed behavior.\n\
            id=pdfpage_13_chunk_1 page=13 score=0.87: The defining characteristics of agentic AI \
            include autonomous decision-making without constant human oversight.\n\n\
            Question: What is the definition of agentic AI described in the eBook?",
    },
    BuiltinSchema {
        name: "routing-decision",
        file: "schemas/routing-decision.schema.json",
        json: include_str!("../schemas/routing-decision.schema.json"),
        system: "You are the routing navigator of a build flow. From the forensic summary, \
                 decide the next routing step. Steps: build-step-1, build-step-2, build-step-3, \
                 build-step-4. Known detours: lint_errors -> auto-linter, missing_import -> \
                 import-fixer, type_mismatch -> type-annotator.",
        example_prompt: "Forensic summary:\n{\"step_completed\": \"build-step-3\", \"agent\": \
            \"code-implementer\", \"status\": \"UNVERIFIED\", \"forensics\": {\"tests\": \
            {\"passed\": 42, \"failed\": 2, \"skip\": 0}, \"lint\": {\"errors\": 0}, \
            \"concerns\": [{\"severity\": \"HIGH\", \"description\": \"Missing error handling\", \
            \"location\": \"src/auth.py:42\"}]}, \"iteration\": {\"current\": 2, \"max\": 3}, \
            \"previous_failure_signature\": null}\n\nWhat is the routing decision?",
    },
    BuiltinSchema {
        name: "navigate-to-section",
        file: "schemas/navigate-to-section.schema.json",
        json: include_str!("../schemas/navigate-to-section.schema.json"),
        system: "When the user asks about content in these sections, navigate there instead \
                 of describing it. Available sections: Agno (subsections: Architecture, Tools, \
                 Performance); Autogen (subsections: Getting Started, Advanced Features, \
                 Examples); Deployment Guide (subsections: Cloud Deployment, Security).",
        example_prompt: "Take me to the part about securing a deployment.",
    },
    BuiltinSchema {
        name: "interview-turn",
        file: "schemas/interview-turn.schema.json",
        json: include_str!("../schemas/interview-turn.schema.json"),
        system: "You are an expert interviewer capturing a professional's know-how. Ask \
                 exactly one question per turn, building on what the person just said.",
        example_prompt: "We are in the operations stage. The expert said: \"Every morning I \
            spend 30 minutes reviewing client files before my first meeting, looking for red \
            flags in their recent emails.\" Write the next interviewer turn.",
    },
];

pub fn find(name: &str) -> Option<&'static BuiltinSchema> {
    BUILTIN
        .iter()
        .find(|s| s.name == name || s.file == name || s.file.ends_with(&format!("/{name}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_schemas_are_valid_draft7_with_closed_objects() {
        for s in &BUILTIN {
            let v = s.schema();
            jsonschema::validator_for(&v).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            assert_eq!(v["additionalProperties"], false, "{}", s.name);
            assert!(find(s.name).is_some());
        }
        for (id, name) in [
            (SchemaId::NavigatorResponse, "navigator-response"),
            (SchemaId::RagResponse, "rag-response"),
            (SchemaId::RoutingDecision, "routing-decision"),
            (SchemaId::NavigateToSection, "navigate-to-section"),
            (SchemaId::InterviewTurn, "interview-turn"),
        ] {
            assert_eq!(id.builtin().name, name);
        }
        assert!(validate(SchemaId::RagResponse, &serde_json::json!({})).is_err());
    }

    #[test]
    fn seed_enums_are_exact() {
        let nav = find("navigator-response").unwrap().schema();
        assert_eq!(
            nav["properties"]["confidence"]["enum"],
            serde_json::json!(["high", "medium", "low"])
        );
        assert_eq!(nav["properties"]["confidenceReason"]["minLength"], 10);
        let route = find("routing-decision").unwrap().schema();
        assert_eq!(
            route["properties"]["decision"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            7
        );
        let iv = find("interview-turn").unwrap().schema();
        assert_eq!(
            iv["properties"]["interview_stage"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            9
        );
        assert_eq!(
            iv["properties"]["metadata"]["properties"]["question_depth"]["maximum"],
            4
        );
    }
}
