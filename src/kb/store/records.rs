//! The rows a store is written with and read back as: what an ingest hands it
//! (`NewDocument`, `NewChunk`) and what its reads return.

use serde::Serialize;

use crate::kb::parse::{DocKind, Section};

/// A chunk ready to be stored.
#[derive(Debug, Clone)]
pub struct NewChunk {
    /// Index into the document's sections.
    pub section: usize,
    pub chunk_id: String,
    pub page: Option<u32>,
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// A document ready to be stored: its ledger row, sections and chunks (`NewChunk::section`
/// indexes `sections`).
#[derive(Debug, Clone, Copy)]
pub struct NewDocument<'a> {
    pub root: &'a str,
    pub path: &'a str,
    pub kind: DocKind,
    pub title: &'a str,
    /// `ingest::content_hash` of its bytes: an unchanged file is not read again.
    pub hash: &'a str,
    pub mtime_ns: i64,
    pub size: i64,
    pub sections: &'a [Section],
    pub chunks: &'a [NewChunk],
}

#[derive(Debug, Clone)]
pub struct DocRecord {
    pub id: i64,
    pub root: String,
    pub path: String,
    pub hash: String,
    pub mtime_ns: i64,
    pub size: i64,
}

/// A document as listed to a user.
#[derive(Debug, Clone, Serialize)]
pub struct DocSummary {
    pub path: String,
    #[serde(rename = "format")]
    pub kind: String,
    pub title: String,
    pub chunks: usize,
}

/// One section of a document, as stored.
#[derive(Debug, Clone, Serialize)]
pub struct SectionRow {
    pub level: u32,
    pub heading: String,
    pub anchor: String,
    pub page: Option<u32>,
    pub text: String,
}

/// A stored chunk with what a search hit shows of it.
#[derive(Debug, Clone)]
pub struct ChunkRecord {
    pub key: u64,
    pub chunk_id: String,
    pub file: String,
    pub kind: String,
    pub heading: String,
    pub section_path: Vec<String>,
    pub anchor: String,
    pub page: Option<u32>,
    pub text: String,
}

/// How much a store holds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Counts {
    pub documents: usize,
    pub sections: usize,
    pub chunks: usize,
}

/// A chunk as listed for inspection (tests, benchmarks).
#[derive(Debug, Clone)]
pub struct ChunkListing {
    pub file: String,
    pub kind: String,
    pub chunk_id: String,
    pub page: Option<u32>,
    pub heading: String,
    pub text: String,
}
