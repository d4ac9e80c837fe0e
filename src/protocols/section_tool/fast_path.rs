//! The seed's fast path: a request that names a heading as where to go ("open the
//! deployment guide", "take me to the Checkpoints section") routes there without
//! retrieval or the model.
//!
//! Two conditions keep it from firing on a question that merely mentions a heading's
//! words: the question must ask to go somewhere (a navigation verb before the heading),
//! and the heading must identify one place — a name held by one node of the tree, and
//! not one the KB's text uses everywhere (a product's name is a heading in its glossary
//! and a word of most questions: it says nothing about where the answer is).

use super::HeadingTree;

/// Phrases that ask to be taken somewhere. The heading must come after one of them.
const REQUESTS: &[&str] = &[
    "open",
    "go to",
    "goto",
    "take me to",
    "navigate to",
    "jump to",
    "bring up",
    "show me",
    "show",
    "display",
    "find the section",
    "where is the section",
];

/// Normalises for fuzzy matching: lowercase letters and digits, single spaces.
pub(super) fn normalise(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The words of the question after its first navigation request, or None when it asks
/// to go nowhere.
fn requested(question: &str) -> Option<String> {
    let q = normalise(question);
    let padded = format!(" {q} ");
    REQUESTS
        .iter()
        .filter_map(|r| padded.find(&format!(" {r} ")).map(|i| (i, r.len())))
        .min()
        .map(|(i, len)| padded[i + len + 1..].trim().to_string())
}

/// Whether `heading` is written in `text` (normalised words), exactly or within a small
/// edit distance of a same-length window of its words.
fn names(text: &str, heading: &str) -> bool {
    let h = normalise(heading);
    if h.len() < 4 {
        return false;
    }
    if format!(" {text} ").contains(&format!(" {h} ")) {
        return true;
    }
    let n = h.split(' ').count();
    let tolerance = (h.len() / 8).min(3);
    let words: Vec<&str> = text.split(' ').collect();
    tolerance > 0
        && words
            .windows(n)
            .any(|w| levenshtein(&w.join(" "), &h) <= tolerance)
}

/// How many nodes of the tree carry this (normalised) name.
fn holders(tree: &HeadingTree, heading: &str) -> usize {
    let h = normalise(heading);
    let tops = tree.sections.iter().map(|(n, _, _)| n.as_str());
    let subs = tree
        .sections
        .iter()
        .flat_map(|(_, _, subs)| subs.iter().map(|(s, _)| s.as_str()));
    let deeper = tree
        .deeper
        .iter()
        .filter_map(|d| d.section_path.last().map(String::as_str));
    tops.chain(subs)
        .chain(deeper)
        .filter(|n| normalise(n) == h)
        .count()
}

/// The heading a navigation request names: the longest named after the request that
/// identifies one place (one node holds the name, and `common` says the KB's text does
/// not use it everywhere). A subsection match implies its section.
pub fn named_target(
    tree: &HeadingTree,
    question: &str,
    common: &dyn Fn(&str) -> bool,
) -> Option<(String, Option<String>)> {
    let text = requested(question)?;
    let identifies =
        |heading: &str| names(&text, heading) && holders(tree, heading) == 1 && !common(heading);
    let mut best: Option<(usize, String, Option<String>)> = None;
    for (name, _, subs) in &tree.sections {
        for (sub, _) in subs {
            if best.as_ref().is_none_or(|b| sub.len() > b.0) && identifies(sub) {
                best = Some((sub.len(), name.clone(), Some(sub.clone())));
            }
        }
        if best.as_ref().is_none_or(|b| name.len() > b.0) && identifies(name) {
            best = Some((name.len(), name.clone(), None));
        }
    }
    best.map(|(_, s, sub)| (s, sub))
}

#[cfg(test)]
mod tests {
    use super::super::tests::seed_tree;
    use super::*;

    const NEVER: &dyn Fn(&str) -> bool = &|_| false;

    #[test]
    fn a_request_names_its_heading() {
        let t = seed_tree();
        assert_eq!(
            named_target(&t, "open the deployment guide please", NEVER),
            Some(("Deployment Guide".into(), None))
        );
        assert_eq!(
            named_target(&t, "show me autogen's advanced featurs", NEVER),
            Some(("Autogen".into(), Some("Advanced Features".into())))
        );
    }

    #[test]
    fn a_question_that_mentions_a_heading_is_not_a_request() {
        let t = seed_tree();
        // The heading's words, but no request to go there: evidence decides.
        assert_eq!(
            named_target(
                &t,
                "Which security settings does the deployment guide need?",
                NEVER
            ),
            None
        );
        // The heading before the request is not what is asked for.
        assert_eq!(named_target(&t, "Agno: open the logs", NEVER), None);
    }

    #[test]
    fn a_name_the_kb_uses_everywhere_identifies_no_place() {
        let t = seed_tree();
        let everywhere = |h: &str| normalise(h) == "autogen";
        assert_eq!(named_target(&t, "open autogen", &everywhere), None);
        // Its subsection still identifies one place.
        assert_eq!(
            named_target(&t, "open autogen examples", &everywhere),
            Some(("Autogen".into(), Some("Examples".into())))
        );
    }

    #[test]
    fn a_name_two_nodes_hold_identifies_neither() {
        let mut t = seed_tree();
        let dup = t.sections[0].2[1].clone(); // Agno › Tools
        t.sections[1].2.push(("Tools".into(), dup.1));
        assert_eq!(named_target(&t, "take me to tools", NEVER), None);
    }
}
