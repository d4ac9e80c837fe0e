//! Ingest through the service: a folder or file added with progress, the KB held only to
//! check and commit each file.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Service, ServiceError};
use crate::kb::ingest::{IngestOptions, IngestRun, Work, PREPARE_GROUP};
use crate::kb::lock::WriterLock;

impl Service {
    /// The folder an ingest request means (`None`: the one ingested last), checked to
    /// exist, absolute.
    pub fn ingest_target(&self, path: Option<&Path>) -> Result<PathBuf, ServiceError> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => self.last_ingested().ok_or_else(|| {
                ServiceError::BadRequest("missing field: path (the folder to add)".into())
            })?,
        };
        if !path.exists() {
            return Err(ServiceError::NotFound(format!(
                "{}: no such file or folder on the machine running sextant",
                path.display()
            )));
        }
        path.canonicalize()
            .map_err(|e| ServiceError::BadRequest(format!("{}: {e}", path.display())))
    }

    /// Ingests a folder or file (see `ingest_target`; `images`: image files too, with
    /// OCR), reporting `(done, total, file)` as it goes.
    pub fn ingest(
        &self,
        path: &Path,
        images: bool,
        on_progress: &mut dyn FnMut(usize, usize, &str),
    ) -> Result<Value, ServiceError> {
        let path = self.ingest_target(Some(path))?;
        let opts = IngestOptions {
            isolation: self.config.parse_isolation.clone(),
            images,
            ..IngestOptions::default()
        };
        // The writer lock is taken under the KB's mutex, so the open KB cannot change while
        // this run holds it (see `kbs`). The KB itself is held only to check and to commit
        // each file, never while a file is parsed and embedded, so searches and reads go
        // on during an ingest.
        let writer = WriterLock::try_acquire(self.kb().store().dir())
            .map_err(|e| ServiceError::KbBusy(e.to_string()))?;
        let mut run = IngestRun::with_lock(writer, std::slice::from_ref(&path), &opts)?;
        let tok = self.embedder.counting_tokenizer();
        let total = run.files.len();
        on_progress(0, total, "");
        let indices: Vec<usize> = (0..total).collect();
        for group in indices.chunks(PREPARE_GROUP) {
            let works: Vec<Work> = group
                .iter()
                .filter_map(|&i| run.check(&self.kb(), i))
                .collect();
            for prepared in Work::prepare_group(works, &self.embedder, &tok, &opts) {
                run.commit(&mut self.kb(), prepared)?;
            }
            let last = *group.last().expect("chunks are non-empty");
            on_progress(last + 1, total, &run.files[last].candidate.rel);
        }
        let report = run.finish(&mut self.kb())?;
        *self.last_ingested.lock().unwrap_or_else(|p| p.into_inner()) = Some(path);
        // A new folder is followed from now on.
        self.refresh_live();
        Ok(json!({ "summary": report }))
    }

    pub fn last_ingested(&self) -> Option<PathBuf> {
        self.last_ingested
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
