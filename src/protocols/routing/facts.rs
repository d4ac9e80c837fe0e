//! The forensic fields a decision rests on, as the phrases a reason names ("2 failing
//! tests", "HIGH concern \"Missing error handling\" at src/auth.py:42", "iteration 2 of
//! 3"), and the kernel's check that a reason names at least one of them. The seed:
//! "Navigator routes based on forensics, not narrative".

use super::{Flow, ForensicSummary};

/// Longest concern description quoted in a fact.
const CONCERN_CHARS: usize = 80;

/// The summary's facts that bear on a decision, most telling first.
pub fn forensic_facts(flow: &Flow, s: &ForensicSummary) -> Vec<String> {
    let f = &s.forensics;
    let mut facts = vec![format!("status {}", s.status)];
    if f.tests.failed > 0 {
        facts.push(format!(
            "{} failing test{} ({} passing)",
            f.tests.failed,
            plural(f.tests.failed),
            f.tests.passed
        ));
    } else {
        facts.push(format!("all {} tests passing", f.tests.passed));
    }
    if f.lint.errors > 0 {
        facts.push(format!(
            "{} lint error{}",
            f.lint.errors,
            plural(f.lint.errors)
        ));
    }
    for severity in ["HIGH", "MEDIUM"] {
        for c in f.concerns.iter().filter(|c| c.severity == severity) {
            let text = crate::kb::parse::excerpt(&c.description, CONCERN_CHARS);
            facts.push(match &c.location {
                Some(at) => format!("{severity} concern \"{text}\" at {at}"),
                None => format!("{severity} concern \"{text}\""),
            });
        }
    }
    let limit = s.iteration.max.min(flow.limits.max_iterations);
    facts.push(format!("iteration {} of {limit}", s.iteration.current));
    if let Some(sig) = s.signature() {
        let known = if flow.detour_for(&sig).is_some() {
            "catalogued"
        } else {
            "not in the detour catalogue"
        };
        facts.push(format!("failure signature {sig} ({known})"));
    }
    if let Some(prev) = &s.previous_failure_signature {
        facts.push(format!("previous failure signature {prev}"));
    }
    if s.can_further_iteration_help == Some(false) {
        facts.push("further iteration cannot help".into());
    }
    facts
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Whether a reason names at least one forensic field of the summary: its status, its
/// failing tests or lint errors, a concern's text, the iteration, a signature.
pub fn names_forensic_field(reason: &str, s: &ForensicSummary) -> bool {
    let r = reason.to_lowercase();
    let f = &s.forensics;
    let mut marks: Vec<String> = vec![
        s.status.to_lowercase(),
        "iteration".into(),
        "tests pass".into(),
        "failing test".into(),
        "lint error".into(),
        "no high concern".into(),
    ];
    for c in &f.concerns {
        let d = c.description.to_lowercase();
        marks.push(d.chars().take(30).collect());
    }
    marks.extend(s.signature().map(|x| x.to_lowercase()));
    marks.extend(
        s.previous_failure_signature
            .as_ref()
            .map(|x| x.to_lowercase()),
    );
    marks
        .iter()
        .any(|m| !m.trim().is_empty() && r.contains(m.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> (Flow, ForensicSummary) {
        let flow = Flow::example();
        let s = ForensicSummary::parse(include_str!("../../../examples/forensics.json"), &flow)
            .unwrap();
        (flow, s)
    }

    #[test]
    fn the_seed_examples_facts() {
        let (flow, s) = example();
        assert_eq!(
            forensic_facts(&flow, &s),
            [
                "status UNVERIFIED",
                "2 failing tests (42 passing)",
                "HIGH concern \"Missing error handling\" at src/auth.py:42",
                "iteration 2 of 3"
            ]
        );
    }

    #[test]
    fn a_reason_must_name_a_field() {
        let (_, s) = example();
        assert!(names_forensic_field(
            "LOOP: 2 failing tests; iteration 2 of 3",
            &s
        ));
        assert!(names_forensic_field(
            "fix the missing error handling first",
            &s
        ));
        assert!(!names_forensic_field(
            "The current flow is not designed to handle errors or exceptions",
            &s
        ));
    }
}
