//! `oneOf` one branch at a time. The grammar engine compiles `oneOf` as `anyOf` (it cannot
//! forbid matching two branches), so output valid under two branches — `{"name": "x"}`
//! when neither branch closes its object — is rejected by the validator, and sampling the
//! same grammar again tends to give the same kind of object. Instead, each try decodes
//! under one branch chosen up front, with what makes the other branches fail added where
//! a schema can say it:
//! - an object branch must also hold a property another branch types, written with a
//!   type that branch rejects (`"age": "…"` against `"age": {"type": "integer"}`), unless
//!   the other branch requires a property this one never writes (it fails already);
//! - an array branch must stay below another branch's `minItems` or above its `maxItems`;
//! - a number or integer branch must stay below another's lower bound (or above its
//!   upper one) where its own range reaches past it.
//!
//! The additions only narrow the grammar's copy; the validator still checks the caller's
//! schema, so a guess that does not separate the branches costs a try, never validity.

use serde_json::{json, Map, Value};

/// The grammar's copies of `schema` (the narrowed, bounded copy of the caller's
/// `original`), one per branch of its first `oneOf` (depth-first over the schema itself,
/// `properties`, `items` and definitions), each with a note; empty when the schema has no
/// `oneOf` (or one the rewrite cannot reach: one beside an `anyOf`). Whether a branch is
/// open to other properties is read from `original`: narrowing closes the grammar's copy
/// of objects that the caller's schema leaves open.
pub fn branch_grammars(schema: &Value, original: &Value) -> Vec<(Value, String)> {
    let Some(at) = first_one_of(schema, "") else {
        return Vec::new();
    };
    let originals: Vec<Value> = original
        .pointer(&at)
        .and_then(|o| o.get("oneOf"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(branches) = schema
        .pointer(&at)
        .and_then(|o| o.get("oneOf"))
        .and_then(Value::as_array)
        .cloned()
    else {
        return Vec::new();
    };
    (0..branches.len())
        .map(|i| {
            let mut copy = schema.clone();
            let obj = copy
                .pointer_mut(&at)
                .and_then(Value::as_object_mut)
                .expect("the pointer was found above");
            obj.remove("oneOf");
            let open = originals
                .get(i)
                .is_some_and(|b| b.get("additionalProperties") != Some(&Value::Bool(false)));
            obj.insert("anyOf".into(), json!([exclusive(&branches, i, open)]));
            let note = format!(
                "{}: oneOf decoded one branch at a time (branch {} of {})",
                if at.is_empty() { "/" } else { &at },
                i + 1,
                branches.len()
            );
            (copy, note)
        })
        .collect()
}

/// JSON pointer of the first `oneOf` the rewrite can replace.
fn first_one_of(v: &Value, at: &str) -> Option<String> {
    let Value::Object(obj) = v else { return None };
    if obj.get("oneOf").is_some_and(Value::is_array) && !obj.contains_key("anyOf") {
        return Some(at.to_string());
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(m)) = obj.get(key) {
            for (k, x) in m {
                let here = format!("{at}/{key}/{}", k.replace('~', "~0").replace('/', "~1"));
                if let Some(p) = first_one_of(x, &here) {
                    return Some(p);
                }
            }
        }
    }
    obj.get("items")
        .and_then(|x| first_one_of(x, &format!("{at}/items")))
}

fn types_of(s: &Map<String, Value>) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A JSON type a property typed `types` rejects, as a bounded schema.
fn other_type(types: &[&str]) -> Option<Value> {
    if types.is_empty() {
        return None;
    }
    if !types.contains(&"string") {
        Some(json!({"type": "string", "maxLength": 24}))
    } else if !types.contains(&"integer") && !types.contains(&"number") {
        Some(json!({"type": "integer", "minimum": 0, "maximum": 999}))
    } else if !types.contains(&"boolean") {
        Some(json!({"type": "boolean"}))
    } else {
        None
    }
}

/// Branch `i`, with what makes the others fail added where it can be said; `open`: the
/// caller's branch admits properties it does not list.
fn exclusive(branches: &[Value], i: usize, open: bool) -> Value {
    let mut own = branches[i].clone();
    let Value::Object(obj) = &mut own else {
        return own;
    };
    let is = |s: &Map<String, Value>, t: &str| types_of(s).contains(&t);
    for (j, other) in branches.iter().enumerate() {
        let Value::Object(other) = other else {
            continue;
        };
        if j == i {
            continue;
        }
        if is(obj, "object") && is(other, "object") {
            let Some(Value::Object(theirs)) = other.get("properties") else {
                continue;
            };
            // The other branch requires a property this one does not list (the grammar's
            // copy never writes it): it fails already.
            let listed = |name: &str| obj.get("properties").and_then(|p| p.get(name)).is_some();
            let required: Vec<&str> = other
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if required.iter().any(|r| !listed(r)) {
                continue;
            }
            // A property the other branch types and this one leaves free: write it with
            // a type the other rejects.
            let pick = theirs.iter().find_map(|(name, s)| {
                let mine = obj.get("properties").and_then(|p| p.get(name)).is_some();
                let typed = s.as_object().map(types_of).unwrap_or_default();
                (!mine && open).then(|| other_type(&typed).map(|t| (name.clone(), t)))?
            });
            if let Some((name, schema)) = pick {
                let props = obj
                    .entry("properties")
                    .or_insert_with(|| json!({}))
                    .as_object_mut();
                if let Some(props) = props {
                    props.insert(name.clone(), schema);
                }
                if let Some(Value::Array(req)) = obj.get_mut("required") {
                    req.push(json!(name));
                } else {
                    obj.insert("required".into(), json!([name]));
                }
            }
        }
        let numeric = |s: &Map<String, Value>| is(s, "number") || is(s, "integer");
        if numeric(obj) && numeric(other) {
            separate_ranges(obj, other);
        }
        if is(obj, "array") && is(other, "array") {
            let own_min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let own_max = obj.get("maxItems").and_then(Value::as_u64);
            if let Some(m) = other.get("minItems").and_then(Value::as_u64) {
                if m > own_min && own_max.is_none_or(|x| x >= m) {
                    obj.insert("maxItems".into(), json!(m - 1));
                }
            } else if let Some(m) = other.get("maxItems").and_then(Value::as_u64) {
                if own_max.is_none_or(|x| x > m) {
                    obj.insert("minItems".into(), json!((m + 1).max(own_min)));
                }
            }
        }
    }
    own
}

/// A numeric branch kept outside another's range where its own reaches past it: below
/// the other's lower bound, or else above its upper bound.
fn separate_ranges(obj: &mut Map<String, Value>, other: &Map<String, Value>) {
    let bound = |s: &Map<String, Value>, k: &str| s.get(k).and_then(Value::as_f64);
    let own_lo = bound(obj, "minimum")
        .into_iter()
        .chain(bound(obj, "exclusiveMinimum"))
        .fold(f64::NEG_INFINITY, f64::max);
    let own_hi = bound(obj, "maximum")
        .into_iter()
        .chain(bound(obj, "exclusiveMaximum"))
        .fold(f64::INFINITY, f64::min);
    let (lo, lo_exclusive) = match (bound(other, "minimum"), bound(other, "exclusiveMinimum")) {
        (Some(m), _) => (Some(m), false),
        (None, Some(m)) => (Some(m), true),
        _ => (None, false),
    };
    let (hi, hi_exclusive) = match (bound(other, "maximum"), bound(other, "exclusiveMaximum")) {
        (Some(m), _) => (Some(m), false),
        (None, Some(m)) => (Some(m), true),
        _ => (None, false),
    };
    // A whole bound written as an integer (an integer branch's grammar wants one).
    let number = |m: f64| {
        if m.fract() == 0.0 && m.abs() < 9.0e15 {
            json!(m as i64)
        } else {
            json!(m)
        }
    };
    if let Some(m) = lo.filter(|m| own_lo < *m && own_hi >= *m) {
        // Below what the other admits: under an inclusive bound, at most an exclusive one.
        let key = if lo_exclusive {
            "maximum"
        } else {
            "exclusiveMaximum"
        };
        obj.remove("maximum");
        obj.remove("exclusiveMaximum");
        obj.insert(key.into(), number(m));
    } else if let Some(m) = hi.filter(|m| own_hi > *m && own_lo <= *m) {
        let key = if hi_exclusive {
            "minimum"
        } else {
            "exclusiveMinimum"
        };
        obj.remove("minimum");
        obj.remove("exclusiveMinimum");
        obj.insert(key.into(), number(m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(schema: &Value, v: &Value) -> bool {
        jsonschema::validator_for(schema).unwrap().is_valid(v)
    }

    #[test]
    fn numeric_branches_are_told_apart_by_a_range_the_other_rejects() {
        let schema = json!({"oneOf": [{"type": "number", "minimum": 0}, {"type": "integer"}]});
        let mut narrowed = schema.clone();
        crate::constrain::narrow::narrow(&mut narrowed);
        let g = branch_grammars(&narrowed, &schema);
        // The integer branch stays below the number branch's least value.
        let second = &g[1].0["anyOf"][0];
        assert_eq!(second["exclusiveMaximum"], json!(0), "{second}");
        assert!(second.get("maximum").is_none());
        assert!(valid(&schema, &json!(-3)) && !valid(second, &json!(3)));
        // Ranges apart already: nothing added.
        let apart = json!({"oneOf": [{"type": "integer", "maximum": 5}, {"type": "integer", "minimum": 6}]});
        let g = branch_grammars(&apart, &apart);
        assert_eq!(g[0].0["anyOf"][0], apart["oneOf"][0]);
        assert_eq!(g[1].0["anyOf"][0], apart["oneOf"][1]);
    }

    #[test]
    fn open_object_branches_are_told_apart_by_a_property_the_other_types() {
        let schema = json!({"oneOf": [
            {"type": "object", "properties": {"name": {"type": "string"}}},
            {"type": "object", "properties": {"age": {"type": "integer"}}}
        ]});
        // The grammar's copy, closed by narrowing: still told apart, as the caller's
        // branches are open.
        let mut narrowed = schema.clone();
        crate::constrain::narrow::narrow(&mut narrowed);
        let g = branch_grammars(&narrowed, &schema);
        assert_eq!(g.len(), 2);
        let first = &g[0].0["anyOf"][0];
        assert_eq!(first["properties"]["age"]["type"], "string");
        assert_eq!(first["required"], json!(["age"]));
        // An object of that grammar matches exactly one branch of the caller's schema.
        let out = json!({"name": "Ada", "age": "forty"});
        assert!(valid(first, &out) && valid(&schema, &out));
        // A caller's closed branch gets nothing it would reject.
        let closed = json!({"oneOf": [
            {"type": "object", "additionalProperties": false, "properties": {"name": {"type": "string"}}},
            {"type": "object", "properties": {"age": {"type": "integer"}}}
        ]});
        let g = branch_grammars(&closed, &closed);
        assert!(g[0].0["anyOf"][0]["properties"].get("age").is_none());
        assert!(
            !valid(&schema, &json!({"name": "Ada"})),
            "both branches: not oneOf"
        );
        // Branches a required property tells apart are left as they are.
        let tagged = json!({"oneOf": [
            {"type": "object", "required": ["radius"], "properties": {"radius": {"type": "number"}}},
            {"type": "object", "required": ["side"], "properties": {"side": {"type": "number"}}}
        ]});
        let g = branch_grammars(&tagged, &tagged);
        assert_eq!(g[0].0["anyOf"][0], tagged["oneOf"][0]);
    }

    #[test]
    fn array_branches_are_told_apart_by_their_lengths_and_nested_ones_are_found() {
        let schema = json!({"type": "object", "properties": {"rows": {"oneOf": [
            {"type": "array", "items": {"type": "array"}},
            {"type": "array", "minItems": 3}
        ]}}});
        let g = branch_grammars(&schema, &schema);
        assert_eq!(g.len(), 2);
        assert!(g[0].1.starts_with("/properties/rows"), "{}", g[0].1);
        let first = &g[0].0["properties"]["rows"]["anyOf"][0];
        assert_eq!(first["maxItems"], 2);
        assert!(valid(&schema, &json!({"rows": [[], []]})));
        let plain = json!({"type": "string"});
        assert!(branch_grammars(&plain, &plain).is_empty());
    }
}
