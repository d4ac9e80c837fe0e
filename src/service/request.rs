//! The requests the service answers, typed. Shells build them from their own inputs (the
//! server from a route plus query and JSON body, the desktop from an `invoke` payload);
//! `op` names the request.

use serde::Deserialize;
use serde_json::Value;

use crate::kb::search::SearchMode;
use crate::protocols::{AnswerFormat, AnswerMode};

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Versions, models and counters.
    Health,
    /// The knowledge base's statistics and documents.
    Kb,
    /// One document as HTML with anchored headings (the Reader).
    Document {
        path: String,
    },
    /// The knowledge bases (the open one with its live-folder status).
    Kbs,
    /// The models of the store, with the ones in use.
    Models,
    /// Answers with another LLM of the store from here on.
    UseModel {
        name: String,
    },
    /// Copies a model file (GGUF) or folder (BERT) into the store, verified.
    ImportModel {
        path: String,
        #[serde(default)]
        name: Option<String>,
    },
    /// Makes a new, empty knowledge base in the KB home.
    CreateKb {
        name: String,
    },
    /// Opens another knowledge base in place of the current one.
    SwitchKb {
        name: String,
    },
    RenameKb {
        name: String,
        to: String,
    },
    /// Moves a knowledge base (not the open one) out of the list, keeping its files.
    RemoveKb {
        name: String,
    },
    /// Turns following the open knowledge base's folders on or off.
    WatchKb {
        on: bool,
    },
    /// Writes the sample knowledge base's documents out and returns their folder, for a
    /// first run to ingest.
    SampleKb,
    /// A PDF document's own bytes (base64), for the Reader to show its pages; refused when
    /// the file changed since it was ingested, as the cited pages may have moved.
    DocumentFile {
        path: String,
    },
    /// Removes a document from the knowledge base; ingests of its folder leave it out
    /// until it is re-indexed.
    RemoveDocument {
        path: String,
    },
    /// Reads, parses and embeds a document again (restoring a removed one).
    ReindexDocument {
        path: String,
    },
    /// A document's text with its structure: the section at `anchor` (with its
    /// subsections), the sections on `page`, or the whole document.
    Section {
        path: String,
        #[serde(default)]
        anchor: Option<String>,
        /// A number, or its digits (a query string's value).
        #[serde(default, deserialize_with = "page_number")]
        page: Option<u32>,
    },
    /// The `navigate_to_section` tool definition over the knowledge base's headings.
    SectionTool,
    /// Follows a `navigate_to_section` call (its arguments) to the section, read.
    FollowSection {
        arguments: Value,
    },
    Search {
        query: String,
        #[serde(default)]
        k: Option<usize>,
        /// hybrid (the default), dense or bm25.
        #[serde(default)]
        mode: Option<SearchMode>,
    },
    Ask(AskParams),
    /// The navigate_to_section call for a question.
    Navigate {
        question: String,
    },
    Route {
        forensics: Value,
        /// A flow's name: the built-in example ("build") or a file in the flows folder.
        #[serde(default)]
        flow: Option<String>,
    },
    /// A flow's decision log.
    RouteLog {
        flow: String,
    },
    /// The open KB's conversations, the last updated first.
    Conversations,
    /// One conversation with its turns.
    Conversation {
        id: String,
    },
    RenameConversation {
        id: String,
        title: String,
    },
    /// Marks a conversation deleted (its turns are kept).
    DeleteConversation {
        id: String,
    },
    RestoreConversation {
        id: String,
    },
    /// A conversation as Markdown, its citations as links.
    ExportConversation {
        id: String,
    },
    /// Starts (no session) or continues an interview.
    Interview {
        #[serde(default)]
        session: Option<String>,
        #[serde(default)]
        answer: Option<String>,
    },
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AskParams {
    pub question: String,
    #[serde(default)]
    pub format: Option<AnswerFormat>,
    #[serde(default)]
    pub mode: Option<AnswerMode>,
    #[serde(default)]
    pub k: Option<usize>,
    /// A conversation to continue (its id), or "new" to start one: the question is read
    /// with the conversation's earlier turns, and the answer kept as its next turn.
    #[serde(default)]
    pub conversation: Option<String>,
    /// Earlier questions of a conversation the client keeps itself, oldest first (an
    /// OpenAI message list, an MCP agent's turns).
    #[serde(default)]
    pub history: Vec<String>,
}

fn page_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    use serde::de::Error;
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| D::Error::custom("page must be a positive integer")),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("page {s:?} is not a number"))),
        Some(_) => Err(D::Error::custom("page must be a positive integer")),
    }
}

impl Request {
    /// A request from its JSON form (`{"op": "search", "query": …}`), with an error that
    /// names the field.
    pub fn from_json(v: Value) -> Result<Request, super::ServiceError> {
        serde_json::from_value(v)
            .map_err(|e| super::ServiceError::BadRequest(format!("invalid request: {e}")))
    }
}
