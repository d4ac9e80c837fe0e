//! Patterns the grammar's regex engine cannot read and `patternProperties` it cannot take,
//! turned into a looser form it can: the grammar admits a little more, and validation
//! (whose regex engine reads ECMA-262) checks the rest. Each rewrite only ever widens.

use serde_json::{json, Map, Value};

/// A form of `p` the grammar's regex engine reads, admitting everything `p` admits:
/// look-around taken out, each back-reference `\N` replaced by a copy of group N. `None`
/// when no such form compiles.
pub(super) fn looser(p: &str) -> Option<String> {
    let out = with_groups_for_backreferences(&without_lookaround(p));
    (out != p && regex::Regex::new(&out).is_ok()).then_some(out)
}

/// `patternProperties` spelled out where the grammar can use them: each name the object
/// lists or requires gets the schemas of the patterns it matches as well (JSON Schema
/// applies every match to it, and the narrowing may close the object to those names).
/// Several patterns, which the engine needs disjoint and cannot check, become one whose
/// value may be any of their schemas (a key that matches two must satisfy both:
/// validation checks that). False, with nothing changed, when a pattern does not compile.
pub(super) fn merge_pattern_properties(obj: &mut Map<String, Value>) -> bool {
    let Some(Value::Object(patterns)) = obj.get("patternProperties") else {
        return false;
    };
    let Ok(compiled) = patterns
        .iter()
        .map(|(p, s)| regex::Regex::new(p).map(|r| (p.clone(), r, s.clone())))
        .collect::<Result<Vec<_>, _>>()
    else {
        return false;
    };
    let mut names: Vec<String> = obj
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for r in obj
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(r) = r.as_str().filter(|r| !names.iter().any(|n| n == r)) {
            names.push(r.to_string());
        }
    }
    let mut properties = match obj.remove("properties") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for name in names {
        let mut all: Vec<Value> = properties.remove(&name).into_iter().collect();
        all.extend(
            compiled
                .iter()
                .filter(|(_, r, _)| r.is_match(&name))
                .map(|(_, _, s)| s.clone()),
        );
        match all.len() {
            0 => {}
            1 => {
                properties.insert(name, all.remove(0));
            }
            _ => {
                properties.insert(name, json!({ "allOf": all }));
            }
        }
    }
    if !properties.is_empty() {
        obj.insert("properties".into(), Value::Object(properties));
    }
    if compiled.len() < 2 {
        return true;
    }
    let union = compiled
        .iter()
        .map(|(p, _, _)| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    let any: Vec<Value> = compiled.into_iter().map(|(_, _, s)| s).collect();
    obj.insert(
        "patternProperties".into(),
        json!({ union: { "anyOf": any } }),
    );
    true
}

/// The pattern with its look-around groups (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`) taken
/// out; escapes and character classes are stepped over so their parentheses do not count.
fn without_lookaround(p: &str) -> String {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..chars.len().min(i + 4)].iter().collect();
        let opens = ["(?<=", "(?<!"].iter().any(|o| rest.starts_with(o))
            || ["(?=", "(?!"].iter().any(|o| rest.starts_with(o));
        if !opens {
            i = copy_token(&chars, i, &mut out);
            continue;
        }
        // Skip the group, its nested groups, escapes and classes.
        let mut depth = 0;
        while i < chars.len() {
            match chars[i] {
                '\\' => i += 1,
                '[' => i = class_close(&chars, i),
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The pattern with each back-reference `\1`…`\9` replaced by a non-capturing copy of
/// the group it names (`^<([a-z]+)>.*</\1>$` → `^<([a-z]+)>.*</(?:[a-z]+)>$`): the same
/// shape without the requirement that both hold the same text.
fn with_groups_for_backreferences(p: &str) -> String {
    let chars: Vec<char> = p.chars().collect();
    // The text of each capturing group, in the order the groups open.
    let mut groups: Vec<Option<String>> = Vec::new();
    let mut open: Vec<(usize, Option<usize>)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => i = class_close(&chars, i),
            '(' => {
                let rest: String = chars[i..chars.len().min(i + 4)].iter().collect();
                let capturing = !rest.starts_with("(?")
                    || ((rest.starts_with("(?<") || rest.starts_with("(?P<"))
                        && !rest.starts_with("(?<=")
                        && !rest.starts_with("(?<!"));
                let body = if rest.starts_with("(?") {
                    // The body starts after the group's name or flag.
                    chars[i..]
                        .iter()
                        .position(|c| *c == '>' || *c == ':')
                        .map_or(i + 1, |k| i + k + 1)
                } else {
                    i + 1
                };
                let index = capturing.then(|| {
                    groups.push(None);
                    groups.len() - 1
                });
                open.push((body, index));
            }
            ')' => {
                if let Some((body, Some(index))) = open.pop() {
                    groups[index] = Some(chars[body.min(i)..i].iter().collect());
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if chars
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_digit() && *c != '0') =>
            {
                let n = chars[i + 1].to_digit(10).unwrap_or(0) as usize;
                match groups.get(n - 1).cloned().flatten() {
                    Some(g) => out.push_str(&format!("(?:{g})")),
                    None => out.extend(&chars[i..i + 2]),
                }
                i += 2;
            }
            _ => i = copy_token(&chars, i, &mut out),
        }
    }
    out
}

/// Copies the pattern's token at `i` to `out` (an escape, a whole character class, or one
/// character) and returns where the next one starts: escapes and classes are stepped
/// over whole, so their parentheses do not count as groups.
fn copy_token(chars: &[char], mut i: usize, out: &mut String) -> usize {
    let start = i;
    match chars[i] {
        '\\' => i += 2,
        '[' => i = class_close(chars, i) + 1,
        _ => i += 1,
    }
    let end = i.min(chars.len());
    out.extend(&chars[start..end]);
    end
}

/// The index of the `]` that closes the character class opening at `i` (the pattern's
/// length when none does); escaped brackets inside it are stepped over.
fn class_close(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i] != ']' {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_around_and_back_references_loosen_to_what_the_engine_reads() {
        assert_eq!(without_lookaround(r"a(?<=\)b)[(?=]c"), r"a[(?=]c");
        assert_eq!(
            looser(r"^<([a-z]+)>[a-z ]*</\1>$").as_deref(),
            Some(r"^<([a-z]+)>[a-z ]*</(?:[a-z]+)>$")
        );
        assert_eq!(
            looser(r"^(?<q>['\x22])[^(]*\k<q>$|^(a)(?:b)(c)\2$").as_deref(),
            None,
            "a named back-reference has no copy: not loosened"
        );
        assert_eq!(
            looser(r"^(?:x)(y[(])\1$").as_deref(),
            Some(r"^(?:x)(y[(])(?:y[(])$")
        );
        assert_eq!(looser(r"^[a-z]+$"), None, "nothing to loosen");
    }

    #[test]
    fn overlapping_pattern_properties_become_one_pattern_and_named_properties() {
        let mut obj = json!({
            "type": "object",
            "required": ["x_id"],
            "properties": {"y_id": {"maxLength": 4}},
            "patternProperties": {"^x_": {"type": "string"}, "_id$": {"pattern": "^[0-9]+$"}},
            "additionalProperties": false
        });
        assert!(merge_pattern_properties(obj.as_object_mut().unwrap()));
        assert_eq!(
            obj["properties"],
            json!({
                "y_id": {"allOf": [{"maxLength": 4}, {"pattern": "^[0-9]+$"}]},
                "x_id": {"allOf": [{"type": "string"}, {"pattern": "^[0-9]+$"}]}
            })
        );
        assert_eq!(
            obj["patternProperties"],
            json!({"(?:^x_)|(?:_id$)": {"anyOf": [{"type": "string"}, {"pattern": "^[0-9]+$"}]}})
        );
        let mut bad = json!({"patternProperties": {"(?=a)": {}, "b": {}}});
        assert!(!merge_pattern_properties(bad.as_object_mut().unwrap()));
    }
}
