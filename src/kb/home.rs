//! The knowledge bases a user keeps: one folder each under the KB home (`SEXTANT_KB_HOME`,
//! or `<data dir>/kb`), named by the folder's name. Listed, created, renamed and removed
//! here; the one last opened by the desktop is remembered beside them (`.last`).
//!
//! Removing a KB moves its folder into `<home>/.removed/` rather than deleting it: a KB
//! holds interview transcripts besides its index, and a click must not lose those.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::lock::WriterLock;
use super::store::{peek, DB_FILE};

/// Where removed knowledge bases are moved.
const REMOVED: &str = ".removed";
/// The file naming the KB last opened.
const LAST: &str = ".last";

/// The folder that holds the named knowledge bases.
#[derive(Debug, Clone)]
pub struct KbHome {
    dir: PathBuf,
}

/// One knowledge base as a list shows it.
#[derive(Debug, Clone, Serialize)]
pub struct KbEntry {
    pub name: String,
    pub path: PathBuf,
    pub documents: usize,
    pub chunks: usize,
    /// The folders its documents were ingested from.
    pub folders: Vec<String>,
    /// Why its store could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A name that cannot be a knowledge base's folder name.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{0:?} cannot name a knowledge base: use 1 to 64 letters, digits, spaces, '-', '_' or '.', \
     not starting with '.' or a space"
)]
pub struct BadKbName(pub String);

/// The named knowledge base does not exist.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no knowledge base named {name:?} in {}", home.display())]
pub struct NoSuchKb {
    pub name: String,
    pub home: PathBuf,
}

/// A knowledge base of that name already exists.
#[derive(Debug, Clone, thiserror::Error)]
#[error("a knowledge base named {name:?} already exists in {}: pick another name", home.display())]
pub struct KbExists {
    pub name: String,
    pub home: PathBuf,
}

/// Whether `name` can be a KB's folder name (and never a path).
pub fn check_name(name: &str) -> Result<&str, BadKbName> {
    let ok = !name.is_empty()
        && name.chars().count() <= 64
        && !name.starts_with(['.', ' '])
        && !name.ends_with(' ')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'));
    if ok {
        Ok(name)
    } else {
        Err(BadKbName(name.to_string()))
    }
}

impl KbHome {
    /// The user's KB home (`SEXTANT_KB_HOME`, or `<data dir>/kb`).
    pub fn user() -> Self {
        let dir = std::env::var_os("SEXTANT_KB_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::data_dir().join("kb"));
        KbHome { dir }
    }

    pub fn at(dir: impl Into<PathBuf>) -> Self {
        KbHome { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder of the KB named `name` (which may not exist yet).
    pub fn path_of(&self, name: &str) -> Result<PathBuf, BadKbName> {
        Ok(self.dir.join(check_name(name)?))
    }

    /// The name of `dir` when it is a KB folder directly under this home.
    pub fn name_of(&self, dir: &Path) -> Option<String> {
        let name = dir.file_name()?.to_str()?;
        let parent = dir.parent()?;
        let same = |a: &Path, b: &Path| {
            a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
        };
        (same(parent, &self.dir) && check_name(name).is_ok()).then(|| name.to_string())
    }

    /// An existing KB's folder, or `NoSuchKb`.
    pub fn existing(&self, name: &str) -> Result<PathBuf> {
        let dir = self.path_of(name)?;
        if !dir.join(DB_FILE).is_file() {
            bail!(NoSuchKb {
                name: name.to_string(),
                home: self.dir.clone(),
            });
        }
        Ok(dir)
    }

    /// The knowledge bases here, by name. A folder whose store cannot be read is listed
    /// with the reason.
    pub fn list(&self) -> Result<Vec<KbEntry>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e).with_context(|| format!("cannot list {}", self.dir.display())),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if check_name(name).is_err() || !path.join(DB_FILE).is_file() {
                continue;
            }
            out.push(entry_for(name.to_string(), path));
        }
        out.sort_by_key(|e| e.name.to_lowercase());
        Ok(out)
    }

    /// Makes the folder of a new, empty KB (its store is created when it is opened).
    pub fn create(&self, name: &str) -> Result<PathBuf> {
        let dir = self.path_of(name)?;
        if dir.exists() {
            bail!(KbExists {
                name: name.to_string(),
                home: self.dir.clone(),
            });
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    /// Renames a KB's folder; refused while another process writes it.
    pub fn rename(&self, from: &str, to: &str) -> Result<PathBuf> {
        let old = self.existing(from)?;
        let new = self.path_of(to)?;
        if new.exists() {
            bail!(KbExists {
                name: to.to_string(),
                home: self.dir.clone(),
            });
        }
        let was_last = self.last_used().as_deref() == Some(from);
        let writer = WriterLock::try_acquire(&old)?;
        std::fs::rename(&old, &new)
            .with_context(|| format!("cannot rename {} to {}", old.display(), new.display()))?;
        drop(writer);
        if was_last {
            self.set_last_used(to)?;
        }
        Ok(new)
    }

    /// Moves a KB's folder out of the list, into `<home>/.removed/`; returns where it went.
    /// Refused while another process writes it.
    pub fn remove(&self, name: &str) -> Result<PathBuf> {
        let dir = self.existing(name)?;
        let was_last = self.last_used().as_deref() == Some(name);
        let writer = WriterLock::try_acquire(&dir)?;
        let removed = self.dir.join(REMOVED);
        std::fs::create_dir_all(&removed)
            .with_context(|| format!("cannot create {}", removed.display()))?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let to = removed.join(format!("{name}.{stamp}"));
        std::fs::rename(&dir, &to)
            .with_context(|| format!("cannot move {} to {}", dir.display(), to.display()))?;
        drop(writer);
        if was_last {
            let _ = std::fs::remove_file(self.dir.join(LAST));
        }
        Ok(to)
    }

    /// The KB the desktop opened last, if it still exists.
    pub fn last_used(&self) -> Option<String> {
        let name = std::fs::read_to_string(self.dir.join(LAST)).ok()?;
        let name = name.trim();
        self.existing(name).ok().map(|_| name.to_string())
    }

    pub fn set_last_used(&self, name: &str) -> Result<()> {
        check_name(name)?;
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let path = self.dir.join(LAST);
        std::fs::write(&path, name).with_context(|| format!("cannot write {}", path.display()))
    }
}

/// A KB folder as a list shows it (named `name`), read without opening it.
pub fn entry_for(name: String, path: PathBuf) -> KbEntry {
    match peek(&path) {
        Ok(p) => KbEntry {
            name,
            path,
            documents: p.documents,
            chunks: p.chunks,
            folders: p.folders,
            error: None,
        },
        Err(e) => KbEntry {
            name,
            path,
            documents: 0,
            chunks: 0,
            folders: Vec::new(),
            error: Some(format!("{e:#}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::store::Store;

    fn make_kb(home: &KbHome, name: &str) -> PathBuf {
        let dir = home.create(name).unwrap();
        Store::open(&dir, 4, "test-embedder").unwrap();
        dir
    }

    #[test]
    fn names_are_folder_names_never_paths() {
        for good in [
            "default",
            "Ops handbook",
            "team-2_docs",
            "v1.2",
            "Überblick",
        ] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let long = "x".repeat(65);
        for bad in [
            "", ".hidden", " lead", "trail ", "a/b", "..", "../x", "a\\b", "a:b", &long,
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn kbs_are_created_listed_renamed_and_removed_without_losing_their_files() {
        let tmp = tempfile::tempdir().unwrap();
        let home = KbHome::at(tmp.path().join("kb"));
        assert!(
            home.list().unwrap().is_empty(),
            "a missing home lists nothing"
        );
        make_kb(&home, "default");
        let ops = make_kb(&home, "ops");
        std::fs::write(ops.join("interview-notes.txt"), "kept").unwrap();
        let names =
            |h: &KbHome| -> Vec<String> { h.list().unwrap().into_iter().map(|e| e.name).collect() };
        assert_eq!(names(&home), ["default", "ops"]);
        let e = home.create("ops").unwrap_err();
        assert!(e.downcast_ref::<KbExists>().is_some(), "{e:#}");

        home.set_last_used("ops").unwrap();
        assert_eq!(home.last_used().as_deref(), Some("ops"));
        let renamed = home.rename("ops", "Operations").unwrap();
        assert_eq!(names(&home), ["default", "Operations"]);
        assert_eq!(home.last_used().as_deref(), Some("Operations"));
        assert!(
            home.rename("default", "Operations").is_err(),
            "no overwrite"
        );
        assert!(home
            .rename("nope", "x")
            .unwrap_err()
            .downcast_ref::<NoSuchKb>()
            .is_some());

        // A writer holds the KB: neither rename nor remove may move it away.
        let writer = WriterLock::try_acquire(&renamed).unwrap();
        assert!(home.remove("Operations").is_err());
        assert!(home.rename("Operations", "x").is_err());
        drop(writer);

        let moved = home.remove("Operations").unwrap();
        assert_eq!(names(&home), ["default"]);
        assert_eq!(home.last_used(), None);
        assert!(
            moved.starts_with(home.dir().join(REMOVED)),
            "{}",
            moved.display()
        );
        assert_eq!(
            std::fs::read_to_string(moved.join("interview-notes.txt")).unwrap(),
            "kept"
        );
        assert_eq!(
            home.name_of(&home.path_of("default").unwrap()).as_deref(),
            Some("default")
        );
        assert_eq!(home.name_of(tmp.path()), None);
    }

    #[test]
    fn an_unreadable_store_is_listed_with_its_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let home = KbHome::at(tmp.path());
        let dir = home.create("broken").unwrap();
        std::fs::write(dir.join(DB_FILE), "not a database").unwrap();
        let list = home.list().unwrap();
        assert_eq!(list.len(), 1);
        assert!(list[0].error.is_some(), "{:?}", list[0]);
    }
}
