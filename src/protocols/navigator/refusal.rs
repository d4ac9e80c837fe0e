//! The navigator's two refusals (seed Patterns 4 and 5): out of domain (no sources,
//! `outOfDomain: true`) and in domain but not documented (no sources, `outOfDomain:
//! false`, an answer that says so), decided by the rules before any model runs.

use super::{NavigatorResponse, MAX_RELATED};
use crate::protocols::evidence::{Evidence, ANSWERABLE_MIN_SCORE};

/// Why nothing answers: what the explanation names.
pub enum Absence {
    /// The question names things no document mentions.
    UnknownTerms(Vec<String>),
    /// The question names things that none of the best-matching sections mentions.
    UnretrievedTerms(Vec<String>),
    /// The best retrieved passage scores too low.
    WeakMatch,
}

impl Absence {
    /// The rules' reason (before any reading).
    pub fn from_evidence(ev: &Evidence) -> Absence {
        if !ev.unknown_terms.is_empty() {
            Absence::UnknownTerms(ev.unknown_terms.clone())
        } else if !ev.unretrieved_terms.is_empty() {
            Absence::UnretrievedTerms(ev.unretrieved_terms.clone())
        } else {
            Absence::WeakMatch
        }
    }
}

/// What the KB covers, for the refusal text.
fn about(ev: &Evidence) -> String {
    if ev.domain.description.is_empty() {
        ev.domain.name.clone()
    } else {
        ev.domain.description.clone()
    }
}

pub fn out_of_domain(ev: &Evidence) -> NavigatorResponse {
    NavigatorResponse {
        answer: format!(
            "This question is outside the domain of this knowledge base, which covers {}. \
             Consult documentation or a team that covers the topic you asked about.",
            about(ev)
        ),
        sources: Vec::new(),
        confidence: "high".into(),
        confidence_reason: format!(
            "Question is far from every document (best match {:.2}) and from the knowledge \
             base's topics (similarity {:.2}), so it is outside the configured domain.",
            ev.best_score, ev.domain_score
        ),
        related_topics: ev.domain.topics.iter().take(3).cloned().collect(),
        out_of_domain: true,
    }
}

/// `out_of_domain` decided after reading: the passages found matched the question's
/// words, but they supported nothing the reader wrote from them.
pub fn out_of_domain_after_reading(ev: &Evidence) -> NavigatorResponse {
    let lacks = match crate::protocols::gap::list(&ev.unmentioned_terms("")) {
        Some(named) => format!(" and do not mention {named}"),
        None => String::new(),
    };
    NavigatorResponse {
        confidence_reason: format!(
            "The closest passages (best match {:.2}) support nothing an answer could \
             say{lacks}, and the question is far from the knowledge base's topics (similarity {:.2}), \
             so it is outside the configured domain.",
            ev.best_score, ev.domain_score
        ),
        ..out_of_domain(ev)
    }
}

pub fn not_documented(ev: &Evidence, why: &Absence) -> NavigatorResponse {
    let mut related: Vec<String> = Vec::new();
    for h in &ev.hits {
        if !related.contains(&h.section) {
            related.push(h.section.clone());
        }
    }
    related.truncate(MAX_RELATED);
    let about = about(ev);
    let (answer, reason) = match why {
        Absence::UnknownTerms(terms) => (
            format!(
                "I don't have information about {} in the knowledge base. It covers {about}.",
                terms.join(", ")
            ),
            format!(
                "Searched the whole knowledge base: no document mentions {}. High confidence \
                 in the absence of information.",
                terms.join(", ")
            ),
        ),
        Absence::UnretrievedTerms(terms) => (
            format!(
                "I don't have information about this for {} in the knowledge base. It covers \
                 {about}, but the sections closest to the question do not mention {}.",
                terms.join(", "),
                terms.join(", ")
            ),
            format!(
                "Searched the whole knowledge base: the sections that best match the question \
                 (best {:.2}) never mention {}. High confidence in the absence of information.",
                ev.best_score,
                terms.join(", ")
            ),
        ),
        Absence::WeakMatch => (
            format!(
                "I don't have information about this in the knowledge base. It covers \
                 {about}, but no section answers this question."
            ),
            format!(
                "Searched the whole knowledge base: the closest passage scored {:.2}, below \
                 the {ANSWERABLE_MIN_SCORE:.2} needed to support an answer. High confidence \
                 in the absence of information.",
                ev.best_score
            ),
        ),
    };
    NavigatorResponse {
        answer,
        sources: Vec::new(),
        confidence: "high".into(),
        confidence_reason: reason,
        related_topics: related,
        out_of_domain: false,
    }
}
