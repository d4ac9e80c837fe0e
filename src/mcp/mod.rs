//! `sextant mcp`: the Model Context Protocol shell over `sextant::service`, on stdio (the
//! official Rust SDK, `rmcp`). Tools: `search`, `ask`, `read_section` and
//! `navigate_to_section` (its enums are the KB's real headings, rebuilt at each listing);
//! resources: each document as `sextant://kb/<file>`, a section as
//! `sextant://kb/<file>#<anchor>`. Like the HTTP server it only parses, calls the service
//! off the async threads, and serialises; stdout carries nothing but the protocol.
//!
//! A failed tool call (unknown file, empty KB, bad arguments) is a tool result with
//! `isError`, which the calling model can read; protocol errors are kept for requests
//! that cannot be routed at all.

mod tools;

use std::sync::Arc;

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::Value;
use sextant::service::{Request, Service, ServiceError};

/// Resource URIs: `sextant://kb/<file>` and `sextant://kb/<file>#<anchor>`.
const URI_PREFIX: &str = "sextant://kb/";

/// What is escaped in a file path or anchor inside a resource URI (`/` stays readable).
const URI_ESCAPES: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

pub struct KbServer {
    svc: Arc<Service>,
}

/// Serves `svc` over stdin/stdout until the client closes the stream.
pub async fn serve_stdio(svc: Arc<Service>) -> anyhow::Result<()> {
    let running = KbServer { svc }
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("MCP handshake failed: {e}"))?;
    running.waiting().await?;
    Ok(())
}

/// Runs `f` on the blocking pool: the service does SQLite reads and model work.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(ServiceError::Internal(anyhow::anyhow!("task failed: {e}"))))
}

fn object(v: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(match v {
        Value::Object(o) => o,
        _ => serde_json::Map::new(),
    })
}

pub fn resource_uri(file: &str, anchor: Option<&str>) -> String {
    let mut uri = format!("{URI_PREFIX}{}", utf8_percent_encode(file, URI_ESCAPES));
    if let Some(a) = anchor {
        uri.push('#');
        uri.push_str(&utf8_percent_encode(a, URI_ESCAPES).to_string());
    }
    uri
}

/// A resource URI's file and anchor, decoded; `None` when it is not one of ours.
pub fn parse_resource_uri(uri: &str) -> Option<(String, Option<String>)> {
    let rest = uri.strip_prefix(URI_PREFIX)?;
    let (file, anchor) = match rest.split_once('#') {
        Some((f, a)) => (f, Some(a)),
        None => (rest, None),
    };
    let decode = |s: &str| {
        percent_decode_str(s)
            .decode_utf8()
            .ok()
            .map(|c| c.into_owned())
    };
    let file = decode(file).filter(|f| !f.is_empty())?;
    let anchor = match anchor.filter(|a| !a.is_empty()) {
        Some(a) => Some(decode(a)?),
        None => None,
    };
    Some((file, anchor))
}

impl ServerHandler for KbServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("sextant", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Offline answers from the user's own documentation. Use `search` to find \
             passages, `ask` for a cited answer (it says when the documents do not cover a \
             question), `read_section` or `navigate_to_section` to read a section in full.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let svc = self.svc.clone();
        let specs = blocking(move || tools::list(&svc))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let tools = specs
            .into_iter()
            .map(|t| {
                let tool = Tool::new(t.name, t.description, object(t.input));
                match t.output {
                    Some(o) => tool.with_raw_output_schema(object(o)),
                    None => tool,
                }
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let svc = self.svc.clone();
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let result = match blocking(move || tools::call(&svc, &name, args)).await {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => {
                CallToolResult::error(vec![ContentBlock::text(format!("{} ({})", e, e.code()))])
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let svc = self.svc.clone();
        let kb = blocking(move || svc.handle(Request::Kb))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let resources = kb["documents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| {
                let path = d["path"].as_str()?;
                Some(
                    Resource::new(resource_uri(path, None), path)
                        .with_title(d["title"].as_str().unwrap_or(path))
                        .with_description(format!(
                            "{} document, {} chunks",
                            d["format"].as_str().unwrap_or("text"),
                            d["chunks"]
                        ))
                        .with_mime_type("text/markdown"),
                )
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(format!("{URI_PREFIX}{{file}}#{{anchor}}"), "section")
                .with_description(
                    "One section of a document, with its subsections (anchors come from \
                     search hits and read_section outlines)",
                )
                .with_mime_type("text/markdown"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some((path, anchor)) = parse_resource_uri(&uri) else {
            return Err(ErrorData::resource_not_found(
                format!("{uri:?} is not a Sextant resource: use {URI_PREFIX}<file> or {URI_PREFIX}<file>#<anchor>"),
                None,
            ));
        };
        let svc = self.svc.clone();
        let section = blocking(move || {
            svc.handle(Request::Section {
                path,
                anchor,
                page: None,
            })
        })
        .await
        .map_err(|e| match e {
            ServiceError::NotFound(m) => ErrorData::resource_not_found(m, None),
            other => ErrorData::internal_error(other.to_string(), None),
        })?;
        let text = section["text"].as_str().unwrap_or_default().to_string();
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/markdown")
        ])
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris_round_trip_paths_with_spaces_and_anchors() {
        for (file, anchor) in [
            ("runbooks/deploy.md", Some("rolling-back")),
            ("On call #2 (draft).md", Some("what to do?")),
            ("guide.pdf", None),
        ] {
            let uri = resource_uri(file, anchor);
            assert!(uri.starts_with(URI_PREFIX), "{uri}");
            assert_eq!(uri.matches('#').count(), anchor.is_some() as usize, "{uri}");
            assert_eq!(
                parse_resource_uri(&uri),
                Some((file.to_string(), anchor.map(str::to_string)))
            );
        }
        assert_eq!(parse_resource_uri("file:///etc/passwd"), None);
        assert_eq!(parse_resource_uri("sextant://kb/"), None);
    }
}
