//! The independent check: every object the engine returns is validated against the
//! caller's schema with the `jsonschema` crate, which shares no code with the grammar
//! engine that produced it.

use anyhow::{anyhow, Result};
use serde_json::Value;

pub struct SchemaValidator {
    validator: jsonschema::Validator,
}

/// A failed validation: each entry is "JSON pointer: message".
#[derive(Debug, thiserror::Error)]
#[error("the output does not validate against the schema: {}", .errors.join("; "))]
pub struct ValidationFailure {
    pub errors: Vec<String>,
}

impl SchemaValidator {
    pub fn new(schema: &Value) -> Result<Self> {
        // Without `$schema`, a schema is read as draft-07 (the seeds' draft, and what most
        // schemas in the wild are written for: `items` may be an array, `dependencies`…).
        let mut options = jsonschema::options();
        if schema.get("$schema").is_none() {
            options = options.with_draft(jsonschema::Draft::Draft7);
        }
        let validator = options
            .build(schema)
            .map_err(|e| anyhow!("invalid JSON Schema: {e}"))?;
        Ok(SchemaValidator { validator })
    }

    pub fn validate(&self, instance: &Value) -> Result<(), ValidationFailure> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(instance)
            .map(|e| format!("{}: {e}", e.instance_path))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ValidationFailure { errors })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_the_failing_path() {
        let v = SchemaValidator::new(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": 4}},
            "required": ["n"]
        }))
        .unwrap();
        assert!(v.validate(&json!({"n": 3})).is_ok());
        let err = v.validate(&json!({"n": 6})).unwrap_err();
        assert!(err.to_string().contains("/n"), "{err}");
        assert!(v.validate(&json!({})).is_err());
    }
}
