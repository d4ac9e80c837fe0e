//! The one stopword list: words too common to say what a question is about.

/// Too common to help BM25 (and FTS5 would otherwise require or rank them).
const QUERY: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "is", "it", "me", "my", "of", "on", "or", "our", "should", "so", "that",
    "the", "there", "this", "to", "was", "we", "what", "when", "where", "which", "who", "why",
    "will", "with", "you", "your",
];

/// Also too common to count as shared content between an answer and its evidence (kept in
/// queries: "not", "no" and "use" can matter to a ranked search).
const CONTENT: &[&str] = &[
    "its", "their", "then", "these", "not", "no", "use", "used", "using", "has", "have", "been",
    "into", "than", "also", "about",
];

/// A lowercased word that search queries drop.
pub fn is_query_stopword(word: &str) -> bool {
    QUERY.contains(&word)
}

/// A lowercased word that carries no content (for overlap and grounding measures).
pub fn is_stopword(word: &str) -> bool {
    QUERY.contains(&word) || CONTENT.contains(&word)
}
