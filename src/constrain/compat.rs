//! The copy of a caller's schema that the grammar compiles: draft-07 spelled the way the
//! grammar engine reads it, and what it cannot compile at all left to validation. The
//! caller's schema itself is never changed; the validator checks the output against it.

use serde_json::Value;

use super::patterns;

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
    let recursive = recursive_definitions(schema);
    rewrite(&mut out, "", &recursive, &mut notes);
    (out, notes)
}

/// Every `$ref` string under `v`.
fn refs_in<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs_in(x, out),
                }
            }
        }
        Value::Array(xs) => xs.iter().for_each(|x| refs_in(x, out)),
        _ => {}
    }
}

/// The pointers (`#/definitions/X`, `#/$defs/X`) of the root's definitions that reach
/// themselves through `$ref`s.
fn recursive_definitions(root: &Value) -> std::collections::HashSet<String> {
    let mut edges: std::collections::HashMap<String, Vec<String>> = Default::default();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(defs)) = root.get(key) {
            for (name, def) in defs {
                let mut refs = Vec::new();
                refs_in(def, &mut refs);
                edges.insert(
                    format!("#/{key}/{name}"),
                    refs.into_iter().map(String::from).collect(),
                );
            }
        }
    }
    let reaches_itself = |start: &String| {
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<&String> = edges.get(start).into_iter().flatten().collect();
        while let Some(n) = stack.pop() {
            if n == start {
                return true;
            }
            if seen.insert(n.clone()) {
                stack.extend(edges.get(n).into_iter().flatten());
            }
        }
        false
    };
    edges
        .keys()
        .filter(|d| reaches_itself(d))
        .cloned()
        .collect()
}

/// Keywords beside a `$ref` that hold schemas to point into, not constraints.
const BESIDE_REF_KEPT: &[&str] = &["$ref", "definitions", "$defs"];

fn rewrite(
    schema: &mut Value,
    at: &str,
    recursive: &std::collections::HashSet<String>,
    notes: &mut Vec<String>,
) {
    let Value::Object(obj) = schema else { return };
    // The grammar engine refuses a recursive `$ref` with keywords beside it; the
    // definition itself still constrains the output, the keywords beside it are checked by
    // validation.
    if let Some(Value::String(r)) = obj.get("$ref") {
        if recursive.contains(r.as_str()) {
            let beside: Vec<String> = obj
                .keys()
                .filter(|k| !BESIDE_REF_KEPT.contains(&k.as_str()))
                .cloned()
                .collect();
            if !beside.is_empty() {
                notes.push(format!(
                    "{}: {} beside the recursive $ref {r} checked by validation",
                    if at.is_empty() { "/" } else { at },
                    beside.join(", ")
                ));
                for k in beside {
                    obj.remove(&k);
                }
            }
        }
    }
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
    // Named properties take the schemas of the patterns they match; several patterns
    // (which the engine needs disjoint and cannot check) become one.
    if let Some(n) = obj
        .get("patternProperties")
        .and_then(Value::as_object)
        .map(|p| p.len())
    {
        let here = if at.is_empty() { "/" } else { at };
        let merged = patterns::merge_pattern_properties(obj);
        if n > 1 && merged {
            notes.push(format!(
                "{here}: patternProperties with several patterns enforced as one, a key that matches several checked by validation"
            ));
        } else if !merged {
            obj.remove("patternProperties");
            notes.push(format!(
                "{here}: patternProperties checked by validation (a pattern the grammar cannot read)"
            ));
        }
    }
    // A pattern the grammar's regex engine cannot read (look-around, back-references:
    // ECMA-262 has them, the engine does not) is left to validation, whose regex engine
    // reads them; the rest of the string's schema still constrains the output.
    if let Some(Value::String(p)) = obj.get("pattern").cloned() {
        if let Err(e) = regex::Regex::new(&p) {
            let why = match e {
                regex::Error::Syntax(s) => s.lines().last().unwrap_or_default().to_string(),
                other => other.to_string(),
            };
            let here = if at.is_empty() { "/" } else { at };
            let why = why.trim_start_matches("error: ");
            // Without its look-around assertions, or with a copy of a group for a
            // back-reference, a pattern only admits more: the grammar keeps that much.
            if let Some(looser) = patterns::looser(&p) {
                notes.push(format!(
                    "{here}: pattern {p:?} enforced as {looser:?}, the rest by validation ({why})"
                ));
                obj.insert("pattern".into(), Value::String(looser));
            } else {
                notes.push(format!(
                    "{here}: pattern {p:?} checked by validation only ({why})"
                ));
                obj.remove("pattern");
            }
        }
    }
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(map)) = obj.get_mut(*key) {
            for (name, sub) in map.iter_mut() {
                rewrite(sub, &format!("{at}/{key}/{name}"), recursive, notes);
            }
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(list)) = obj.get_mut(*key) {
            for (i, sub) in list.iter_mut().enumerate() {
                rewrite(sub, &format!("{at}/{key}/{i}"), recursive, notes);
            }
        }
    }
    for key in SCHEMA_ONE {
        if let Some(sub) = obj.get_mut(*key) {
            rewrite(sub, &format!("{at}/{key}"), recursive, notes);
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
        assert_eq!(
            g["patternProperties"],
            json!({"(?:^a)|(?:^b)": {"anyOf": [{}, {}]}})
        );
        assert_eq!(notes.len(), 1);
        let (g, _) = for_grammar(&json!({"items": [{"type": "integer"}, {"$ref": "#/items/0"}]}));
        assert_eq!(g["prefixItems"][1]["$ref"], json!("#/prefixItems/0"));
        // A look-ahead the engine cannot read: left to validation, with a note.
        let (g, notes) = for_grammar(
            &json!({"type": "string", "pattern": "^(?=.*[0-9])(?!.*[(])[a-z0-9]{8}$", "maxLength": 8}),
        );
        assert_eq!(
            g,
            json!({"type": "string", "pattern": "^[a-z0-9]{8}$", "maxLength": 8})
        );
        assert!(notes[0].contains("look-around"), "{notes:?}");
        // A back-reference: a copy of its group, the rest by validation.
        let (g, _) = for_grammar(&json!({"type": "string", "pattern": r"^(a+)\1$"}));
        assert_eq!(g["pattern"], json!("^(a+)(?:a+)$"));
        // Keywords beside a recursive $ref: left to validation (the engine refuses them);
        // beside a plain one they stay.
        let (g, notes) = for_grammar(&json!({
            "definitions": {
                "tree": {"type": "object", "properties": {"left": {"$ref": "#/definitions/tree", "type": "object"}}},
                "leaf": {"type": "string"}
            },
            "$ref": "#/definitions/tree", "title": "Tree"
        }));
        assert_eq!(
            g["definitions"]["tree"]["properties"]["left"],
            json!({"$ref": "#/definitions/tree"})
        );
        assert!(g.get("title").is_none() && g.get("definitions").is_some());
        assert_eq!(notes.len(), 2, "{notes:?}");
        let plain = json!({
            "definitions": {"leaf": {"type": "string"}},
            "properties": {"tag": {"$ref": "#/definitions/leaf", "maxLength": 3}}
        });
        assert_eq!(for_grammar(&plain), (plain.clone(), vec![]));
        // Nothing to change: the same schema, no notes.
        let s = json!({"type": "array", "items": {"type": "integer"}, "maxItems": 3});
        assert_eq!(for_grammar(&s), (s.clone(), vec![]));
    }
}
