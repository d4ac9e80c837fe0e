//! Incremental ingest: walk the given folders, hash each supported file, and parse, chunk
//! and embed only new or changed ones; documents whose files are gone are removed from
//! both stores. A file that cannot be read or parsed is skipped with its reason; nothing
//! already stored is lost because of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

mod blocks_cache;
mod boilerplate;
mod eta;
mod files;
mod prepare;

pub use blocks_cache::PAGE_BLOCKS;
pub use boilerplate::Boilerplate;
pub use eta::Eta;

pub use files::{content_hash, Candidate};
pub use prepare::{make_chunks, PREPARE_GROUP};

use files::{candidates, check_file, root_key};

use super::chunk::ChunkParams;
use super::index::{ChunkWrites, DocumentLedger};
use super::lock::WriterLock;
use super::parse::{self, DocKind, ParsedDoc};
use super::store::{NewChunk, NewDocument};
use super::KnowledgeBase;
use crate::embed::Embedder;

/// Bump when parsing or chunking changes what is stored for the same file.
/// 5: a chunk that starts below a table's header repeats the header.
pub const PARSER_VERSION: u32 = 5;

/// Bump a kind's own version when only its parser changes: only files of that kind are
/// read and embedded again (a KB of a million chunks is not re-embedded for a PDF fix).
pub fn kind_version(kind: DocKind) -> u32 {
    match kind {
        // 1: wrapped lines joined, running headers and footers left out.
        DocKind::Pdf => 1,
        // 1: `.txt` read as Markdown (whole paragraphs, headings as sections).
        DocKind::Text => 1,
        // 1: permalinks ("¶") left out of headings and text. 2: admonitions laid out as
        // tables (AsciiDoc, DocBook with graphics) read as a title and paragraphs;
        // adjacent code spans as one; Sphinx's "[source]" links left out. 3: tables of
        // contents left out, and a box's title whose text is furniture elsewhere. 4: prose
        // in `<pre>` read as paragraphs, a bold anchored name as a heading, dropdown menus
        // left out.
        DocKind::Html => 4,
        _ => 0,
    }
}

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
    /// Blocks left out of the pages read because they repeat across their folder's pages
    /// (footers, copyright lines; `boilerplate`).
    pub repeated_blocks: usize,
    /// Text sources left out because the folder holds their pages built
    /// (`_sources/a.rst.txt` beside `a.html`): each page is read once.
    pub page_sources: Vec<String>,
    /// Pages a documentation generator builds from the others (Sphinx's `genindex.html`,
    /// `search.html`), left out.
    pub generated_pages: Vec<String>,
    pub seconds: f64,
}

/// Progress events for a progress bar.
pub enum IngestEvent<'a> {
    /// The number of candidate files found.
    Found(usize),
    /// One file done (whether embedded, unchanged or skipped), with chunks embedded.
    File { path: &'a str, chunks: usize },
}

/// Ingests `roots` into `kb`, holding it throughout (the CLI's way). A caller that must
/// let others read while it ingests drives an `IngestRun` itself.
pub fn ingest(
    kb: &mut KnowledgeBase,
    roots: &[PathBuf],
    opts: &IngestOptions,
    on_event: &mut dyn FnMut(IngestEvent),
) -> Result<IngestReport> {
    let run = IngestRun::start(kb, roots, opts)?;
    let embedder = kb.embedder.clone();
    ingest_into(&mut kb.store, &embedder, run, opts, on_event)
}

/// A run into any engine behind the write traits (`kb::index`), `ingest`'s own store or
/// another: each file checked against the engine's ledger, prepared (parsed, chunked and
/// embedded here), written, and what a folder no longer has removed.
pub fn ingest_into<T: DocumentLedger + ChunkWrites + ?Sized>(
    target: &mut T,
    embedder: &Embedder,
    mut run: IngestRun,
    opts: &IngestOptions,
    on_event: &mut dyn FnMut(IngestEvent),
) -> Result<IngestReport> {
    let tok = embedder.counting_tokenizer();
    on_event(IngestEvent::Found(run.files.len()));
    let indices: Vec<usize> = (0..run.files.len()).collect();
    for group in indices.chunks(PREPARE_GROUP) {
        let mut works = Vec::new();
        let mut chunks = vec![0; group.len()];
        for (slot, &i) in group.iter().enumerate() {
            if let Some(work) = run.check_in(target, i) {
                works.push((slot, work));
            }
        }
        let (slots, works): (Vec<usize>, Vec<Work>) = works.into_iter().unzip();
        let prepared = Work::prepare_group(works, embedder, &tok, opts);
        for (slot, p) in slots.into_iter().zip(prepared) {
            chunks[slot] = run.commit_to(target, p)?;
        }
        for (slot, &i) in group.iter().enumerate() {
            on_event(IngestEvent::File {
                path: &run.files[i].candidate.rel,
                chunks: chunks[slot],
            });
        }
    }
    run.finish_in(target)
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
    /// The blocks repeated across the run's pages, counted before the first file is
    /// checked (not when the run starts, so that a shell can show the files found first).
    boilerplate: Option<Arc<Boilerplate>>,
    /// How the count parses a page.
    parse_opts: IngestOptions,
    start: Instant,
    writer: WriterLock,
}

/// A file of the run, with the root it is recorded under.
pub struct RunFile {
    root: String,
    pub candidate: Candidate,
}

/// A new or changed file to parse and embed.
pub struct Work {
    pub(super) root: String,
    pub(super) rel: String,
    pub(super) abs: PathBuf,
    pub(super) bytes: Vec<u8>,
    pub(super) hash: String,
    pub(super) mtime_ns: i64,
    pub(super) existed: bool,
    /// What to leave out of the parsed page as repeated (None: nothing).
    pub(super) boilerplate: Option<Arc<Boilerplate>>,
}

/// A file parsed, chunked and embedded, ready to commit (or why it is skipped).
pub struct Prepared {
    pub(super) work: Work,
    pub(super) result: Result<(ParsedDoc, Vec<NewChunk>, Vec<Vec<f32>>)>,
    /// Repeated blocks left out of the page.
    pub(super) repeated: usize,
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
            boilerplate: None,
            parse_opts: opts.clone(),
            start: Instant::now(),
            writer,
        };
        for root in roots {
            let key = root_key(root)?;
            let found = candidates(root, opts.images);
            run.report.skipped.extend(found.not_files);
            run.report.page_sources.extend(found.page_sources);
            run.report.generated_pages.extend(found.generated_pages);
            run.files
                .extend(found.files.into_iter().map(|candidate| RunFile {
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
                bytes: std::fs::metadata(&abs).map(|m| m.len()).unwrap_or(0),
                abs,
                rel: path.to_string(),
            },
        });
        run.boilerplate = Some(Arc::new(run.learn_boilerplate_of_one(opts)));
        Ok(run)
    }

    /// Counts the blocks repeated across the run's pages (`boilerplate`), unless done:
    /// every HTML page is read once, which takes a while on a large folder (2.8 s for
    /// 783 pages), so a shell calls this after showing the files found, with
    /// `on_read(pages read, pages to read)`. Else the first `check` counts, unreported.
    pub fn count_repeated_blocks(
        &mut self,
        on_read: &(dyn Fn(usize, usize) + Sync),
    ) -> Arc<Boilerplate> {
        if self.boilerplate.is_none() {
            let found = self.learn_boilerplate(self.writer.dir(), &self.parse_opts, on_read);
            self.boilerplate = Some(Arc::new(found));
        }
        self.boilerplate.clone().unwrap_or_default()
    }

    /// File `i`: the work to do when it is new or changed; None when it is unchanged,
    /// removed by the user, or cannot be read (then it is in the report).
    pub fn check(&mut self, kb: &mut KnowledgeBase, i: usize) -> Option<Work> {
        self.check_in(&mut kb.store, i)
    }

    /// `check` against any engine's ledger.
    pub fn check_in<T: DocumentLedger + ?Sized>(
        &mut self,
        ledger: &mut T,
        i: usize,
    ) -> Option<Work> {
        let boilerplate = self.count_repeated_blocks(&|_, _| {});
        let RunFile { root, candidate } = &self.files[i];
        match ledger.is_excluded(root, &candidate.rel) {
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
        match check_file(ledger, root, candidate, self.max_file_bytes, self.force) {
            Ok(Some(mut work)) => {
                work.boilerplate = (!boilerplate.is_empty()).then_some(boilerplate);
                Some(work)
            }
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
        self.commit_to(&mut kb.store, prepared)
    }

    /// `commit` into any engine.
    pub fn commit_to<T: ChunkWrites + ?Sized>(
        &mut self,
        target: &mut T,
        prepared: Prepared,
    ) -> Result<usize> {
        let Prepared {
            work,
            result,
            repeated,
        } = prepared;
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
        let keys = target
            .replace_document(&NewDocument {
                root: &work.root,
                path: &work.rel,
                kind: parsed.kind,
                title: &parsed.title,
                hash: &hash,
                mtime_ns: work.mtime_ns,
                size: work.bytes.len() as i64,
                sections: &parsed.sections,
                chunks: &chunks,
            })
            .with_context(|| format!("cannot store {}", work.rel))?;
        target.add_vectors(&keys, &vectors)?;
        if work.existed {
            self.report.changed.push(work.rel);
        } else {
            self.report.added.push(work.rel);
        }
        self.report.chunks_embedded += chunks.len();
        self.report.repeated_blocks += repeated;
        if !chunks.is_empty() {
            self.since_checkpoint += 1;
            if self.since_checkpoint >= self.checkpoint_every {
                target.checkpoint(false)?;
                self.since_checkpoint = 0;
            }
        }
        Ok(chunks.len())
    }

    /// Removes what a folder no longer has, writes the index, and returns the summary.
    pub fn finish(self, kb: &mut KnowledgeBase) -> Result<IngestReport> {
        self.finish_in(&mut kb.store)
    }

    /// `finish` in any engine.
    pub fn finish_in<T: DocumentLedger + ChunkWrites + ?Sized>(
        mut self,
        target: &mut T,
    ) -> Result<IngestReport> {
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
            target.record_folder(key)?;
            for doc in target.documents_under(key)? {
                // Images were not looked for: those read before stay.
                let image = DocKind::from_path(Path::new(&doc.path)) == Some(DocKind::Image);
                if image && !self.images {
                    continue;
                }
                if !seen.contains(&(key.as_str(), doc.path.as_str())) {
                    target.remove_document(key, &doc.path)?;
                    self.report.removed.push(doc.path);
                }
            }
        }
        target.checkpoint(true)?;
        self.report.seconds = self.start.elapsed().as_secs_f64();
        Ok(self.report)
    }
}
