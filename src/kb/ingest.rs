//! Incremental ingest: walk the given folders, hash each supported file, and parse, chunk
//! and embed only new or changed ones; documents whose files are gone are removed from
//! both stores. A file that cannot be read or parsed is skipped with its reason; nothing
//! already stored is lost because of it.

use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

use tokenizers::Tokenizer;

use super::chunk::{chunk_spans, ChunkParams};
use super::lock::WriterLock;
use super::parse::{self, DocKind, ParsedDoc};
use super::store::{embed_text, NewChunk};
use super::KnowledgeBase;
use crate::embed::Embedder;

/// Bump when parsing or chunking changes what is stored for the same file.
pub const PARSER_VERSION: u32 = 3;

#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub chunk: ChunkParams,
    pub max_file_bytes: u64,
    /// Write the vector index after this many changed documents (a crash loses at most
    /// this much embedding work; the consistency check redoes it).
    pub checkpoint_every: usize,
    /// Parse each file in a worker process (shells set this; see `parse::worker`). Without
    /// it, parsing runs in this process, where a panic is caught but a stack overflow or
    /// an endless loop in a parser would stop the whole ingest.
    pub isolation: Option<parse::worker::Isolation>,
    /// Also read image files, with OCR. Off by default: documentation folders hold many
    /// diagrams and screenshots, and OCR takes seconds per image. An ingest without it
    /// keeps the images an earlier one read.
    pub images: bool,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            chunk: ChunkParams::default(),
            max_file_bytes: parse::DEFAULT_MAX_FILE_BYTES,
            checkpoint_every: 16,
            isolation: None,
            images: false,
        }
    }
}

impl IngestOptions {
    /// The defaults, with each file parsed in a worker run by this binary.
    pub fn isolated() -> Result<IngestOptions> {
        Ok(IngestOptions {
            isolation: Some(parse::worker::Isolation::current_exe()?),
            ..IngestOptions::default()
        })
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
    /// (file, what of it was not read and why): ingested in part, read again next time.
    pub notes: Vec<(String, String)>,
    pub chunks_embedded: usize,
    /// Files a user removed from the KB, left out (`sextant kb restore` adds one back).
    pub excluded: Vec<String>,
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
pub struct Candidate {
    abs: PathBuf,
    pub rel: String,
}

/// The documents under `root`, and the entries with a document's name that are not
/// regular files (links are not followed: they could lead out of the folder or in a
/// circle; a FIFO or device would block the read), each with why it is skipped.
fn candidates(root: &Path, images: bool) -> (Vec<Candidate>, Vec<(String, String)>) {
    if root.is_file() {
        let rel = root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let file = Candidate {
            abs: root.to_path_buf(),
            rel,
        };
        return (vec![file], Vec::new());
    }
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build();
    for e in walk.flatten() {
        match DocKind::from_path(e.path()) {
            None => continue,
            Some(DocKind::Image) if !images => continue,
            Some(_) => {}
        }
        let Ok(rel) = e.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        match e.file_type() {
            Some(t) if t.is_file() => out.push(Candidate {
                abs: e.path().to_path_buf(),
                rel,
            }),
            Some(t) if t.is_symlink() => skipped.push((
                rel,
                "a symbolic link; links are not followed (copy the file into the folder)"
                    .to_string(),
            )),
            Some(t) if !t.is_dir() => skipped.push((
                rel,
                "not a regular file (a FIFO, socket or device)".to_string(),
            )),
            _ => {}
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    skipped.sort();
    (out, skipped)
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

/// Ingests `roots` into `kb`, holding it throughout (the CLI's way). A caller that must
/// let others read while it ingests drives an `IngestRun` itself.
pub fn ingest(
    kb: &mut KnowledgeBase,
    roots: &[PathBuf],
    opts: &IngestOptions,
    on_event: &mut dyn FnMut(IngestEvent),
) -> Result<IngestReport> {
    let mut run = IngestRun::start(kb, roots, opts)?;
    let tok = kb.embedder.counting_tokenizer();
    on_event(IngestEvent::Found(run.files.len()));
    let indices: Vec<usize> = (0..run.files.len()).collect();
    for group in indices.chunks(PREPARE_GROUP) {
        let mut works = Vec::new();
        let mut chunks = vec![0; group.len()];
        for (slot, &i) in group.iter().enumerate() {
            if let Some(work) = run.check(kb, i) {
                works.push((slot, work));
            }
        }
        let (slots, works): (Vec<usize>, Vec<Work>) = works.into_iter().unzip();
        let prepared = Work::prepare_group(works, &kb.embedder, &tok, opts);
        for (slot, p) in slots.into_iter().zip(prepared) {
            chunks[slot] = run.commit(kb, p)?;
        }
        for (slot, &i) in group.iter().enumerate() {
            on_event(IngestEvent::File {
                path: &run.files[i].candidate.rel,
                chunks: chunks[slot],
            });
        }
    }
    run.finish(kb)
}

/// One ingest, in steps that need the KB only briefly: `check` (is the file new or
/// changed?) and `commit` (write its rows and vectors) take the KB; `Work::prepare`
/// (read, parse, chunk, embed: nearly all the time) does not. The writer lock is held from
/// `start` to `finish`.
pub struct IngestRun {
    pub files: Vec<RunFile>,
    roots: Vec<(String, bool)>,
    /// Re-read the files even when their bytes are unchanged (re-indexing one document).
    force: bool,
    /// Image files are read (see `IngestOptions::images`).
    images: bool,
    report: IngestReport,
    since_checkpoint: usize,
    checkpoint_every: usize,
    max_file_bytes: u64,
    start: Instant,
    _writer: WriterLock,
}

/// A file of the run, with the root it is recorded under.
pub struct RunFile {
    root: String,
    pub candidate: Candidate,
}

/// A new or changed file to parse and embed.
pub struct Work {
    root: String,
    rel: String,
    abs: PathBuf,
    bytes: Vec<u8>,
    hash: String,
    mtime_ns: i64,
    existed: bool,
}

/// A file parsed, chunked and embedded, ready to commit (or why it is skipped).
pub struct Prepared {
    work: Work,
    result: Result<(ParsedDoc, Vec<NewChunk>, Vec<Vec<f32>>)>,
}

impl IngestRun {
    /// Takes the writer lock and lists the files (and what is skipped as not a file).
    pub fn start(kb: &KnowledgeBase, roots: &[PathBuf], opts: &IngestOptions) -> Result<Self> {
        let writer = WriterLock::try_acquire(kb.store.dir())?;
        IngestRun::with_lock(writer, roots, opts)
    }

    /// Lists the files under a writer lock the caller took.
    pub fn with_lock(writer: WriterLock, roots: &[PathBuf], opts: &IngestOptions) -> Result<Self> {
        // Checked before anything is written, so a typo does not look like a deleted folder.
        for root in roots {
            if !root.exists() {
                anyhow::bail!("{}: no such file or folder", root.display());
            }
        }
        let mut run = IngestRun {
            files: Vec::new(),
            roots: Vec::new(),
            force: false,
            images: opts.images,
            report: IngestReport::default(),
            since_checkpoint: 0,
            checkpoint_every: opts.checkpoint_every,
            max_file_bytes: opts.max_file_bytes,
            start: Instant::now(),
            _writer: writer,
        };
        for root in roots {
            let key = root_key(root)?;
            let (files, not_files) = candidates(root, opts.images);
            run.report.skipped.extend(not_files);
            run.files.extend(files.into_iter().map(|candidate| RunFile {
                root: key.clone(),
                candidate,
            }));
            run.roots.push((key, root.is_dir()));
        }
        Ok(run)
    }

    /// A run over one stored document (`root`, `path` as the store has them) that reads it
    /// again even if unchanged, and deletes nothing else: re-indexing one document.
    pub fn for_document(
        writer: WriterLock,
        root: &str,
        path: &str,
        opts: &IngestOptions,
    ) -> Result<Self> {
        let abs = Path::new(root).join(path);
        if !abs.is_file() {
            anyhow::bail!(
                "{} is gone; ingest its folder again to drop it from the knowledge base",
                abs.display()
            );
        }
        let mut run = IngestRun::with_lock(writer, &[], opts)?;
        run.force = true;
        run.files.push(RunFile {
            root: root.to_string(),
            candidate: Candidate {
                abs,
                rel: path.to_string(),
            },
        });
        Ok(run)
    }

    /// File `i`: the work to do when it is new or changed; None when it is unchanged,
    /// removed by the user, or cannot be read (then it is in the report).
    pub fn check(&mut self, kb: &KnowledgeBase, i: usize) -> Option<Work> {
        let RunFile { root, candidate } = &self.files[i];
        match kb.store.is_excluded(root, &candidate.rel) {
            Ok(true) if !self.force => {
                self.report.excluded.push(candidate.rel.clone());
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.report
                    .skipped
                    .push((candidate.rel.clone(), format!("{e:#}")));
                return None;
            }
        }
        match check_file(kb, root, candidate, self.max_file_bytes, self.force) {
            Ok(Some(work)) => Some(work),
            Ok(None) => {
                self.report.unchanged += 1;
                None
            }
            Err(e) => {
                self.report
                    .skipped
                    .push((candidate.rel.clone(), format!("{e:#}")));
                None
            }
        }
    }

    /// Writes a prepared file (or records why it was skipped); returns its chunk count.
    pub fn commit(&mut self, kb: &mut KnowledgeBase, prepared: Prepared) -> Result<usize> {
        let Prepared { work, result } = prepared;
        let (parsed, chunks, vectors) = match result {
            Ok(r) => r,
            Err(e) => {
                self.report.skipped.push((work.rel, format!("{e:#}")));
                return Ok(0);
            }
        };
        // A file read only in part (scanned pages without OCR) is stored under a hash no
        // file has, so the next ingest reads it again: installing Tesseract is enough.
        let hash = if parsed.notes.is_empty() {
            work.hash.clone()
        } else {
            format!("{}-incomplete", work.hash)
        };
        for note in &parsed.notes {
            self.report.notes.push((work.rel.clone(), note.clone()));
        }
        let keys = kb.store.replace_document(
            &work.root,
            &work.rel,
            parsed.kind,
            &parsed.title,
            &hash,
            work.mtime_ns,
            work.bytes.len() as i64,
            &parsed.sections,
            &chunks,
        )?;
        kb.store.add_vectors(&keys, &vectors)?;
        if work.existed {
            self.report.changed.push(work.rel);
        } else {
            self.report.added.push(work.rel);
        }
        self.report.chunks_embedded += chunks.len();
        if !chunks.is_empty() {
            self.since_checkpoint += 1;
            if self.since_checkpoint >= self.checkpoint_every {
                kb.store.save_index()?;
                self.since_checkpoint = 0;
            }
        }
        Ok(chunks.len())
    }

    /// Removes what a folder no longer has, writes the index, and returns the summary.
    pub fn finish(mut self, kb: &mut KnowledgeBase) -> Result<IngestReport> {
        let seen: std::collections::HashSet<(&str, &str)> = self
            .files
            .iter()
            .map(|f| (f.root.as_str(), f.candidate.rel.as_str()))
            .collect();
        // Only a folder's walk says what was deleted; a single file root says nothing
        // about its siblings.
        for (key, is_dir) in &self.roots {
            if !is_dir {
                continue;
            }
            kb.store.record_folder(key)?;
            for doc in kb.store.documents_under(key)? {
                // Images were not looked for: those read before stay.
                let image = DocKind::from_path(Path::new(&doc.path)) == Some(DocKind::Image);
                if image && !self.images {
                    continue;
                }
                if !seen.contains(&(key.as_str(), doc.path.as_str())) {
                    kb.store.remove_document(key, &doc.path)?;
                    self.report.removed.push(doc.path);
                }
            }
        }
        kb.store.save_index()?;
        self.report.seconds = self.start.elapsed().as_secs_f64();
        Ok(self.report)
    }
}

/// Whether a file is new or changed, by content hash (and its bytes when it is).
fn check_file(
    kb: &KnowledgeBase,
    root: &str,
    c: &Candidate,
    max_file_bytes: u64,
    force: bool,
) -> Result<Option<Work>> {
    let meta = std::fs::metadata(&c.abs).context("cannot read")?;
    // Before reading: a huge file must not be read into memory only to be refused.
    if meta.len() > max_file_bytes {
        anyhow::bail!(
            "too large ({} MB > {} MB limit)",
            meta.len() / 1_000_000,
            max_file_bytes / 1_000_000
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
    let hash = content_hash(&bytes);
    if let Some(doc) = existing.as_ref().filter(|_| !force) {
        if doc.hash == hash {
            if doc.mtime_ns != mtime_ns {
                kb.store.touch(doc.id, mtime_ns)?;
            }
            return Ok(None);
        }
    }
    Ok(Some(Work {
        root: root.to_string(),
        rel: c.rel.clone(),
        abs: c.abs.clone(),
        bytes,
        hash,
        mtime_ns,
        existed: existing.is_some(),
    }))
}

/// Files prepared together: their chunks are embedded in one call, so batches are full
/// and sorted by length across documents instead of one small, ragged batch per file
/// (documentation folders are many small files).
pub const PREPARE_GROUP: usize = 16;

impl Work {
    /// Parses (in a worker when the options say so), chunks and embeds; needs no KB.
    /// `tok` is the embedder's counting tokenizer.
    pub fn prepare(self, embedder: &Embedder, tok: &Tokenizer, opts: &IngestOptions) -> Prepared {
        Work::prepare_group(vec![self], embedder, tok, opts)
            .pop()
            .expect("one prepared per work")
    }

    fn parse_and_chunk(
        &self,
        tok: &Tokenizer,
        opts: &IngestOptions,
    ) -> Result<(ParsedDoc, Vec<NewChunk>)> {
        let parsed = match &opts.isolation {
            Some(iso) => parse::worker::parse_isolated(iso, &self.abs, &self.bytes)?,
            None => std::panic::catch_unwind(|| parse::parse(&self.abs, &self.bytes))
                .map_err(|_| anyhow::anyhow!("the parser panicked on this file"))??,
        };
        let chunks = make_chunks(&parsed, tok, opts.chunk)?;
        Ok((parsed, chunks))
    }

    /// `prepare` for several files at once (see `PREPARE_GROUP`); one result per work, in
    /// order. A file that fails to parse fails alone.
    pub fn prepare_group(
        works: Vec<Work>,
        embedder: &Embedder,
        tok: &Tokenizer,
        opts: &IngestOptions,
    ) -> Vec<Prepared> {
        let parsed: Vec<Result<(ParsedDoc, Vec<NewChunk>)>> =
            works.iter().map(|w| w.parse_and_chunk(tok, opts)).collect();
        let texts: Vec<String> = parsed
            .iter()
            .flatten()
            .flat_map(|(doc, chunks)| {
                chunks
                    .iter()
                    .map(|ch| embed_text(&doc.sections[ch.section].path, &ch.text))
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut vectors = embedder.embed(&refs).map(|v| v.into_iter());
        works
            .into_iter()
            .zip(parsed)
            .map(|(work, parsed)| {
                let result = parsed.and_then(|(doc, chunks)| match &mut vectors {
                    Ok(all) => {
                        let mine = all.by_ref().take(chunks.len()).collect();
                        Ok((doc, chunks, mine))
                    }
                    Err(e) => Err(anyhow::anyhow!("embedding failed: {e:#}")),
                });
                Prepared { work, result }
            })
            .collect()
    }
}

/// A document's stored hash: of its bytes and the parser version, so a parser change
/// re-ingests everything (a `-incomplete` suffix marks a document read in part).
pub fn content_hash(bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(PARSER_VERSION.to_le_bytes());
    hasher.update(bytes);
    format!("{:x}", hasher.finalize())
}
