//! What an interviewer's turn must not do, checked by rule: write a template placeholder,
//! speak as the interviewee ("I'm …, and I've been working on a payments platform for ten
//! years"), or note something as an insight that the person never said. The session
//! retries a turn that fails; `sextant bench interview --personas` counts them.

use std::collections::HashSet;

use crate::protocols::support::stems_of;

/// Phrases a template leaves behind.
const PLACEHOLDERS: &[&str] = &[
    "insert ",
    "your name here",
    "[name",
    "(name)",
    "<name",
    "xxx",
    "lorem ipsum",
    "placeholder",
];

/// Whether the response carries a template placeholder (brackets included).
pub fn has_placeholder(response: &str) -> bool {
    let r = response.to_lowercase();
    r.contains(['[', ']', '{', '}', '<', '>']) || PLACEHOLDERS.iter().any(|p| r.contains(p))
}

/// The response's sentences, cut at . ! ? (enough for short spoken turns).
fn sentences(text: &str) -> Vec<&str> {
    text.split_inclusive(['.', '!', '?'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn words(sentence: &str) -> Vec<String> {
    sentence
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('’', "'"))
        .collect()
}

const FIRST_PERSON: &[&str] = &["i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine"];
const SECOND_PERSON: &[&str] = &["you", "you're", "you've", "you'd", "your", "yours"];

/// Content stems of all the person's answers.
fn answer_stems(answers: &[String]) -> HashSet<String> {
    answers.iter().flat_map(|a| stems_of(a)).collect()
}

/// Whether the interviewer speaks as the person: a first-person sentence that does not
/// address them ("you") and repeats at least three of the things they said.
pub fn speaks_as_the_person(response: &str, answers: &[String]) -> bool {
    let said = answer_stems(answers);
    sentences(response).into_iter().any(|s| {
        let w = words(s);
        let first = w.iter().any(|x| FIRST_PERSON.contains(&x.as_str()));
        let second = w.iter().any(|x| SECOND_PERSON.contains(&x.as_str()));
        first && !second && stems_of(s).intersection(&said).count() >= 3
    })
}

/// Whether the question (the sentence with the '?') is put to the person ("you", "your").
pub fn addressed_to_the_person(response: &str) -> bool {
    sentences(response)
        .into_iter()
        .filter(|s| s.ends_with('?'))
        .any(|s| words(s).iter().any(|x| SECOND_PERSON.contains(&x.as_str())))
}

/// Whether the question (the sentence with the '?') is about the interviewer: it holds
/// "I", "I'm", "I've" or "my" ("How can I assist with …?"). "me" is allowed: "Could you
/// walk me through it?" is an interviewer's phrase.
pub fn asks_about_itself(response: &str) -> bool {
    sentences(response)
        .into_iter()
        .filter(|s| s.ends_with('?'))
        .any(|s| {
            words(s)
                .iter()
                .any(|x| matches!(x.as_str(), "i" | "i'm" | "i've" | "i'd" | "my"))
        })
}

/// Whether an insight holds something the person said (a content word of their answers),
/// rather than the interviewer's own stage notes ("Follow-up on same topic").
pub fn insight_from_answers(insight: &str, answers: &[String]) -> bool {
    let said = answer_stems(answers);
    stems_of(insight).iter().any(|s| said.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers() -> Vec<String> {
        vec!["I run the on-call rotation for a payments platform, ten years now.".into()]
    }

    #[test]
    fn placeholders_are_found() {
        assert!(has_placeholder(
            "Hi, I'm [insert your name here]. What do you do?"
        ));
        assert!(has_placeholder("Hello Insert Name, what do you do?"));
        assert!(!has_placeholder(
            "Hello, what does your on-call week look like?"
        ));
    }

    #[test]
    fn the_interviewer_speaking_as_the_person_is_found() {
        let a = answers();
        assert!(speaks_as_the_person(
            "I'm Sam, and I've been running the on-call rotation for a payments platform for ten years now. What is next?",
            &a
        ));
        // About the person, to the person: fine.
        assert!(!speaks_as_the_person(
            "Ten years on a payments platform is a long time. What does your rotation look like?",
            &a
        ));
        assert!(!speaks_as_the_person(
            "I'd love to hear more. How do you run the payments rotation?",
            &a
        ));
    }

    #[test]
    fn a_question_about_the_interviewer_is_found() {
        assert!(asks_about_itself(
            "Thank you. How can I assist with translating manuals, you ask?"
        ));
        assert!(!asks_about_itself(
            "I see. Could you walk me through your last incident?"
        ));
    }

    #[test]
    fn questions_to_the_person_and_insights_from_their_answers() {
        assert!(addressed_to_the_person(
            "Thanks. How do you plan your week?"
        ));
        assert!(!addressed_to_the_person("Thanks. What is the plan?"));
        let a = answers();
        assert!(insight_from_answers("Runs payments on-call rotation", &a));
        assert!(!insight_from_answers("Follow-up on same topic", &a));
    }
}
