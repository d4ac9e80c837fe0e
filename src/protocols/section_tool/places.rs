//! Where the retrieved evidence points: the retrieved chunks grouped by the section they
//! sit in, each section scored by its best chunk's fusion score. The best place wins;
//! the model is asked only when places are nearly tied.
//!
//! Best chunk, not the sum of a section's chunks: summing favours long sections and
//! landed on the expected file less often than search's first hit on every tuning half
//! (git-doc 32 vs 35 of 51, postgresql 25 vs 27 of 39, sample 26 vs 29 of 33);
//! docs/AGENTS.md has the figures.

use crate::kb::search::Hit;

use super::HeadingTree;

/// One section the retrieved chunks sit in, as the tool call reaches it.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub file: String,
    /// The heading path the call lands on (a prefix of the chunk's when deeper headings
    /// are not in the tree).
    pub path: Vec<String>,
    /// The place's best chunk's fusion score.
    pub score: f64,
    /// The place's best chunk (an index into the hits).
    pub best: usize,
    /// The usage section of the same page whose rank it took (`after_usage`).
    pub instead_of: Option<String>,
}

impl Place {
    /// `file § a > b`, as the model and the report see it.
    pub fn label(&self) -> String {
        format!("{} § {}", self.file, self.path.join(" > "))
    }
}

/// The heading path of `file` the tree can land on for a chunk's `path`: the whole path
/// when the tree has it, else its longest prefix that it has (the top section must be
/// this file's, since a name used by two documents belongs to the first).
fn landing(tree: &HeadingTree, file: &str, chunk_path: &[String]) -> Option<Vec<String>> {
    let path = tree.path_of(file, chunk_path);
    let path = path.as_slice();
    let Some(top) = path.first() else {
        // Text before a document's first heading: the document's own top section.
        return tree
            .sections
            .iter()
            .find(|(_, node, _)| node.file == file)
            .map(|(n, _, _)| vec![n.clone()]);
    };
    let (_, node, subs) = tree.sections.iter().find(|(n, _, _)| n == top)?;
    if node.file != file {
        return None;
    }
    let Some(sub) = path.get(1).filter(|s| subs.iter().any(|(n, _)| n == *s)) else {
        return Some(vec![top.clone()]);
    };
    if path.len() > 2
        && tree
            .deeper
            .iter()
            .any(|d| d.file == file && d.section_path == path)
    {
        return Some(path.to_vec());
    }
    Some(vec![top.clone(), sub.clone()])
}

/// The places of the retrieved chunks, best first (ties keep retrieval's order).
pub fn rank(tree: &HeadingTree, hits: &[Hit]) -> Vec<Place> {
    let mut places: Vec<Place> = Vec::new();
    for (i, h) in hits.iter().enumerate() {
        let Some(path) = landing(tree, &h.file, &h.section_path) else {
            continue;
        };
        match places
            .iter_mut()
            .find(|p| p.file == h.file && p.path == path)
        {
            // Hits come best first: the place keeps its best chunk's score.
            Some(_) => {}
            None => places.push(Place {
                file: h.file.clone(),
                path,
                score: h.fused,
                best: i,
                instead_of: None,
            }),
        }
    }
    places.sort_by(|a, b| b.score.total_cmp(&a.score));
    after_usage(places)
}

/// Headings of a reference page's name line and usage ("NAME", "SYNOPSIS"): they list
/// what the page is about, not where a question is answered.
const USAGE_HEADINGS: &[&str] = &["name", "synopsis"];

fn is_usage(place: &Place) -> bool {
    place
        .path
        .last()
        .is_some_and(|h| USAGE_HEADINGS.contains(&h.trim().to_lowercase().as_str()))
}

/// `places` (best first) with each usage section (`USAGE_HEADINGS`) ranked where the
/// next place of its own file was, and that place in its stead, with the rank's score:
/// a page's synopsis matches the question's words because it lists every option, but the
/// answer is in the section that explains the option. Without another place of the file
/// among the hits, it stays.
fn after_usage(places: Vec<Place>) -> Vec<Place> {
    let scores: Vec<f64> = places.iter().map(|p| p.score).collect();
    let mut slots: Vec<Option<(Place, bool)>> =
        places.into_iter().map(|p| Some((p, false))).collect();
    let mut ranked = Vec::with_capacity(slots.len());
    for i in 0..slots.len() {
        let Some((place, moved)) = slots[i].take() else {
            continue;
        };
        let next = (i + 1..slots.len()).find(|&j| {
            slots[j]
                .as_ref()
                .is_some_and(|(p, _)| p.file == place.file && !is_usage(p))
        });
        match next.filter(|_| !moved && is_usage(&place)) {
            Some(j) => {
                let (mut other, _) = slots[j].take().expect("found above");
                other.instead_of = place.path.last().cloned();
                ranked.push(other);
                slots[j] = Some((place, true));
            }
            None => ranked.push(place),
        }
    }
    for (place, score) in ranked.iter_mut().zip(scores) {
        place.score = score;
    }
    ranked
}

/// The places within `margin` (relative) of the best: those the evidence does not tell
/// apart. One place means the evidence decides.
pub fn near_ties(places: &[Place], margin: f64, most: usize) -> &[Place] {
    let Some(best) = places.first() else {
        return places;
    };
    let n = places
        .iter()
        .take(most)
        .take_while(|p| p.score >= best.score * (1.0 - margin))
        .count();
    &places[..n]
}

#[cfg(test)]
mod tests {
    use super::super::tests::seed_tree;
    use super::*;

    fn hit(file: &str, path: &[&str], fused: f64) -> Hit {
        Hit {
            id: "c".into(),
            file: file.into(),
            section: path.last().unwrap_or(&"").to_string(),
            section_path: path.iter().map(|s| s.to_string()).collect(),
            anchor: String::new(),
            page: None,
            text: String::new(),
            score: 0.8,
            key: 0,
            cosine: 0.6,
            fused,
        }
    }

    #[test]
    fn the_section_with_the_best_evidence_wins() {
        let t = seed_tree();
        let hits = [
            hit("agno.md", &["Agno", "Tools"], 0.033),
            hit("deploy.md", &["Deployment Guide", "Security"], 0.030),
            hit("agno.md", &["Agno", "Tools"], 0.029),
            hit("deploy.md", &["Deployment Guide", "Security"], 0.028),
        ];
        let places = rank(&t, &hits);
        assert_eq!(places.len(), 2);
        assert_eq!(
            (places[0].path.as_slice(), places[0].best),
            (["Agno".to_string(), "Tools".into()].as_slice(), 0)
        );
        assert_eq!(places[1].score, 0.030);
        assert_eq!(near_ties(&places, 0.02, 3).len(), 1);
        assert_eq!(near_ties(&places, 0.1, 3).len(), 2);
        assert_eq!(near_ties(&places, 0.1, 1).len(), 1);
    }

    #[test]
    fn a_usage_section_gives_way_to_its_own_pages_next_place() {
        let place = |file: &str, heading: &str, score| Place {
            file: file.into(),
            path: vec!["tool(1) Manual Page".into(), heading.into()],
            score,
            best: 0,
            instead_of: None,
        };
        let places = after_usage(vec![
            place("tool.html", "SYNOPSIS", 0.033),
            place("tool.html", "NAME", 0.032),
            place("other.html", "OPTIONS", 0.031),
            place("tool.html", "OPTIONS", 0.030),
            place("tool.html", "EXAMPLES", 0.025),
            place("lone.html", "NAME", 0.020),
        ]);
        let order: Vec<(&str, &str, f64)> = places
            .iter()
            .map(|p| (p.file.as_str(), p.path[1].as_str(), p.score))
            .collect();
        assert_eq!(
            order,
            [
                ("tool.html", "OPTIONS", 0.033),
                ("tool.html", "EXAMPLES", 0.032),
                ("other.html", "OPTIONS", 0.031),
                ("tool.html", "SYNOPSIS", 0.030),
                ("tool.html", "NAME", 0.025),
                // No other place of its page among the hits: it stays.
                ("lone.html", "NAME", 0.020),
            ]
        );
        assert_eq!(places[0].instead_of.as_deref(), Some("SYNOPSIS"));
    }

    #[test]
    fn chunks_land_where_the_tree_reaches() {
        let t = seed_tree();
        let deep = rank(&t, &[hit("agno.md", &["Agno", "Tools", "Debugging"], 0.03)]);
        assert_eq!(deep[0].path, ["Agno", "Tools", "Debugging"]);
        let unknown = rank(&t, &[hit("agno.md", &["Agno", "Tools", "Nope"], 0.03)]);
        assert_eq!(unknown[0].path, ["Agno", "Tools"]);
        let preamble = rank(&t, &[hit("autogen.md", &[], 0.03)]);
        assert_eq!(preamble[0].path, ["Autogen"]);
        // A top section of another document under the same name cannot be reached.
        assert!(rank(&t, &[hit("other.md", &["Agno"], 0.03)]).is_empty());
    }
}
