//! `sextant bench schemas DIR`: each schema in DIR decoded once; the share that gives a
//! valid object (or, for a corpus entry marked `unsatisfiable`, an error that names its
//! conflict), and the reason for each that does not.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::Value;

use sextant::llm::Llm;
use sextant::structured::{generate_structured, schema_request};

/// The schemas of a folder: each `*.json` is a schema, or a corpus file with
/// `{"schemas": [{"file", "description", "schema", "unsatisfiable"?}]}`: a label, the
/// schema, and the words an unsatisfiable one's error must hold.
fn load(dir: &Path) -> Result<Vec<(String, Value, Option<String>)>> {
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)
            .with_context(|| format!("{} is not valid JSON", path.display()))?;
        match doc["schemas"].as_array() {
            Some(list) => {
                for s in list {
                    let label = format!(
                        "{name}: {} › {}",
                        s["file"].as_str().unwrap_or(""),
                        s["description"].as_str().unwrap_or("")
                    );
                    let conflict = s["unsatisfiable"].as_str().map(str::to_string);
                    out.push((label, s["schema"].clone(), conflict));
                }
            }
            None => out.push((name, doc, None)),
        }
    }
    Ok(out)
}

pub fn run_schemas(llm: &mut Llm, dir: &Path, max_tokens: usize) -> Result<()> {
    let schemas = load(dir)?;
    let (mut valid, mut retried, mut named) = (0, 0, 0);
    let mut reasons: std::collections::BTreeMap<&'static str, usize> = Default::default();
    let start = Instant::now();
    for (label, schema, conflict) in &schemas {
        let description = label.rsplit(" › ").next().unwrap_or_default();
        let req = schema_request(schema, description, max_tokens);
        match generate_structured(llm, &req, &mut |_| {}) {
            Err(e) if conflict.as_ref().is_some_and(|c| e.to_string().contains(c)) => {
                named += 1;
            }
            Ok(out) => {
                valid += 1;
                retried += (out.attempts > 1) as usize;
            }
            Err(e) => {
                *reasons.entry(e.kind()).or_default() += 1;
                println!(
                    "{:<18} {label}\n                   {:.300}",
                    e.kind(),
                    e.to_string()
                );
            }
        }
    }
    let unsatisfiable = schemas.iter().filter(|s| s.2.is_some()).count();
    println!(
        "{}/{} right ({:.1}%) at --max-tokens {max_tokens}: {valid} valid, {retried} of them after a retry; {named}/{unsatisfiable} unsatisfiable with the conflict named; 0 invalid accepted (every object is validated); {:.0} s",
        valid + named,
        schemas.len(),
        (valid + named) as f64 * 100.0 / schemas.len().max(1) as f64,
        start.elapsed().as_secs_f64()
    );
    for (kind, n) in reasons {
        println!("  {kind:<18} {n}");
    }
    Ok(())
}
