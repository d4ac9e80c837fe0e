//! Bounding a JSON Schema so that the grammar itself forces every object closed.
//!
//! A token mask keeps output valid but cannot end a string: a small model under greedy
//! decoding happily loops inside `"answer"` until `max_tokens` runs out. Every string
//! without a `maxLength` and every array without a `maxItems` gets one here. The defaults
//! are then shrunk (never below a floor, and never touching bounds the caller wrote) until
//! the longest object the schema admits fits the token budget at a conservative
//! characters-per-token ratio.

use serde_json::{Map, Value};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Bounds {
    /// `maxLength` given to strings that have none.
    pub max_string_len: u64,
    /// `maxLength` given to strings inside arrays that have none (they multiply by
    /// `maxItems`, so they get less room than top-level fields).
    pub max_item_string_len: u64,
    /// `maxItems` given to arrays that have none.
    pub max_items: u64,
    /// Smallest `maxLength` the budget fitting may shrink an added bound to.
    pub min_string_len: u64,
    /// Characters per token assumed when fitting the budget (English JSON from SmolLM2's
    /// tokenizer averages ~3.5-4; 3 leaves room for numbers and punctuation).
    pub chars_per_token: f64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_string_len: 400,
            max_item_string_len: 120,
            max_items: 4,
            min_string_len: 24,
            chars_per_token: 3.0,
        }
    }
}

/// One bound the engine added, for `--explain`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AddedBound {
    /// JSON pointer of the subschema.
    pub at: String,
    pub keyword: &'static str,
    pub value: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BoundedSchema {
    pub schema: Value,
    pub added: Vec<AddedBound>,
    /// Longest serialisation (in characters) the bounded schema admits, if finite.
    pub worst_case_chars: Option<u64>,
    /// How the grammar's copy was narrowed so that its output ends (`narrow`, and
    /// optional properties left out when even the smallest bounds do not fit).
    pub narrowed: Vec<String>,
}

/// Adds the missing bounds to `schema`, fitted to `max_tokens`.
pub fn bound_schema(schema: &Value, bounds: &Bounds, max_tokens: usize) -> BoundedSchema {
    let budget_chars = (max_tokens as f64 * bounds.chars_per_token) as u64;
    let floor = bounds.min_string_len;
    let mut lens = StringLens {
        top: bounds.max_string_len.max(floor),
        in_array: bounds.max_item_string_len.max(floor),
    };
    loop {
        let mut out = schema.clone();
        let mut added = Vec::new();
        add_bounds(&mut out, "", lens, false, bounds.max_items, &mut added);
        let worst = worst_case_chars(&out, &out, 0);
        let fits = worst.is_some_and(|w| w <= budget_chars);
        let at_floor = lens.top <= floor && lens.in_array <= floor;
        if fits || at_floor || added.is_empty() {
            let mut narrowed = Vec::new();
            let mut worst = worst;
            // Even the smallest bounds do not fit: the grammar's copy keeps only the
            // required properties of closed objects, so what the schema requires fits.
            if !fits && worst.is_some() {
                drop_optional(&mut out, "", &mut narrowed);
                worst = worst_case_chars(&out, &out, 0);
            }
            return BoundedSchema {
                schema: out,
                added,
                worst_case_chars: worst,
                narrowed,
            };
        }
        // Strings in arrays multiply by maxItems: shrink them first, down to half their
        // default, then both.
        if lens.in_array > (bounds.max_item_string_len / 2).max(floor) {
            lens.in_array = (lens.in_array * 3 / 4).max(floor);
        } else {
            lens.top = (lens.top * 3 / 4).max(floor);
            lens.in_array = (lens.in_array * 3 / 4).max(floor);
        }
    }
}

#[derive(Clone, Copy)]
struct StringLens {
    top: u64,
    in_array: u64,
}

fn is_type(obj: &Map<String, Value>, ty: &str) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

fn add_bounds(
    v: &mut Value,
    at: &str,
    lens: StringLens,
    in_array: bool,
    max_items: u64,
    added: &mut Vec<AddedBound>,
) {
    let Value::Object(obj) = v else { return };
    let max_len = if in_array { lens.in_array } else { lens.top };
    let constant = obj.contains_key("enum") || obj.contains_key("const");
    // A `pattern` is the caller's own bound on the string's shape; intersecting it with a
    // length limit can make llguidance's emptiness check for the combined regex run out of
    // budget, so patterned strings are left as written.
    let patterned = obj.contains_key("pattern");
    if is_type(obj, "string") && !constant && !patterned && !obj.contains_key("maxLength") {
        let floor = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let value = max_len.max(floor);
        obj.insert("maxLength".into(), value.into());
        added.push(AddedBound {
            at: at.to_string(),
            keyword: "maxLength",
            value,
        });
    }
    if is_type(obj, "array") && !constant && !obj.contains_key("maxItems") {
        let floor = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let value = max_items.max(floor);
        obj.insert("maxItems".into(), value.into());
        added.push(AddedBound {
            at: at.to_string(),
            keyword: "maxItems",
            value,
        });
    }
    for (key, child) in obj.iter_mut() {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "items" | "additionalItems" | "prefixItems" => match child {
                Value::Array(xs) => {
                    for (i, x) in xs.iter_mut().enumerate() {
                        add_bounds(x, &format!("{here}/{i}"), lens, true, max_items, added)
                    }
                }
                _ => add_bounds(child, &here, lens, true, max_items, added),
            },
            "additionalProperties" | "not" => {
                add_bounds(child, &here, lens, in_array, max_items, added)
            }
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(xs) = child {
                    for (i, x) in xs.iter_mut().enumerate() {
                        add_bounds(x, &format!("{here}/{i}"), lens, in_array, max_items, added)
                    }
                }
            }
            "properties" | "patternProperties" => {
                if let Value::Object(m) = child {
                    for (k, x) in m.iter_mut() {
                        add_bounds(x, &format!("{here}/{k}"), lens, in_array, max_items, added)
                    }
                }
            }
            // Definitions may be used anywhere: give them the tighter in-array bound.
            "$defs" | "definitions" => {
                if let Value::Object(m) = child {
                    for (k, x) in m.iter_mut() {
                        add_bounds(x, &format!("{here}/{k}"), lens, true, max_items, added)
                    }
                }
            }
            _ => {}
        }
    }
}

/// Longest JSON text (no insignificant whitespace) a schema admits; None if unbounded or
/// too intricate to say (then only `max_tokens` stops generation).
/// Removes the optional properties of closed objects (`additionalProperties: false`):
/// without them the object is still valid, and shorter.
fn drop_optional(v: &mut Value, at: &str, notes: &mut Vec<String>) {
    let Value::Object(obj) = v else { return };
    if obj.get("additionalProperties") == Some(&Value::Bool(false)) {
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|n| n.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            let before = props.len();
            props.retain(|name, _| required.contains(name));
            if props.len() < before {
                notes.push(format!(
                    "{}: {} optional properties left out (the budget fits only the required ones)",
                    if at.is_empty() { "/" } else { at },
                    before - props.len()
                ));
            }
        }
    }
    for (key, child) in obj.iter_mut() {
        let here = format!("{at}/{key}");
        match (key.as_str(), child) {
            ("properties" | "$defs" | "definitions", Value::Object(m)) => {
                for (k, x) in m.iter_mut() {
                    drop_optional(x, &format!("{here}/{k}"), notes);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(xs)) => {
                for (i, x) in xs.iter_mut().enumerate() {
                    drop_optional(x, &format!("{here}/{i}"), notes);
                }
            }
            ("items" | "additionalProperties", x) => drop_optional(x, &here, notes),
            _ => {}
        }
    }
}

fn worst_case_chars(v: &Value, root: &Value, depth: usize) -> Option<u64> {
    if depth > 32 {
        return None;
    }
    let obj = match v {
        Value::Bool(true) => return None,
        Value::Bool(false) => return Some(0),
        Value::Object(o) => o,
        _ => return None,
    };
    if let Some(Value::String(r)) = obj.get("$ref") {
        let target = r.strip_prefix('#').and_then(|p| root.pointer(p))?;
        return worst_case_chars(target, root, depth + 1);
    }
    if let Some(c) = obj.get("const") {
        return Some(c.to_string().len() as u64);
    }
    if let Some(Value::Array(xs)) = obj.get("enum") {
        return xs.iter().map(|x| x.to_string().len() as u64).max();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(xs)) = obj.get(key) {
            let mut best = 0;
            for x in xs {
                best = best.max(worst_case_chars(x, root, depth + 1)?);
            }
            return Some(best);
        }
    }
    let types: Vec<&str> = match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let mut worst = 0;
    for t in types {
        let w = match t {
            "null" | "boolean" => 5,
            // Numbers are unbounded in principle; a model writes short ones. The token
            // budget remains the hard stop.
            "integer" | "number" => 24,
            // Escapes (two characters for one) are rare in prose; the token budget
            // remains the hard stop for the rest. A patterned string's length is the
            // pattern's business: unknown here.
            "string" => obj.get("maxLength")?.as_u64()? + 2,
            "array" => {
                let n = obj.get("maxItems")?.as_u64()?;
                let item = worst_case_chars(obj.get("items")?, root, depth + 1)?;
                2 + n * (item + 1)
            }
            "object" => {
                if obj.get("additionalProperties") != Some(&Value::Bool(false)) {
                    return None;
                }
                let mut w = 2;
                if let Some(Value::Object(props)) = obj.get("properties") {
                    for (k, s) in props {
                        w += k.len() as u64 + 4 + worst_case_chars(s, root, depth + 1)?;
                    }
                }
                w
            }
            _ => return None,
        };
        worst = worst.max(w);
    }
    Some(worst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn adds_bounds_only_where_missing_and_never_loosens() {
        let s = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "maxLength": 7},
                "c": {"type": "array", "items": {"type": "string", "enum": ["x"]}},
                "d": {"type": "array", "maxItems": 2, "items": {"type": ["string", "null"]}},
                "e": {"type": "string", "minLength": 500}
            }
        });
        let b = bound_schema(&s, &Bounds::default(), 100_000);
        let p = &b.schema["properties"];
        assert_eq!(p["a"]["maxLength"], 400);
        assert_eq!(p["b"]["maxLength"], 7);
        assert_eq!(p["c"]["maxItems"], 4);
        assert!(
            p["c"]["items"].get("maxLength").is_none(),
            "enums are already bounded"
        );
        assert_eq!(p["d"]["maxItems"], 2);
        assert_eq!(p["d"]["items"]["maxLength"], 120);
        assert_eq!(
            p["e"]["maxLength"], 500,
            "never below the caller's minLength"
        );
        let at: Vec<_> = b.added.iter().map(|a| a.at.as_str()).collect();
        assert!(at.contains(&"/properties/a") && at.contains(&"/properties/d/items"));
        assert!(b.worst_case_chars.is_some());
    }

    #[test]
    fn shrinks_added_string_bounds_to_fit_a_small_budget() {
        let s = json!({
            "type": "object", "additionalProperties": false,
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}}
        });
        let big = bound_schema(&s, &Bounds::default(), 4096);
        let small = bound_schema(&s, &Bounds::default(), 100);
        let len = |b: &BoundedSchema| b.schema["properties"]["a"]["maxLength"].as_u64().unwrap();
        assert_eq!(len(&big), 400);
        assert!(len(&small) < 400 && len(&small) >= 24, "{}", len(&small));
        assert!(small.worst_case_chars.unwrap() <= 300 || len(&small) == 24);
    }

    #[test]
    fn a_budget_too_small_for_every_property_keeps_the_required_ones() {
        let mut props = serde_json::Map::new();
        for i in 0..30 {
            props.insert(format!("field_{i}"), json!({"type": "string"}));
        }
        let s = json!({
            "type": "object", "additionalProperties": false,
            "required": ["field_0", "field_1"], "properties": props
        });
        let b = bound_schema(&s, &Bounds::default(), 100);
        let kept: Vec<&String> = b.schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(kept, ["field_0", "field_1"]);
        assert!(
            b.worst_case_chars.unwrap() <= 300,
            "{:?}",
            b.worst_case_chars
        );
        assert_eq!(b.narrowed.len(), 1, "{:?}", b.narrowed);
        // With room for all of them, nothing is left out.
        let b = bound_schema(&s, &Bounds::default(), 4096);
        assert_eq!(b.schema["properties"].as_object().unwrap().len(), 30);
        assert!(b.narrowed.is_empty());
    }

    #[test]
    fn follows_refs_and_defs() {
        let s = json!({
            "$defs": {"s": {"type": "string"}},
            "type": "object", "additionalProperties": false,
            "properties": {"x": {"$ref": "#/$defs/s"}}
        });
        let b = bound_schema(&s, &Bounds::default(), 4096);
        assert_eq!(b.schema["$defs"]["s"]["maxLength"], 120);
        assert_eq!(b.worst_case_chars, Some(2 + 1 + 4 + 122));
    }
}

/// The smallest value the schema's required structure admits, as far as it can be told
/// without solving the schema (None: unknown, e.g. a pattern or an unresolvable `$ref`).
/// Its token count is the least budget any valid output needs.
pub fn minimal_instance(schema: &Value) -> Option<Value> {
    minimal(schema, schema, 0)
}

fn minimal(v: &Value, root: &Value, depth: usize) -> Option<Value> {
    if depth > 32 {
        return None;
    }
    let obj = match v {
        Value::Bool(true) => return Some(Value::from(0)),
        Value::Object(o) => o,
        _ => return None,
    };
    if let Some(Value::String(r)) = obj.get("$ref") {
        let target = r.strip_prefix('#').and_then(|p| root.pointer(p))?;
        return minimal(target, root, depth + 1);
    }
    if let Some(c) = obj.get("const") {
        return Some(c.clone());
    }
    if let Some(Value::Array(xs)) = obj.get("enum") {
        return xs.iter().min_by_key(|x| x.to_string().len()).cloned();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(xs)) = obj.get(key) {
            return xs
                .iter()
                .filter_map(|x| minimal(x, root, depth + 1))
                .min_by_key(|x| x.to_string().len());
        }
    }
    let count = |k: &str| {
        obj.get(k)
            .and_then(Value::as_f64)
            .map_or(0, |n| n.max(0.0) as usize)
    };
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str)?,
        // No type: the smallest JSON value of the kind the keywords describe.
        None if obj.contains_key("properties") || obj.contains_key("required") => "object",
        None if obj.contains_key("items") || obj.contains_key("minItems") => "array",
        None => return Some(Value::from(0)),
        _ => return None,
    };
    Some(match ty {
        "null" => Value::Null,
        "boolean" => Value::Bool(true),
        "integer" | "number" => {
            let min = obj.get("minimum").and_then(Value::as_f64).unwrap_or(0.0);
            Value::from(min.max(0.0).ceil() as i64)
        }
        "string" => {
            if obj.contains_key("pattern") || obj.contains_key("format") {
                return None;
            }
            Value::String("a".repeat(count("minLength")))
        }
        "array" => {
            let n = count("minItems");
            let item = match (n, obj.get("items")) {
                (0, _) => Value::Null,
                (_, Some(items)) => minimal(items, root, depth + 1)?,
                (_, None) => Value::from(0),
            };
            Value::Array(vec![item; n])
        }
        "object" => {
            let mut out = Map::new();
            let props = obj.get("properties").and_then(Value::as_object);
            for key in obj
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let value = match props.and_then(|p| p.get(key)) {
                    Some(s) => minimal(s, root, depth + 1)?,
                    None => Value::from(0),
                };
                out.insert(key.to_string(), value);
            }
            Value::Object(out)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod minimal_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_minimal_instance_holds_only_what_is_required() {
        let s = json!({
            "type": "object",
            "required": ["id", "tags", "kind", "meta"],
            "properties": {
                "id": {"type": "integer", "minimum": 7},
                "tags": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 3}},
                "kind": {"enum": ["alpha", "b"]},
                "meta": {"$ref": "#/definitions/meta"},
                "optional": {"type": "string", "minLength": 50}
            },
            "definitions": {"meta": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}}
        });
        assert_eq!(
            minimal_instance(&s).unwrap(),
            json!({"id": 7, "tags": ["aaa", "aaa"], "kind": "b", "meta": {"ok": true}})
        );
        assert_eq!(
            minimal_instance(&json!({"type": "string", "pattern": "^x+$"})),
            None
        );
    }
}
