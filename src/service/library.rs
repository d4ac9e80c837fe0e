//! The open KB's contents, typed for the shells: search, statistics, the document list,
//! and removing or re-indexing one document. `handle` wraps the same calls in JSON.

use crate::kb::ingest::{IngestOptions, IngestReport};
use crate::kb::search::{search, Hit, SearchMode};
use crate::kb::store::DocSummary;
use crate::kb::KbStats;

use super::{non_empty, Service, ServiceError};

/// The documents of the open KB and the paths removed from it.
pub struct DocumentList {
    pub documents: Vec<DocSummary>,
    pub removed: Vec<String>,
}

impl Service {
    /// The `k` best chunks for `query` (1..=50), hybrid unless `mode` says otherwise.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        mode: Option<SearchMode>,
    ) -> Result<Vec<Hit>, ServiceError> {
        let query = non_empty("query", query)?;
        let mode = mode.unwrap_or(SearchMode::Hybrid);
        Ok(search(&self.kb(), query, k.clamp(1, 50), mode)?)
    }

    pub fn kb_stats(&self) -> Result<KbStats, ServiceError> {
        Ok(self.kb().stats()?)
    }

    pub fn documents(&self) -> Result<DocumentList, ServiceError> {
        let kb = self.kb();
        Ok(DocumentList {
            documents: kb.store().list_documents()?,
            removed: kb.store().excluded()?.into_iter().map(|(_, p)| p).collect(),
        })
    }

    /// Removes one document; ingests of its folder leave it out until it is re-indexed.
    pub fn remove_document(&self, path: &str) -> Result<(), ServiceError> {
        crate::kb::documents::remove(&mut self.kb(), path).map_err(document_error)
    }

    /// Reads, parses and embeds one document again (restoring a removed one).
    pub fn reindex_document(&self, path: &str) -> Result<IngestReport, ServiceError> {
        let opts = IngestOptions {
            isolation: self.config.parse_isolation.clone(),
            ..IngestOptions::default()
        };
        crate::kb::documents::reindex(&mut self.kb(), path, &opts).map_err(document_error)
    }
}

/// Removing or re-indexing a document failed: an unknown path, another writer, or worse.
fn document_error(e: anyhow::Error) -> ServiceError {
    if let Some(missing) = e.downcast_ref::<crate::kb::documents::NoSuchDocument>() {
        return ServiceError::NotFound(missing.to_string());
    }
    if e.downcast_ref::<crate::kb::lock::LockError>().is_some() {
        return ServiceError::KbBusy(e.to_string());
    }
    ServiceError::Internal(e)
}
