//! One writer per knowledge base: an advisory lock on `<kb>/writer.lock` held while
//! documents are written. The operating system releases it when its holder exits or
//! crashes, so a stale lock cannot outlive a process. Readers never take it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "writer.lock";

/// Held while writing; released on drop (or by the OS if the process dies).
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
    dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the knowledge base {} is being written by {holder}; wait until it finishes (or stop \
         it) and try again",
        dir.display()
    )]
    Busy { dir: PathBuf, holder: String },
    #[error("cannot lock the knowledge base {} for writing ({}): {source}", dir.display(), LOCK_FILE)]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

impl WriterLock {
    /// Takes the lock, or says who holds it. Never waits.
    pub fn try_acquire(dir: &Path) -> Result<WriterLock, LockError> {
        let io = |source| LockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {
                // Who holds it, for the message a second writer gets.
                file.set_len(0).map_err(io)?;
                file.rewind().map_err(io)?;
                let program = std::env::args()
                    .take(2)
                    .map(|a| {
                        Path::new(&a)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or(a)
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                write!(
                    file,
                    "process {} ({program}), since {}",
                    std::process::id(),
                    crate::jsonl::now_rfc3339()
                )
                .map_err(io)?;
                Ok(WriterLock {
                    _file: file,
                    dir: dir.to_path_buf(),
                })
            }
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                Err(LockError::Busy {
                    dir: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "another process".into()
                    } else {
                        holder.to_string()
                    },
                })
            }
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// The folder locked: the KB's.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_told_who_holds_the_lock_until_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let first = WriterLock::try_acquire(dir.path()).unwrap();
        let err = WriterLock::try_acquire(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, LockError::Busy { .. }), "{msg}");
        assert!(
            msg.contains(&format!("process {}", std::process::id())),
            "{msg}"
        );
        drop(first);
        WriterLock::try_acquire(dir.path()).unwrap();
    }
}
