//! The engine on real-world schemas (tests/fixtures/schema_corpus/: the JSON-Schema-Test-
//! Suite's draft-07 keyword and format schemas, with source and licence), each decoded once
//! with the real SmolLM2 at a small budget: an accepted object is always valid against the
//! full schema (checked here again, independently), nothing crashes, every failure is a
//! typed error with a message, and the share of valid objects stays high.

use std::path::Path;

use serde_json::Value;
use sextant::llm::{Llm, LoadOptions};
use sextant::models::{ModelStore, Role};
use sextant::structured::{generate_structured, schema_request};

/// Budget per schema: small, as the corpus test must stay within minutes.
const MAX_TOKENS: usize = 160;

fn corpus() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema_corpus");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for s in doc["schemas"].as_array().unwrap() {
                let name = format!(
                    "{} › {}",
                    s["file"].as_str().unwrap(),
                    s["description"].as_str().unwrap()
                );
                out.push((name, s["schema"].clone()));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The engine tests run on the small model (fast); answers are tested on the default.
const ENGINE_LLM: &str = "smollm2-135m-instruct";

#[test]
fn real_schemas_give_valid_objects_or_clear_errors() {
    let schemas = corpus();
    assert!(schemas.len() >= 100, "{} schemas", schemas.len());
    let model = ModelStore::open(None)
        .resolve(Role::Llm, Some(ENGINE_LLM))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut llm = Llm::load(&model, &LoadOptions::default()).unwrap();
    let (mut valid, mut approximated) = (0, 0);
    let mut failures: Vec<(String, &'static str, String)> = Vec::new();
    for (name, schema) in &schemas {
        let description = name.rsplit(" › ").next().unwrap_or_default();
        let req = schema_request(schema, description, MAX_TOKENS);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            generate_structured(&mut llm, &req, &mut |_| {})
        }));
        match result {
            Err(_) => panic!("{name}: the engine panicked"),
            Ok(Ok(out)) => {
                let value = out.value.expect("a schema output has a value");
                let independent = jsonschema::draft7::new(schema).unwrap();
                assert!(
                    independent.is_valid(&value),
                    "{name}: an invalid object was accepted: {value}"
                );
                valid += 1;
                approximated += !out.approximations.is_empty() as usize;
            }
            Ok(Err(e)) => {
                let message = e.to_string();
                assert!(message.len() > 10, "{name}: unclear error {message:?}");
                failures.push((name.clone(), e.kind(), message));
            }
        }
    }
    let share = valid as f64 / schemas.len() as f64;
    println!(
        "{valid}/{} schemas gave a valid object ({:.0}%), {approximated} of them under an approximated grammar",
        schemas.len(),
        share * 100.0
    );
    for (name, kind, message) in &failures {
        println!("  {kind:<18} {name}: {:.200}", message);
    }
    // Some schemas of the suite are unsatisfiable by design (`false`, `not: {}`); the
    // rest must mostly succeed.
    assert!(share >= 0.85, "only {:.0}% valid", share * 100.0);
}
