//! Following folders: a change to a file under them (created, written, renamed, deleted)
//! calls back once the burst of saves it belongs to has settled. The CLI's `ingest
//! --watch` and the service's live folders both re-ingest from that callback.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Result;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

/// How long a burst of changes must be quiet before the callback runs.
pub const SETTLE: Duration = Duration::from_millis(500);

/// Folders being followed; dropping it stops the following (and its thread).
pub struct FolderWatcher {
    _watcher: RecommendedWatcher,
    /// The folders that could not be followed, with why (gone, unreadable, no watches left).
    pub failed: Vec<(PathBuf, String)>,
}

/// Follows `folders` (recursively), calling `on_change` on a thread of its own after each
/// settled burst of content changes. Folders that cannot be followed are listed in
/// `failed`; the rest are followed.
pub fn follow(
    folders: &[PathBuf],
    mut on_change: impl FnMut() + Send + 'static,
) -> Result<FolderWatcher> {
    let (tx, rx) = mpsc::channel::<()>();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if ev.is_ok_and(|ev| is_content_change(&ev.kind)) {
            let _ = tx.send(());
        }
    })?;
    let mut failed = Vec::new();
    for folder in folders {
        if let Err(e) = watcher.watch(folder, RecursiveMode::Recursive) {
            failed.push((folder.clone(), e.to_string()));
        }
    }
    // Ends when the watcher (which owns the sender) is dropped.
    std::thread::spawn(move || {
        while rx.recv().is_ok() {
            loop {
                match rx.recv_timeout(SETTLE) {
                    Ok(()) => continue,
                    Err(mpsc::RecvTimeoutError::Timeout) => break,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
            on_change();
        }
    });
    Ok(FolderWatcher {
        _watcher: watcher,
        failed,
    })
}

/// Only content changes count: reading the files during an ingest raises access and
/// metadata events, which must not set off another ingest.
fn is_content_change(kind: &notify::EventKind) -> bool {
    use notify::event::{EventKind, ModifyKind};
    matches!(
        kind,
        EventKind::Create(_)
            | EventKind::Remove(_)
            | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_burst_of_writes_calls_back_once_it_settles_and_reads_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.md"), "# A").unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let w = follow(
            &[tmp.path().to_path_buf(), tmp.path().join("gone")],
            move || {
                seen.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
        assert_eq!(
            w.failed.len(),
            1,
            "the missing folder is named: {:?}",
            w.failed
        );
        for i in 0..5 {
            std::fs::write(tmp.path().join(format!("n{i}.md")), "# N").unwrap();
        }
        let wait_until = |n: usize| {
            let t = Instant::now();
            while calls.load(Ordering::SeqCst) < n && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        wait_until(1);
        std::thread::sleep(SETTLE * 3);
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one call for the burst");
        let _ = std::fs::read_to_string(tmp.path().join("a.md")).unwrap();
        std::thread::sleep(SETTLE * 3);
        assert_eq!(calls.load(Ordering::SeqCst), 1, "reading is not a change");
        std::fs::remove_file(tmp.path().join("a.md")).unwrap();
        wait_until(2);
        assert_eq!(calls.load(Ordering::SeqCst), 2, "a deletion is");
        drop(w);
    }
}
