//! The MCP tools: their definitions (input schemas are what the service enforces: serde
//! for the fixed ones, the heading tree's schema for `navigate_to_section`) and the
//! service request each call becomes.

use serde_json::{json, Map, Value};
use sextant::constrain::validate::SchemaValidator;
use sextant::schemas::SchemaId;
use sextant::service::{AskParams, Request, Service, ServiceError};

/// Most documents `read_section` lists by name in its schema.
const FILE_ENUM_MAX: usize = 500;

/// A tool as MCP lists it: name, description, input schema, output schema if fixed.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: String,
    pub input: Value,
    pub output: Option<Value>,
}

fn hit_schema() -> Value {
    json!({
        "type": "object",
        "required": ["id", "file", "section", "anchor", "text", "score"],
        "properties": {
            "id": {"type": "string", "description": "Chunk id (what a rag answer's retrieved_chunks cite)"},
            "file": {"type": "string"},
            "section": {"type": "string"},
            "section_path": {"type": "array", "items": {"type": "string"}},
            "anchor": {"type": "string", "description": "The section's anchor: read_section(file, anchor)"},
            "page": {"type": ["integer", "null"]},
            "text": {"type": "string"},
            "score": {"type": "number"}
        }
    })
}

fn section_schema() -> Value {
    json!({
        "type": "object",
        "required": ["file", "title", "heading", "outline", "text"],
        "properties": {
            "file": {"type": "string"},
            "title": {"type": "string"},
            "format": {"type": "string"},
            "heading": {"type": "string"},
            "section_path": {"type": "array", "items": {"type": "string"}},
            "anchor": {"type": ["string", "null"]},
            "page": {"type": ["integer", "null"]},
            "outline": {"type": "array", "items": {"type": "object"}},
            "text": {"type": "string", "description": "The section as markdown: headings, then their text"}
        }
    })
}

/// The `ask` tool's description: the fields of each answer format, read from the seed
/// schemas it returns, so an agent is never told a field that does not exist.
fn ask_description() -> String {
    format!(
        "Answer a question from the documentation only, with citations. Returns the answer \
         object of the chosen format. rag (the default): {}; navigator: {}. Says so when the \
         documents do not cover the question.",
        schema_fields(SchemaId::RagResponse),
        schema_fields(SchemaId::NavigatorResponse)
    )
}

/// A schema's top-level properties, each array of objects with its items' properties:
/// "final_answer, retrieved_chunks (id, page, text, score), confidence".
fn schema_fields(id: SchemaId) -> String {
    let schema = id.builtin().schema();
    let names = |props: &Value| -> Vec<String> {
        props
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, def)| match def["items"]["properties"].as_object() {
                Some(items) => {
                    let inner: Vec<&str> = items.keys().map(String::as_str).collect();
                    format!("{name} ({})", inner.join(", "))
                }
                None => name.clone(),
            })
            .collect()
    };
    names(&schema["properties"]).join(", ")
}

/// Every tool over `svc`'s knowledge base. `navigate_to_section` is built from the KB's
/// headings now, so its enums name only sections that exist; it is left out while the KB
/// has none.
pub fn list(svc: &Service) -> Result<Vec<ToolSpec>, ServiceError> {
    let documents: Vec<String> = svc.handle(Request::Kb)?["documents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["path"].as_str().map(str::to_string))
        .collect();
    // Listed as an enum while that stays a readable size; unknown files are refused by the
    // service either way.
    let mut file =
        json!({"type": "string", "description": "The document's path in the knowledge base"});
    if !documents.is_empty() && documents.len() <= FILE_ENUM_MAX {
        file["enum"] = json!(documents);
    }
    let mut tools = vec![
        ToolSpec {
            name: "search",
            description: "Search the documentation (hybrid: embeddings and BM25). Returns the best passages with their file, section, anchor, page, chunk id and score.".into(),
            input: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["query"],
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "What to look for"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5, "description": "How many passages"},
                    "mode": {"type": "string", "enum": ["hybrid", "dense", "bm25"], "default": "hybrid", "description": "hybrid (default); bm25 for exact names, flags and error messages; dense for meaning"}
                }
            }),
            output: Some(json!({
                "type": "object", "required": ["hits"],
                "properties": {"hits": {"type": "array", "items": hit_schema()}}
            })),
        },
        ToolSpec {
            name: "ask",
            description: ask_description(),
            input: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["question"],
                "properties": {
                    "question": {"type": "string", "minLength": 1},
                    "format": {"type": "string", "enum": ["rag", "navigator"], "default": "rag"},
                    "mode": {"type": "string", "enum": ["reader", "extractive", "grounded", "llm"],
                             "description": "How the answer text is made (default: reader when the LLM is installed, else extractive)"},
                    "history": {"type": "array", "items": {"type": "string"}, "maxItems": 20,
                                "description": "Earlier questions of this conversation, oldest first: a follow-up such as 'and how do I undo that?' is read with them"}
                }
            }),
            output: None,
        },
        ToolSpec {
            name: "read_section",
            description: "Read a document of the knowledge base: one section (by anchor, with its subsections), one PDF page, or the whole document, as markdown with its outline.".into(),
            input: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["file"],
                "properties": {
                    "file": file,
                    "anchor": {"type": "string", "description": "A section's anchor (from search hits or the outline)"},
                    "page": {"type": "integer", "minimum": 1, "description": "A PDF page"}
                }
            }),
            output: Some(section_schema()),
        },
    ];
    let nav = svc.handle(Request::SectionTool)?;
    let function = &nav["tool"]["function"];
    let has_sections = function["parameters"]["properties"]["section"]["enum"]
        .as_array()
        .is_some_and(|e| !e.is_empty());
    if has_sections {
        tools.push(ToolSpec {
            name: "navigate_to_section",
            description: function["description"].as_str().unwrap_or_default().into(),
            input: function["parameters"].clone(),
            output: Some(section_schema()),
        });
    }
    Ok(tools)
}

/// A call: the tool's name and arguments, run against the service.
pub fn call(svc: &Service, name: &str, args: Map<String, Value>) -> Result<Value, ServiceError> {
    let args = Value::Object(args);
    // An agent would read no hits as "not documented": an empty KB says so instead.
    svc.require_chunks()?;
    // The arguments are checked against the schema the tool was listed with, so a client
    // gets the same answer whichever tool it calls wrongly.
    if let Some(spec) = list(svc)?.into_iter().find(|t| t.name == name) {
        SchemaValidator::new(&spec.input)?
            .validate(&args)
            .map_err(|e| {
                ServiceError::BadRequest(format!("{name} arguments: {}", e.errors.join("; ")))
            })?;
    }
    let request = match name {
        "search" => Request::Search {
            query: string(&args, "query")?,
            k: optional_number(&args, "k")?,
            mode: serde_json::from_value(args["mode"].clone())
                .map_err(|e| ServiceError::BadRequest(format!("search mode: {e}")))?,
        },
        "ask" => Request::Ask(
            serde_json::from_value::<AskParams>(args)
                .map_err(|e| ServiceError::BadRequest(format!("ask arguments: {e}")))?,
        ),
        "read_section" => Request::Section {
            path: string(&args, "file")?,
            anchor: args["anchor"].as_str().map(str::to_string),
            page: optional_number(&args, "page")?.map(|p| p as u32),
        },
        "navigate_to_section" => Request::FollowSection { arguments: args },
        other => {
            return Err(ServiceError::NotFound(format!(
                "no tool {other:?}: the tools are search, ask, read_section, navigate_to_section"
            )))
        }
    };
    let out = svc.handle(request)?;
    // An ask answers with the seed object itself; citations and the decision are the
    // UI's, not part of the format.
    Ok(if name == "ask" {
        out["response"].clone()
    } else {
        out
    })
}

fn string(args: &Value, field: &str) -> Result<String, ServiceError> {
    args[field]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ServiceError::BadRequest(format!("missing argument: {field} (a string)")))
}

fn optional_number(args: &Value, field: &str) -> Result<Option<usize>, ServiceError> {
    match &args[field] {
        Value::Null => Ok(None),
        v => v
            .as_u64()
            .filter(|n| *n >= 1)
            .map(|n| Some(n as usize))
            .ok_or_else(|| {
                ServiceError::BadRequest(format!("argument {field}: a positive integer"))
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every identifier-like word of the description (snake_case or camelCase) is a field
    /// of one of the two answer schemas: the drift this replaced told agents about
    /// `source_documents` and `suggested_next_steps`, which neither format has.
    #[test]
    fn the_ask_description_names_only_fields_the_schemas_have() {
        let description = ask_description();
        let mut fields = Vec::new();
        for id in [SchemaId::RagResponse, SchemaId::NavigatorResponse] {
            let text = id.builtin().json;
            let v: Value = serde_json::from_str(text).unwrap();
            collect_properties(&v, &mut fields);
        }
        for word in description.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let identifier = word.contains('_')
                || (word.chars().skip(1).any(|c| c.is_ascii_uppercase())
                    && word.starts_with(|c: char| c.is_ascii_lowercase()));
            if identifier {
                assert!(fields.iter().any(|f| f == word), "{word} in {description}");
            }
        }
        for field in [
            "final_answer",
            "retrieved_chunks",
            "confidenceReason",
            "outOfDomain",
        ] {
            assert!(
                description.contains(field),
                "{field} missing: {description}"
            );
        }
    }

    fn collect_properties(v: &Value, out: &mut Vec<String>) {
        if let Some(props) = v["properties"].as_object() {
            for (name, def) in props {
                out.push(name.clone());
                collect_properties(def, out);
                collect_properties(&def["items"], out);
            }
        }
    }
}
