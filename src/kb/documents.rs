//! One document at a time: removing it from a knowledge base (later ingests of its folder
//! leave it out) and re-indexing it (read, parsed and embedded again even if unchanged,
//! and restored if it was removed). Both take the writer lock, as an ingest does.

use anyhow::Result;

use super::ingest::{IngestOptions, IngestReport, IngestRun, Work};
use super::lock::WriterLock;
use super::KnowledgeBase;

/// No document of that path, stored or removed.
#[derive(Debug, thiserror::Error)]
#[error(
    "no document {0:?} in the knowledge base (`sextant kb list` lists them; a path is \
     relative to its folder, e.g. handbook/oncall-guide.pdf)"
)]
pub struct NoSuchDocument(pub String);

/// The root a stored or removed document is recorded under.
fn root_of(kb: &KnowledgeBase, path: &str) -> Result<String> {
    if let Some(doc) = kb.store.document_source(path)? {
        return Ok(doc.root);
    }
    if let Some((root, _)) = kb.store.excluded()?.into_iter().find(|(_, p)| p == path) {
        return Ok(root);
    }
    Err(NoSuchDocument(path.to_string()).into())
}

/// Removes `path` (as listed) and keeps later ingests of its folder from adding it back.
pub fn remove(kb: &mut KnowledgeBase, path: &str) -> Result<()> {
    let _writer = WriterLock::try_acquire(kb.store.dir())?;
    let root = root_of(kb, path)?;
    kb.store.exclude_document(&root, path)?;
    kb.store.checkpoint(true)?;
    Ok(())
}

/// Reads, parses and embeds `path` again (a removed one is restored).
pub fn reindex(kb: &mut KnowledgeBase, path: &str, opts: &IngestOptions) -> Result<IngestReport> {
    let writer = WriterLock::try_acquire(kb.store.dir())?;
    let root = root_of(kb, path)?;
    let mut run = IngestRun::for_document(writer, &root, path, opts)?;
    kb.store.include_document(&root, path)?;
    let tok = kb.embedder.counting_tokenizer();
    if let Some(work) = run.check(kb, 0) {
        for prepared in Work::prepare_group(vec![work], &kb.embedder, &tok, opts) {
            run.commit(kb, prepared)?;
        }
    }
    run.finish(kb)
}
