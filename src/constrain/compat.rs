//! The copy of a caller's schema that the grammar compiles: draft-07 spelled the way the
//! grammar engine reads it, and what it cannot compile at all left to validation. The
//! caller's schema itself is never changed; the validator checks the output against it.

use serde_json::Value;

/// Count keywords the grammar engine wants as integers (`2.0` is valid JSON Schema).
const COUNTS: &[&str] = &[
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
];

/// Keywords whose value is a map of names to schemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "dependencies",
];

/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "allOf", "oneOf", "prefixItems"];

/// Keywords whose value is one schema.
const SCHEMA_ONE: &[&str] = &[
    "items",
    "additionalItems",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
];

/// The grammar's copy of `schema`, with a note for each change that loosens it.
pub fn for_grammar(schema: &Value) -> (Value, Vec<String>) {
    let mut out = schema.clone();
    let mut notes = Vec::new();
    rewrite(&mut out, "", &mut notes);
    (out, notes)
}

fn rewrite(schema: &mut Value, at: &str, notes: &mut Vec<String>) {
    let Value::Object(obj) = schema else { return };
    for key in COUNTS {
        if let Some(n) = obj.get(*key).and_then(Value::as_f64) {
            if n >= 0.0 && n.fract() == 0.0 && !obj[*key].is_u64() {
                obj.insert((*key).into(), Value::from(n as u64));
            }
        }
    }
    // A pointer into a draft-07 tuple follows it to its new name.
    if let Some(Value::String(r)) = obj.get_mut("$ref") {
        *r = tuple_pointer(r);
    }
    // Draft-07 tuples: `items: [..]` with `additionalItems` is 2020-12's `prefixItems`
    // with `items`.
    if obj.get("items").is_some_and(Value::is_array) {
        let tuple = obj.remove("items").unwrap_or_default();
        obj.insert("prefixItems".into(), tuple);
        if let Some(rest) = obj.remove("additionalItems") {
            obj.insert("items".into(), rest);
        }
    } else if obj.contains_key("additionalItems") {
        // Without a tuple, additionalItems has no effect.
        obj.remove("additionalItems");
    }
    // The engine needs the patterns of patternProperties to be disjoint; it cannot tell
    // for two or more, so they are left to validation.
    if obj
        .get("patternProperties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.len() > 1)
    {
        obj.remove("patternProperties");
        notes.push(format!(
            "{}: patternProperties with several patterns (checked by validation)",
            if at.is_empty() { "/" } else { at }
        ));
    }
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(map)) = obj.get_mut(*key) {
            for (name, sub) in map.iter_mut() {
                rewrite(sub, &format!("{at}/{key}/{name}"), notes);
            }
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(list)) = obj.get_mut(*key) {
            for (i, sub) in list.iter_mut().enumerate() {
                rewrite(sub, &format!("{at}/{key}/{i}"), notes);
            }
        }
    }
    for key in SCHEMA_ONE {
        if let Some(sub) = obj.get_mut(*key) {
            rewrite(sub, &format!("{at}/{key}"), notes);
        }
    }
}

/// `#/…/items/N/…` → `#/…/prefixItems/N/…` (a tuple member is now under prefixItems).
fn tuple_pointer(r: &str) -> String {
    let parts: Vec<&str> = r.split('/').collect();
    let mut out: Vec<String> = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let next_is_index = parts
            .get(i + 1)
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        out.push(if *p == "items" && next_is_index {
            "prefixItems".to_string()
        } else {
            p.to_string()
        });
    }
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn draft7_spellings_become_the_engine_s() {
        let (g, notes) = for_grammar(&json!({
            "type": "object",
            "properties": {
                "pair": {"items": [{"type": "integer"}, {"type": "string"}], "additionalItems": false},
                "tags": {"type": "array", "maxItems": 2.0, "items": {"type": "string", "minLength": 1.0}}
            },
            "patternProperties": {"^a": {}, "^b": {}}
        }));
        assert_eq!(
            g["properties"]["pair"],
            json!({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false})
        );
        assert_eq!(g["properties"]["tags"]["maxItems"], json!(2));
        assert_eq!(g["properties"]["tags"]["items"]["minLength"], json!(1));
        assert!(g.get("patternProperties").is_none());
        assert_eq!(notes.len(), 1);
        let (g, _) = for_grammar(&json!({"items": [{"type": "integer"}, {"$ref": "#/items/0"}]}));
        assert_eq!(g["prefixItems"][1]["$ref"], json!("#/prefixItems/0"));
        // Nothing to change: the same schema, no notes.
        let s = json!({"type": "array", "items": {"type": "integer"}, "maxItems": 3});
        assert_eq!(for_grammar(&s), (s.clone(), vec![]));
    }
}
