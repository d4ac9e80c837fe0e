//! Narrowing the grammar's copy of a schema so that its output ends. JSON Schema is open
//! by default: an object may hold any other property and an untyped schema admits any
//! value, so a small model under a token mask can keep writing (`"extra": {"a": [[…`)
//! until the budget runs out. Here the grammar's copy
//! - closes objects that list their properties (`additionalProperties: false`), where
//!   nothing else could add a property (no `allOf`/`anyOf`/`oneOf`/`$ref`/conditionals/
//!   `dependencies` beside them, every required name listed, `minProperties` reachable),
//!   and writes a free-form object inside another as `{}`;
//! - types untyped schemas from their keywords (`properties` → object, `items` → array,
//!   `maxLength`/`pattern` → string);
//! - turns a schema that admits any value (`{}`, `true`) into a bounded string, a boolean
//!   or null;
//! - bounds numbers to ±10^15 on a step of 10^-6 where the schema sets no bound or step,
//!   so they are written as decimals that end (the unbounded grammar admits `1e999`,
//!   which does not parse back as a float, and fractions without end), and integers to
//!   ±(2^53 − 1) where it sets no bound (an unbounded one can run until the budget ends).
//!
//! Every output of the narrowed copy is valid under the copy before it, so nothing here
//! needs the validator's second look; the caller's schema is untouched and still checks
//! every output. Places where narrowing would change meaning are left alone: under `not`,
//! `if`/`then`/`else`, `contains`, `propertyNames` and `dependencies`, and the branches of
//! `allOf` (each branch sees only part of the object).

use serde_json::{json, Map, Value};

/// Keywords that only mean something for one type (draft-07), for typing untyped schemas.
const OBJECT_WORDS: &[&str] = &[
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "minProperties",
    "maxProperties",
];
const ARRAY_WORDS: &[&str] = &[
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
];
const STRING_WORDS: &[&str] = &["minLength", "maxLength", "pattern"];
/// The formats the grammar engine enforces (llguidance's `lookup_format`): an untyped
/// schema with one of them is a string. Any other format leaves it untyped: a string
/// would rarely pass the validator's check, while a value of another type always does.
const GRAMMAR_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
];
/// Keywords that leave an untyped schema untyped: numeric ones, whose exact checks
/// (`multipleOf`) are the validator's.
const KEEP_UNTYPED: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// Bound given to numbers that have none (a float's exact integers end at 2^53 ≈ 9e15).
const NUMBER_LIMIT: f64 = 1e15;
/// Step given to numbers that have none: six digits after the point.
const NUMBER_STEP: f64 = 1e-6;
/// Bound given to integers that have none: the largest every JSON parser reads exactly.
const SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Adds the missing side(s) of a numeric range; whether any was added. A side the
/// schema sets (inclusive or exclusive) is kept.
fn bound_sides(obj: &mut Map<String, Value>, low: Value, high: Value) -> bool {
    let side = |obj: &Map<String, Value>, k: &str, x: &str| {
        obj.get(k).or_else(|| obj.get(x)).and_then(Value::as_f64)
    };
    let (given_low, given_high) = (
        side(obj, "minimum", "exclusiveMinimum"),
        side(obj, "maximum", "exclusiveMaximum"),
    );
    let mut added = false;
    // A side is added only where it leaves the schema's own range intact.
    if !obj.contains_key("minimum")
        && !obj.contains_key("exclusiveMinimum")
        && given_high.is_none_or(|h| h > low.as_f64().unwrap_or(f64::MIN))
    {
        obj.insert("minimum".into(), low);
        added = true;
    }
    if !obj.contains_key("maximum")
        && !obj.contains_key("exclusiveMaximum")
        && given_low.is_none_or(|l| l < high.as_f64().unwrap_or(f64::MAX))
    {
        obj.insert("maximum".into(), high);
        added = true;
    }
    added
}

/// Keywords beside which an object cannot be closed or a schema typed: they combine it
/// with other schemas that may add properties or types.
const COMBINED: &[&str] = &[
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
    "if",
    "then",
    "else",
    "dependencies",
    "dependentSchemas",
    "dependentRequired",
    "not",
];

/// Narrows `schema` (the grammar's copy) in place; returns a note per change, for
/// `--explain`.
pub fn narrow(schema: &mut Value) -> Vec<String> {
    let mut extended = Vec::new();
    refs_in_all_of(schema, false, &mut extended);
    let mut notes = Vec::new();
    walk(schema, "", &extended, &mut notes);
    notes
}

/// The `$ref`s used as `allOf` branches (`allOf: [{"$ref": "#/definitions/Base"}, {…}]`,
/// OpenAPI's inheritance): the definitions they name are extended elsewhere and must stay
/// open.
fn refs_in_all_of(v: &Value, in_all_of: bool, out: &mut Vec<String>) {
    match v {
        Value::Object(obj) => {
            if in_all_of {
                if let Some(Value::String(r)) = obj.get("$ref") {
                    out.push(r.clone());
                }
            }
            for (key, child) in obj {
                let branches = key == "allOf";
                match child {
                    Value::Array(xs) => {
                        for x in xs {
                            refs_in_all_of(x, branches, out);
                        }
                    }
                    _ => refs_in_all_of(child, false, out),
                }
            }
        }
        Value::Array(xs) => {
            for x in xs {
                refs_in_all_of(x, false, out);
            }
        }
        _ => {}
    }
}

fn here(at: &str) -> &str {
    if at.is_empty() {
        "/"
    } else {
        at
    }
}

fn walk(schema: &mut Value, at: &str, extended: &[String], notes: &mut Vec<String>) {
    if schema == &Value::Bool(true) {
        *schema = json!({});
    }
    let Value::Object(obj) = schema else { return };
    let combined = COMBINED.iter().any(|k| obj.contains_key(*k));
    let fixed = obj.contains_key("enum") || obj.contains_key("const");
    let format = obj.get("format").and_then(Value::as_str);
    let known_format = format.is_some_and(|f| GRAMMAR_FORMATS.contains(&f));
    if !obj.contains_key("type")
        && !combined
        && !fixed
        && !has_any(obj, KEEP_UNTYPED)
        && (format.is_none() || known_format)
    {
        if known_format {
            obj.insert("type".into(), json!("string"));
            notes.push(format!("{}: untyped → string (its format)", here(at)));
        } else {
            type_from_keywords(obj, at, notes);
        }
    }
    if !fixed && has_type(obj, "number") && !obj.contains_key("multipleOf") {
        // The grammar's unbounded number admits `1e999`, which no JSON parser reads
        // back as a float, and digits after the point without end; within bounds and
        // on a step of 10^-6 it is written as a plain decimal that ends.
        let added = bound_sides(obj, json!(-NUMBER_LIMIT), json!(NUMBER_LIMIT));
        obj.insert("multipleOf".into(), json!(NUMBER_STEP));
        notes.push(format!(
            "{}: numbers written as decimals{} with at most 6 digits after the point",
            here(at),
            if added {
                format!(" within ±{NUMBER_LIMIT:e}")
            } else {
                String::new()
            }
        ));
    }
    if !fixed && has_type(obj, "integer") && !has_type(obj, "number") {
        // An integer without bounds can run on until the budget ends
        // ("id": 1234567890123456790…); past 2^53 most parsers lose its digits anyway.
        if bound_sides(obj, json!(-SAFE_INTEGER), json!(SAFE_INTEGER)) {
            notes.push(format!("{}: integers within ±(2^53 − 1)", here(at)));
        }
    }
    // An array that says nothing of its items holds any values: narrowed like `{}`.
    if !combined
        && has_type(obj, "array")
        && !obj.contains_key("items")
        && !obj.contains_key("prefixItems")
    {
        obj.insert("items".into(), json!({}));
    }
    let pointer = format!("#{at}");
    if !combined && is_object_type(obj) && !extended.contains(&pointer) {
        close(obj, at, notes);
    }
    for key in ["properties", "patternProperties", "definitions", "$defs"] {
        if let Some(Value::Object(map)) = obj.get_mut(key) {
            for (name, sub) in map.iter_mut() {
                walk(sub, &format!("{at}/{key}/{name}"), extended, notes);
            }
        }
    }
    for key in ["anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            for (i, sub) in list.iter_mut().enumerate() {
                walk(sub, &format!("{at}/{key}/{i}"), extended, notes);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = obj.get_mut(key) {
            if sub.is_object() || sub == &Value::Bool(true) {
                walk(sub, &format!("{at}/{key}"), extended, notes);
            }
        }
    }
}

fn has_any(obj: &Map<String, Value>, words: &[&str]) -> bool {
    words.iter().any(|w| obj.contains_key(*w))
}

fn has_type(obj: &Map<String, Value>, ty: &str) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

fn is_object_type(obj: &Map<String, Value>) -> bool {
    has_type(obj, "object")
}

/// An untyped schema gets the type its keywords imply; one with no such keyword admits
/// any value and becomes a scalar.
fn type_from_keywords(obj: &mut Map<String, Value>, at: &str, notes: &mut Vec<String>) {
    let kinds: Vec<&str> = [
        (OBJECT_WORDS, "object"),
        (ARRAY_WORDS, "array"),
        (STRING_WORDS, "string"),
    ]
    .iter()
    .filter(|(words, _)| has_any(obj, words))
    .map(|(_, kind)| *kind)
    .collect();
    match kinds.as_slice() {
        [] => {
            // Not a number: a bounded string always ends, a number's digits need not.
            obj.insert("type".into(), json!(["string", "boolean", "null"]));
            notes.push(format!(
                "{}: any value → a string, a boolean or null",
                here(at)
            ));
        }
        [kind] => {
            obj.insert("type".into(), json!(kind));
            notes.push(format!(
                "{}: untyped → {kind} (from its keywords)",
                here(at)
            ));
        }
        // Keywords of several types: leave it to the grammar engine.
        _ => {}
    }
}

/// `additionalProperties: false` on an object that lists its properties (and is open, or
/// open to any value), when that cannot make it unsatisfiable.
fn close(obj: &mut Map<String, Value>, at: &str, notes: &mut Vec<String>) {
    // Open by default, or said to be open to anything: extra properties are never needed.
    // Already closed: only keys a pattern admits may be left to drop.
    let closed = match obj.get("additionalProperties") {
        None | Some(Value::Bool(true)) => false,
        Some(Value::Object(o)) if o.is_empty() => false,
        Some(Value::Bool(false)) if obj.contains_key("patternProperties") => true,
        Some(_) => return,
    };
    let empty = Map::new();
    let props = match obj.get("properties") {
        Some(Value::Object(p)) => p,
        // A free-form object inside another: written as `{}`. At the top (JSON mode's
        // `{"type": "object"}`) it stays free.
        // Or keys only patterns admit, and nothing requires one: their names have no
        // length bound a small model stops at, and `{}` is valid.
        None if (!at.is_empty() || obj.contains_key("patternProperties"))
            && obj
                .get("minProperties")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                == 0
            && obj
                .get("required")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty) =>
        {
            &empty
        }
        _ => return,
    };
    let listed = |name: &Value| name.as_str().is_some_and(|n| props.contains_key(n));
    let required_listed = match obj.get("required") {
        Some(Value::Array(names)) => names.iter().all(listed),
        _ => true,
    };
    let reachable = obj
        .get("minProperties")
        .and_then(Value::as_u64)
        .is_none_or(|n| n as usize <= props.len());
    if required_listed && reachable {
        // Keys only a pattern admits are never needed either (the named ones already
        // carry the schemas of the patterns they match: `compat`), and their names have
        // no length bound a small model stops at.
        obj.remove("patternProperties");
        if closed {
            return;
        }
        obj.insert("additionalProperties".into(), Value::Bool(false));
        notes.push(format!(
            "{}: closed to its listed properties (additionalProperties: false)",
            here(at)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_the_bounds_they_lack_and_keep_their_own() {
        let mut s = json!({"type": "object", "properties": {
            "big": {"type": "integer", "minimum": 1e20},
            "low": {"type": "integer", "exclusiveMaximum": 10},
            "either": {"type": ["integer", "null"]},
            "x": {"type": "number", "maximum": 5}
        }});
        narrow(&mut s);
        let p = &s["properties"];
        assert_eq!(
            p["big"],
            json!({"type": "integer", "minimum": 1e20}),
            "no maximum below its minimum"
        );
        assert_eq!(p["low"]["minimum"], json!(-SAFE_INTEGER));
        assert!(p["low"].get("maximum").is_none());
        assert_eq!(p["either"]["maximum"], json!(SAFE_INTEGER));
        assert_eq!(
            (
                &p["x"]["minimum"],
                &p["x"]["maximum"],
                &p["x"]["multipleOf"]
            ),
            (&json!(-NUMBER_LIMIT), &json!(5), &json!(NUMBER_STEP))
        );
    }

    #[test]
    fn pattern_keys_are_dropped_where_the_listed_names_suffice() {
        for closed in [json!(true), json!(false)] {
            let mut s = json!({
                "type": "object",
                "required": ["x_id"],
                "properties": {"x_id": {"type": "string"}},
                "patternProperties": {"^x_": {"type": "string"}},
                "additionalProperties": closed
            });
            narrow(&mut s);
            assert!(s.get("patternProperties").is_none(), "{s}");
            assert_eq!(s["additionalProperties"], false);
        }
        // Nothing listed, nothing required: an empty object.
        let mut s = json!({"type": "object", "patternProperties": {"^x_": {"type": "string"}}});
        narrow(&mut s);
        assert_eq!(s, json!({"type": "object", "additionalProperties": false}));
        // A required name no listed property supplies, or a least count: the patterns stay.
        for need in [json!({"required": ["x_id"]}), json!({"minProperties": 1})] {
            let mut s = json!({
                "type": "object",
                "patternProperties": {"^x_": {"type": "string"}},
                "additionalProperties": false
            });
            s.as_object_mut()
                .unwrap()
                .extend(need.as_object().unwrap().clone());
            narrow(&mut s);
            assert!(s.get("patternProperties").is_some(), "{s}");
        }
    }

    #[test]
    fn open_objects_close_and_untyped_schemas_get_a_type() {
        let mut s = json!({
            "properties": {
                "name": {"maxLength": 5},
                "anything": {},
                "tags": {"items": true},
                "mixed": {"properties": {"a": {}}, "maxLength": 3},
                "count": {"type": "integer"},
                "price": {"type": "number"},
                "ratio": {"type": "number", "multipleOf": 0.5},
                "when": {"format": "iri-reference"},
                "mail": {"format": "email"},
                "list": {"maxItems": 2}
            },
            "required": ["name"]
        });
        let notes = narrow(&mut s);
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        let p = &s["properties"];
        assert_eq!(p["name"]["type"], "string");
        assert_eq!(p["anything"]["type"], json!(["string", "boolean", "null"]));
        assert_eq!(p["tags"]["type"], "array");
        assert_eq!(
            p["tags"]["items"]["type"],
            json!(["string", "boolean", "null"])
        );
        assert!(p["mixed"].get("type").is_none(), "keywords of two types");
        assert_eq!(
            p["count"],
            json!({"type": "integer", "minimum": -SAFE_INTEGER, "maximum": SAFE_INTEGER})
        );
        assert_eq!(p["price"]["maximum"], json!(NUMBER_LIMIT));
        assert_eq!(p["price"]["multipleOf"], json!(NUMBER_STEP));
        assert!(
            p["ratio"].get("maximum").is_none(),
            "multipleOf: left to the caller"
        );
        assert!(
            p["when"].get("type").is_none(),
            "a format the grammar lacks: untyped"
        );
        assert_eq!(p["mail"]["type"], "string");
        assert_eq!(
            p["list"]["items"]["type"],
            json!(["string", "boolean", "null"])
        );
        assert!(
            notes.iter().any(|n| n.starts_with("/: closed")),
            "{notes:?}"
        );
        // A free-form object inside another is written empty.
        let mut s = json!({"type": "object", "properties": {"options": {"type": "object"}}});
        narrow(&mut s);
        assert_eq!(s["properties"]["options"]["additionalProperties"], false);
    }

    #[test]
    fn objects_that_others_may_extend_stay_open() {
        for s in [
            // A required name that only additionalProperties could supply.
            json!({"type": "object", "properties": {"a": {}}, "required": ["b"]}),
            json!({"type": "object", "properties": {"a": {}}, "minProperties": 2}),
            json!({"type": "object", "properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}]}),
            json!({"type": "object", "properties": {"a": {}}, "dependencies": {"a": {"properties": {"b": {}}}}}),
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}}),
            // No listed properties at the top: a free-form object (JSON mode) stays free.
            json!({"type": "object"}),
        ] {
            let mut g = s.clone();
            narrow(&mut g);
            assert_eq!(
                g.get("additionalProperties"),
                s.get("additionalProperties"),
                "{s}"
            );
        }
        // A definition other schemas extend through allOf stays open.
        let mut g = json!({
            "definitions": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}}}},
            "allOf": [{"$ref": "#/definitions/Base"}, {"properties": {"name": {"type": "string"}}}]
        });
        narrow(&mut g);
        assert!(g["definitions"]["Base"]
            .get("additionalProperties")
            .is_none());
        // Under `not` and `allOf` nothing is touched.
        let s = json!({"not": {"properties": {"a": {}}}, "allOf": [{"properties": {"b": {}}}]});
        let mut g = s.clone();
        narrow(&mut g);
        assert_eq!(g, s);
    }
}
