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
}
