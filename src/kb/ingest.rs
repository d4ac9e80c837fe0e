//! Incremental ingest: walk the given folders, hash each supported file, and parse, chunk
//! and embed only new or changed ones; documents whose files are gone are removed from
//! both stores. A file that cannot be read or parsed is skipped with its reason; nothing
//! already stored is lost because of it.

use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::chunk::{chunk_spans, ChunkParams};
use super::parse::{self, DocKind, ParsedDoc};
use super::store::{embed_text, NewChunk};
use super::KnowledgeBase;

/// Bump when parsing or chunking changes what is stored for the same file.
pub const PARSER_VERSION: u32 = 2;

#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub chunk: ChunkParams,
    pub max_file_bytes: u64,
    /// Write the vector index after this many changed documents (a crash loses at most
    /// this much embedding work; the consistency check redoes it).
    pub checkpoint_every: usize,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            chunk: ChunkParams::default(),
            max_file_bytes: parse::DEFAULT_MAX_FILE_BYTES,
            checkpoint_every: 16,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestReport {
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
    /// (file, reason)
    pub skipped: Vec<(String, String)>,
    pub chunks_embedded: usize,
    pub seconds: f64,
}

/// Progress events for a progress bar.
pub enum IngestEvent<'a> {
    /// The number of candidate files found.
    Found(usize),
    /// One file done (whether embedded, unchanged or skipped), with chunks embedded.
    File { path: &'a str, chunks: usize },
}

/// A file to consider, with its path relative to the ingested root.
struct Candidate {
    abs: PathBuf,
    rel: String,
}

fn candidates(root: &Path) -> Vec<Candidate> {
    if root.is_file() {
        let rel = root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        return vec![Candidate {
            abs: root.to_path_buf(),
            rel,
        }];
    }
    let mut out: Vec<Candidate> = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter(|e| DocKind::from_path(e.path()).is_some())
        .filter_map(|e| {
            let rel = e.path().strip_prefix(root).ok()?;
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            Some(Candidate {
                abs: e.path().to_path_buf(),
                rel,
            })
        })
        .collect();
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// The root a file is recorded under: the ingested folder (canonical), or for a single
/// file its parent folder.
fn root_key(root: &Path) -> Result<String> {
    let canon = root
        .canonicalize()
        .with_context(|| format!("cannot read {}", root.display()))?;
    let dir = if canon.is_file() {
        canon.parent().map(Path::to_path_buf).unwrap_or(canon)
    } else {
        canon
    };
    Ok(dir.to_string_lossy().to_string())
}

/// Chunk ids: `pdfpage_{page}_chunk_{i}` for PDFs (i counts chunks within the page, as the
/// RAG format specifies), `{anchor}_chunk_{i}` otherwise (i counts within the section).
/// Both depend only on the document's own content, so they are stable across re-ingest.
pub fn make_chunks(
    doc: &ParsedDoc,
    tok: &tokenizers::Tokenizer,
    params: ChunkParams,
) -> Result<Vec<NewChunk>> {
    let mut chunks = Vec::new();
    let mut per_page: std::collections::HashMap<u32, usize> = Default::default();
    for (si, s) in doc.sections.iter().enumerate() {
        for (i, span) in chunk_spans(tok, &s.text, params)?.into_iter().enumerate() {
            let chunk_id = match (doc.kind, s.page) {
                (DocKind::Pdf, Some(page)) => {
                    let n = per_page.entry(page).or_insert(0);
                    *n += 1;
                    format!("pdfpage_{page}_chunk_{}", *n - 1)
                }
                _ => format!("{}_chunk_{i}", s.anchor),
            };
            chunks.push(NewChunk {
                section: si,
                chunk_id,
                page: s.page,
                start: span.start,
                end: span.end,
                text: s.text[span.start..span.end].to_string(),
            });
        }
    }
    Ok(chunks)
}

pub fn ingest(
    kb: &mut KnowledgeBase,
    roots: &[PathBuf],
    opts: &IngestOptions,
    on_event: &mut dyn FnMut(IngestEvent),
) -> Result<IngestReport> {
    // Checked before anything is written, so a typo does not look like a deleted folder.
    for root in roots {
        if !root.exists() {
            anyhow::bail!("{}: no such file or folder", root.display());
        }
    }
    let start = Instant::now();
    let mut report = IngestReport::default();
    let tok = kb.embedder.counting_tokenizer();
    let mut since_checkpoint = 0;
    for root in roots {
        let key = root_key(root)?;
        let files = candidates(root);
        on_event(IngestEvent::Found(files.len()));
        let mut seen = std::collections::HashSet::new();
        for c in &files {
            seen.insert(c.rel.clone());
            let chunks = match ingest_file(kb, &key, c, &tok, opts, &mut report) {
                Ok(n) => n,
                Err(e) => {
                    report.skipped.push((c.rel.clone(), format!("{e:#}")));
                    0
                }
            };
            if chunks > 0 {
                since_checkpoint += 1;
                if since_checkpoint >= opts.checkpoint_every {
                    kb.store.save_index()?;
                    since_checkpoint = 0;
                }
            }
            on_event(IngestEvent::File {
                path: &c.rel,
                chunks,
            });
        }
        // Only a folder's walk says what was deleted; a single file root says nothing
        // about its siblings.
        if Path::new(root).is_dir() {
            for doc in kb.store.documents_under(&key)? {
                if !seen.contains(&doc.path) {
                    kb.store.remove_document(&key, &doc.path)?;
                    report.removed.push(doc.path);
                }
            }
        }
    }
    kb.store.save_index()?;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// Returns the number of chunks embedded (0 when unchanged).
fn ingest_file(
    kb: &mut KnowledgeBase,
    root: &str,
    c: &Candidate,
    tok: &tokenizers::Tokenizer,
    opts: &IngestOptions,
    report: &mut IngestReport,
) -> Result<usize> {
    let meta = std::fs::metadata(&c.abs).context("cannot read")?;
    if meta.len() > opts.max_file_bytes {
        anyhow::bail!(
            "too large ({} MB > {} MB limit)",
            meta.len() / 1_000_000,
            opts.max_file_bytes / 1_000_000
        );
    }
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let existing = kb.store.document(root, &c.rel)?;
    let bytes = std::fs::read(&c.abs).context("cannot read")?;
    // The parser version is part of the hash, so a parser change re-ingests everything.
    let mut hasher = Sha256::new();
    hasher.update(PARSER_VERSION.to_le_bytes());
    hasher.update(&bytes);
    let hash = format!("{:x}", hasher.finalize());
    if let Some(doc) = &existing {
        if doc.hash == hash {
            if doc.mtime_ns != mtime_ns {
                kb.store.touch(doc.id, mtime_ns)?;
            }
            report.unchanged += 1;
            return Ok(0);
        }
    }
    let parsed = parse::parse(&c.abs, &bytes)?;
    let chunks = make_chunks(&parsed, tok, opts.chunk)?;
    let texts: Vec<String> = chunks
        .iter()
        .map(|ch| embed_text(&parsed.sections[ch.section].path, &ch.text))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Embed before writing anything, so a failure leaves the old version in place.
    let vectors = kb.embedder.embed(&refs)?;
    let keys = kb.store.replace_document(
        root,
        &c.rel,
        parsed.kind,
        &parsed.title,
        &hash,
        mtime_ns,
        bytes.len() as i64,
        &parsed.sections,
        &chunks,
    )?;
    kb.store.add_vectors(&keys, &vectors)?;
    if existing.is_some() {
        report.changed.push(c.rel.clone());
    } else {
        report.added.push(c.rel.clone());
    }
    report.chunks_embedded += chunks.len();
    Ok(chunks.len())
}
