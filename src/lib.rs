//! Sextant's engine: local models, grammar-constrained generation and (later) the
//! knowledge base and protocols. Knows nothing of Tauri or HTTP; the CLI, the server and
//! the desktop shell are thin layers over it. See ARCHITECTURE.md for the map.

pub mod bench;
pub mod constrain;
pub mod embed;
pub mod jsonl;
pub mod kb;
pub mod llm;
pub mod models;
pub mod protocols;
pub mod schemas;
pub mod service;
pub mod structured;
