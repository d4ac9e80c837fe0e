//! Scoring `navigate_to_section` against the labelled questions: where the call lands
//! (its file, and its file and section) next to where plain search's first hit is, on the
//! same answerable questions. Navigation earns its place only if it lands on the expected
//! file at least as often as the first hit does.

use serde::Serialize;

use super::{EvalQuestion, QuestionKind};
use crate::kb::search::Hit;
use crate::protocols::section_tool::{NavigatedBy, Navigation};
use crate::stats::percentile;

use super::Share;

/// One answerable question's navigation.
#[derive(Debug, Clone, Serialize)]
pub struct NavigationScored {
    pub id: String,
    /// Where the call landed, as `file § heading path`.
    pub target: String,
    pub decided_by: NavigatedBy,
    pub file_right: bool,
    pub section_right: bool,
    /// Search's first hit, as `file § heading path`.
    pub first_hit: String,
    pub first_hit_file_right: bool,
    pub first_hit_section_right: bool,
    pub decision: String,
    pub latency_ms: f64,
}

/// Lowercase words only: headings are compared as a reader sees them.
fn same_heading(a: &str, b: &str) -> bool {
    let words = |s: &str| {
        s.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    words(a) == words(b)
}

/// Whether a place (file and heading path) is the question's expected one.
fn place_right(q: &EvalQuestion, file: &str, path: &[String]) -> (bool, bool) {
    let file_right = q.file.as_deref() == Some(file);
    let section_right = file_right
        && match (q.section.as_deref(), path.last()) {
            (Some(want), Some(got)) => same_heading(want, got),
            _ => false,
        };
    (file_right, section_right)
}

fn place(file: &str, path: &[String]) -> String {
    format!("{file} § {}", path.join(" > "))
}

/// Scores one navigation; None for a question that is not answerable (it names no place).
pub fn score_navigation(
    q: &EvalQuestion,
    nav: &Navigation,
    decision: &str,
    first_hit: Option<&Hit>,
    latency_ms: f64,
) -> Option<NavigationScored> {
    if q.kind != QuestionKind::Answerable {
        return None;
    }
    let (file_right, section_right) = place_right(q, &nav.target.file, &nav.target.section_path);
    let (hit_file, hit_section) = first_hit
        .map(|h| place_right(q, &h.file, &h.section_path))
        .unwrap_or((false, false));
    Some(NavigationScored {
        id: q.id.clone(),
        target: place(&nav.target.file, &nav.target.section_path),
        decided_by: nav.decided_by,
        file_right,
        section_right,
        first_hit: first_hit
            .map(|h| place(&h.file, &h.section_path))
            .unwrap_or_default(),
        first_hit_file_right: hit_file,
        first_hit_section_right: hit_section,
        decision: decision.to_string(),
        latency_ms,
    })
}

/// The figures of a navigation run.
#[derive(Debug, Clone, Serialize)]
pub struct NavigationFigures {
    pub questions: usize,
    pub file: Share,
    pub file_and_section: Share,
    pub first_hit_file: Share,
    pub first_hit_file_and_section: Share,
    /// How many calls each step decided: fast path, retrieval, LLM.
    pub by_fast_path: usize,
    pub by_retrieval: usize,
    pub by_llm: usize,
    /// Of the calls the LLM decided, those landing on the expected file.
    pub llm_file: Share,
    pub latency_p50_ms: f64,
    pub latency_p95_ms: f64,
}

pub fn summarise_navigation(scored: &[NavigationScored]) -> NavigationFigures {
    let n = scored.len();
    let count = |f: &dyn Fn(&NavigationScored) -> bool| scored.iter().filter(|s| f(s)).count();
    let by = |d: NavigatedBy| count(&|s| s.decided_by == d);
    let latencies: Vec<f64> = scored.iter().map(|s| s.latency_ms).collect();
    NavigationFigures {
        questions: n,
        file: Share::count(count(&|s| s.file_right), n),
        file_and_section: Share::count(count(&|s| s.section_right), n),
        first_hit_file: Share::count(count(&|s| s.first_hit_file_right), n),
        first_hit_file_and_section: Share::count(count(&|s| s.first_hit_section_right), n),
        by_fast_path: by(NavigatedBy::FastPath),
        by_retrieval: by(NavigatedBy::Retrieval),
        by_llm: by(NavigatedBy::Llm),
        llm_file: Share::count(
            count(&|s| s.decided_by == NavigatedBy::Llm && s.file_right),
            by(NavigatedBy::Llm),
        ),
        latency_p50_ms: percentile(latencies.clone(), 0.5),
        latency_p95_ms: percentile(latencies, 0.95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::section_tool::Node;

    fn question(file: &str, section: &str) -> EvalQuestion {
        EvalQuestion {
            id: "q".into(),
            split: None,
            kind: QuestionKind::Answerable,
            question: "where?".into(),
            file: Some(file.into()),
            section: Some(section.into()),
            keywords: vec![],
            turns: vec![],
            standalone: None,
            topic_change: false,
        }
    }

    fn navigation(file: &str, path: &[&str], by: NavigatedBy) -> Navigation {
        Navigation {
            call: serde_json::json!({}),
            target: Node {
                file: file.into(),
                anchor: String::new(),
                section_path: path.iter().map(|s| s.to_string()).collect(),
            },
            decided_by: by,
        }
    }

    #[test]
    fn file_and_section_are_scored_apart() {
        let q = question("a.html", "20.5.2. Checkpoints");
        let right = navigation("a.html", &["WAL", "20.5.2. checkpoints"], NavigatedBy::Llm);
        let s = score_navigation(&q, &right, "", None, 1.0).unwrap();
        assert!(s.file_right && s.section_right);
        let parent = navigation("a.html", &["WAL"], NavigatedBy::Retrieval);
        let s = score_navigation(&q, &parent, "", None, 1.0).unwrap();
        assert!(s.file_right && !s.section_right);
        let other = navigation("b.html", &["20.5.2. Checkpoints"], NavigatedBy::FastPath);
        let s2 = score_navigation(&q, &other, "", None, 1.0).unwrap();
        assert!(!s2.file_right && !s2.section_right);
        let f = summarise_navigation(&[s, s2]);
        assert_eq!(
            (f.file.right, f.file_and_section.right, f.by_llm),
            (1, 0, 0)
        );
        let mut ood = q.clone();
        ood.kind = QuestionKind::OutOfDomain;
        assert!(score_navigation(&ood, &right, "", None, 1.0).is_none());
    }
}
