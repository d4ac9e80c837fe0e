//! Where a schema contradicts itself. The grammar engine refuses an unsatisfiable schema
//! with a reason that sometimes names no place ("incompatible types"); this finds the
//! keywords that conflict, so the error can say which to change.

use serde_json::Value;

/// The JSON types a value has under JSON Schema (an integral number is also an integer).
fn types_of_value(v: &Value) -> Vec<&'static str> {
    match v {
        Value::Null => vec!["null"],
        Value::Bool(_) => vec!["boolean"],
        Value::Number(n) => {
            if n.as_f64().is_some_and(|f| f.fract() == 0.0) {
                vec!["number", "integer"]
            } else {
                vec!["number"]
            }
        }
        Value::String(_) => vec!["string"],
        Value::Array(_) => vec!["array"],
        Value::Object(_) => vec!["object"],
    }
}

/// The types a schema declares (None: any).
fn declared(s: &Value) -> Option<Vec<String>> {
    match s.get("type")? {
        Value::String(t) => Some(vec![t.clone()]),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        ),
        _ => None,
    }
}

/// Types two declarations share (integer is a number).
fn shared(a: &[String], b: &[String]) -> Vec<String> {
    let admits = |set: &[String], t: &str| {
        set.iter().any(|x| x == t) || (t == "integer" && set.iter().any(|x| x == "number"))
    };
    let mut out: Vec<String> = a.iter().filter(|t| admits(b, t)).cloned().collect();
    for t in b {
        if admits(a, t) && !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

/// The first conflict found, as "<where>: <what conflicts>".
pub fn find_conflict(schema: &Value) -> Option<String> {
    walk(schema, "")
}

fn walk(s: &Value, at: &str) -> Option<String> {
    let Value::Object(obj) = s else { return None };
    let here = if at.is_empty() { "/" } else { at };
    if let Some(types) = declared(s) {
        let of_type = |v: &Value| {
            let vt = types_of_value(v);
            types.iter().any(|t| vt.contains(&t.as_str()))
        };
        if let Some(Value::Array(values)) = obj.get("enum") {
            if !values.is_empty() && !values.iter().any(of_type) {
                return Some(format!(
                    "{here}: no value of `enum` {} is of `type` {}",
                    Value::Array(values.clone()),
                    types.join("/")
                ));
            }
        }
        if let Some(c) = obj.get("const") {
            if !of_type(c) {
                return Some(format!(
                    "{here}: `const` {c} is not of `type` {}",
                    types.join("/")
                ));
            }
        }
    }
    if let Some(Value::Array(branches)) = obj.get("allOf") {
        let mut acc: Option<(Vec<String>, String)> =
            declared(s).map(|t| (t, "the schema's own `type`".to_string()));
        for (i, b) in branches.iter().enumerate() {
            let Some(t) = declared(b) else { continue };
            let name = format!("`allOf` branch {}", i + 1);
            acc = match acc {
                None => Some((t, name)),
                Some((prev, prev_name)) => {
                    let common = shared(&prev, &t);
                    if common.is_empty() {
                        return Some(format!(
                            "{here}: {prev_name} says type {} and {name} says type {}: no value is both",
                            prev.join("/"),
                            t.join("/")
                        ));
                    }
                    Some((common, format!("{prev_name} and {name}")))
                }
            };
        }
    }
    if obj.get("additionalProperties") == Some(&Value::Bool(false))
        && !obj.contains_key("patternProperties")
    {
        let listed = |n: &str| obj.get("properties").and_then(|p| p.get(n)).is_some();
        if let Some(Value::Array(req)) = obj.get("required") {
            if let Some(missing) = req.iter().filter_map(Value::as_str).find(|n| !listed(n)) {
                return Some(format!(
                    "{here}: `required` lists {missing:?}, but `additionalProperties` is false and `properties` does not list it"
                ));
            }
        }
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(m)) = obj.get(key) {
            for (k, x) in m {
                if let Some(c) = walk(x, &format!("{at}/{key}/{k}")) {
                    return Some(c);
                }
            }
        }
    }
    for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(xs)) = obj.get(key) {
            for (i, x) in xs.iter().enumerate() {
                if let Some(c) = walk(x, &format!("{at}/{key}/{i}")) {
                    return Some(c);
                }
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(x) = obj.get(key) {
            if let Some(c) = walk(x, &format!("{at}/{key}")) {
                return Some(c);
            }
        }
    }
    None
}

/// Where a schema admits no value at all, as "<where>: <why>": the schema `false`, or a
/// `not` of a schema every value matches, at the root, in an `allOf`, or in a property an
/// object-only schema requires. The grammar engine does not implement `not`, so such a
/// schema would otherwise be decoded without it and every output refused by validation.
pub fn admits_nothing(schema: &Value) -> Option<String> {
    nothing(schema, "")
}

fn nothing(s: &Value, at: &str) -> Option<String> {
    let here = if at.is_empty() { "/" } else { at };
    let Value::Object(obj) = s else {
        return (s == &Value::Bool(false))
            .then(|| format!("{here}: the schema `false` admits no value"));
    };
    if let Some(n) = obj.get("not") {
        if n == &Value::Bool(true) || n.as_object().is_some_and(|o| o.is_empty()) {
            return Some(format!("{here}: `not` {n} excludes every value"));
        }
    }
    if let Some(Value::Array(all)) = obj.get("allOf") {
        for (i, sub) in all.iter().enumerate() {
            if let Some(c) = nothing(sub, &format!("{at}/allOf/{i}")) {
                return Some(c);
            }
        }
    }
    // A required property that admits nothing rules out every object, and so every value
    // only where the schema admits objects alone.
    if declared(s).is_some_and(|t| t == ["object"]) {
        if let (Some(Value::Object(props)), Some(Value::Array(required))) =
            (obj.get("properties"), obj.get("required"))
        {
            for name in required.iter().filter_map(Value::as_str) {
                if let Some(c) = props
                    .get(name)
                    .and_then(|p| nothing(p, &format!("{at}/properties/{name}")))
                {
                    return Some(c);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conflicts_are_named_with_their_place() {
        let c =
            find_conflict(&json!({"allOf": [{"type": "string"}, {"type": "integer"}]})).unwrap();
        assert!(
            c.contains("branch 1 says type string") && c.contains("branch 2 says type integer"),
            "{c}"
        );
        let c = find_conflict(&json!({"properties": {"mode": {"type": "string", "enum": [1, 2]}}}))
            .unwrap();
        assert!(
            c.starts_with("/properties/mode") && c.contains("`enum`"),
            "{c}"
        );
        let c = find_conflict(&json!({"type": "object", "properties": {"a": {}}, "required": ["a", "b"], "additionalProperties": false})).unwrap();
        assert!(c.contains("\"b\""), "{c}");
        // Satisfiable: integer within number, an integral const.
        assert_eq!(
            find_conflict(&json!({"allOf": [{"type": "number"}, {"type": "integer"}]})),
            None
        );
        assert_eq!(
            find_conflict(&json!({"type": "integer", "const": 3.0})),
            None
        );
    }
    #[test]
    fn a_schema_that_admits_no_value_is_found_where_it_does() {
        use serde_json::json;
        assert!(admits_nothing(&json!({"not": {}}))
            .unwrap()
            .contains("`not` {}"));
        assert!(admits_nothing(&json!(false)).is_some());
        assert!(
            admits_nothing(&json!({"allOf": [{"type": "string"}, {"not": true}]}))
                .unwrap()
                .starts_with("/allOf/1")
        );
        let object = json!({"type": "object", "properties": {"a": {"not": {}}}, "required": ["a"]});
        assert!(admits_nothing(&object)
            .unwrap()
            .starts_with("/properties/a"));
        // Not required, or not only objects: some value still fits.
        assert_eq!(
            admits_nothing(&json!({"type": "object", "properties": {"a": false}})),
            None
        );
        assert_eq!(
            admits_nothing(&json!({"properties": {"a": false}, "required": ["a"]})),
            None
        );
        assert_eq!(admits_nothing(&json!({"not": {"type": "string"}})), None);
    }
}
