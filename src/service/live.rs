//! Live folders: while the service follows the open KB's folders (`OpenOptions::watch`,
//! and the KB's own `watch` setting not off), a change under one re-ingests it in the
//! background, and `live_status` says what is followed, what could not be, and when the
//! last sync ran with what it changed.
//!
//! The folders followed are those ingested as folders (a single file's folder is not
//! followed, or its siblings would be added). A folder that disappears (an unmounted
//! drive) is reported, and its documents are kept.

use std::path::PathBuf;
use std::sync::{Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::{Service, ServiceError};
use crate::kb::follow::{follow, FolderWatcher};
use crate::kb::parse::DocKind;

/// The KB setting that turns following off for one KB.
pub const WATCH_SETTING: &str = "watch";

/// How long a sync waits for another ingest into the KB to end before giving up.
const BUSY_WAIT: Duration = Duration::from_secs(120);

#[derive(Default)]
pub(super) struct Live {
    state: Mutex<LiveState>,
}

#[derive(Default)]
struct LiveState {
    watcher: Option<FolderWatcher>,
    kb: PathBuf,
    folders: Vec<PathBuf>,
    syncing: bool,
    last_sync: Option<u64>,
    last_changes: Option<Value>,
    error: Option<String>,
}

impl Service {
    /// Whether the open KB's folders are to be followed.
    fn live_wanted(&self) -> bool {
        self.config.watch && self.me.upgrade().is_some() && !self.live_paused()
    }

    /// Whether following is turned off for the open KB (its `watch` setting).
    fn live_paused(&self) -> bool {
        let setting = self.kb().store().setting(WATCH_SETTING);
        setting.ok().flatten().as_deref() == Some("off")
    }

    /// Follows the open KB's folders when wanted (and stops following when not): after
    /// the service starts, and whenever the KB, its folders or its setting change.
    pub(super) fn refresh_live(&self) {
        let (kb, folders) = {
            let kb = self.kb();
            (kb.store().dir().to_path_buf(), followed_folders(&kb))
        };
        let wanted = self.live_wanted();
        let mut st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.kb != kb {
            *st = LiveState {
                kb: kb.clone(),
                ..LiveState::default()
            };
        }
        if !wanted {
            st.watcher = None;
            st.folders.clear();
            return;
        }
        if st.watcher.is_some() && st.folders == folders {
            return;
        }
        let me: Weak<Service> = self.me.clone();
        let for_kb = kb.clone();
        st.folders = folders.clone();
        st.watcher = match follow(&folders, move || {
            if let Some(svc) = me.upgrade() {
                svc.sync_live(&for_kb);
            }
        }) {
            Ok(w) => Some(w),
            Err(e) => {
                st.error = Some(format!("cannot follow the folders: {e}"));
                None
            }
        };
    }

    /// Stops following (before the open KB's folder moves).
    pub(super) fn stop_live(&self) {
        let mut st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
        st.watcher = None;
        st.folders.clear();
    }

    /// Turns following the open KB's folders on or off, kept with the KB.
    pub(super) fn set_live(&self, on: bool) -> Result<Value, ServiceError> {
        self.kb()
            .set_setting(WATCH_SETTING, if on { "on" } else { "off" })?;
        self.refresh_live();
        if on {
            self.sync_live_in_background();
        }
        Ok(self.live_status())
    }

    /// Syncs the open KB's folders on a thread of its own, when they are followed.
    pub(super) fn sync_live_in_background(&self) {
        if !self.live_wanted() {
            return;
        }
        let me = self.me.clone();
        let kb = self.kb_dir();
        std::thread::spawn(move || {
            if let Some(svc) = me.upgrade() {
                svc.sync_live(&kb);
            }
        });
    }

    /// Re-ingests each followed folder of `kb` (if it is still the open KB), waiting for
    /// another ingest into it to end first.
    fn sync_live(&self, kb: &std::path::Path) {
        let folders = {
            let mut st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
            if st.kb != kb || st.watcher.is_none() {
                return;
            }
            if st.folders.is_empty() {
                return;
            }
            st.syncing = true;
            st.folders.clone()
        };
        let mut changes = json!({"added": 0, "changed": 0, "removed": 0});
        let mut error = None;
        for folder in &folders {
            if !folder.is_dir() {
                error = Some(format!(
                    "{} is gone (unmounted or moved); its documents are kept",
                    folder.display()
                ));
                continue;
            }
            let images = self.has_images_under(folder);
            let started = std::time::Instant::now();
            let result = loop {
                if self.kb_dir() != kb {
                    return self.end_sync(None, None);
                }
                match self.ingest(std::slice::from_ref(folder), images, &mut |_| {}) {
                    Err(ServiceError::KbBusy(_)) if started.elapsed() < BUSY_WAIT => {
                        std::thread::sleep(Duration::from_millis(500))
                    }
                    other => break other,
                }
            };
            match result {
                Ok(report) => {
                    for (key, n) in [
                        ("added", report.added.len()),
                        ("changed", report.changed.len()),
                        ("removed", report.removed.len()),
                    ] {
                        changes[key] = json!(changes[key].as_u64().unwrap_or(0) + n as u64);
                    }
                }
                Err(e) => error = Some(format!("{}: {e}", folder.display())),
            }
        }
        self.end_sync(Some(changes), error);
    }

    fn end_sync(&self, changes: Option<Value>, error: Option<String>) {
        let mut st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
        st.syncing = false;
        if changes.is_some() {
            st.last_sync = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs());
            st.last_changes = changes;
            st.error = error;
        }
    }

    /// Whether a folder was read with its images (then its new images are read too).
    fn has_images_under(&self, folder: &std::path::Path) -> bool {
        let root = folder.to_string_lossy();
        self.kb().store().documents_under(&root).is_ok_and(|docs| {
            docs.iter()
                .any(|d| DocKind::from_path(std::path::Path::new(&d.path)) == Some(DocKind::Image))
        })
    }

    /// What is followed and how the last sync went (the UI's live status).
    pub fn live_status(&self) -> Value {
        let setting_off = self.live_paused();
        let st = self.live.state.lock().unwrap_or_else(|p| p.into_inner());
        let failed: Vec<Value> = st
            .watcher
            .iter()
            .flat_map(|w| &w.failed)
            .map(|(f, why)| json!({"folder": f, "reason": why}))
            .collect();
        let state = if !self.config.watch {
            "unavailable"
        } else if setting_off {
            "off"
        } else if st.syncing {
            "syncing"
        } else if st.watcher.is_some() && !st.folders.is_empty() {
            "following"
        } else if st.watcher.is_some() {
            // Followed from the first folder ingested on.
            "no_folders"
        } else {
            "off"
        };
        json!({
            "state": state,
            "folders": st.folders,
            "failed": failed,
            "last_sync": st.last_sync,
            "last_changes": st.last_changes,
            "error": st.error,
        })
    }
}

/// The open KB's folders to follow: the roots ingested as folders (`record_folder`); a KB
/// ingested before those were recorded follows every root.
fn followed_folders(kb: &crate::kb::KnowledgeBase) -> Vec<PathBuf> {
    let roots = kb.store().roots().unwrap_or_default();
    let recorded: Vec<PathBuf> = roots
        .iter()
        .filter(|r| kb.store().is_folder_root(r))
        .map(PathBuf::from)
        .collect();
    if !recorded.is_empty() || kb.store().has_folder_records() {
        return recorded;
    }
    roots.into_iter().map(PathBuf::from).collect()
}
