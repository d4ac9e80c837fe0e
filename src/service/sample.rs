//! The sample knowledge base (`examples/kb`), compiled in so a first run can offer it
//! wherever the binary is installed: written out under the data directory on request,
//! then ingested like any folder.

use std::path::PathBuf;

use include_dir::{include_dir, Dir};

use super::ServiceError;

static SAMPLE_KB: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/examples/kb");

/// Writes the sample documents to `<data dir>/sample-kb` (replacing earlier copies of
/// them; other files there are left alone) and returns that folder.
pub fn write_sample(data_dir: &std::path::Path) -> Result<PathBuf, ServiceError> {
    let dir = data_dir.join("sample-kb");
    let io = |what: &str, e: std::io::Error| {
        ServiceError::Internal(anyhow::anyhow!(
            "cannot {what} the sample knowledge base in {}: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(&dir).map_err(|e| io("create", e))?;
    SAMPLE_KB.extract(&dir).map_err(|e| io("write", e))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_written_out_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = write_sample(tmp.path()).unwrap();
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kb");
        for rel in ["handbook/oncall-guide.pdf", "security/tls-certificates.md"] {
            assert_eq!(
                std::fs::read(dir.join(rel)).unwrap(),
                std::fs::read(src.join(rel)).unwrap(),
                "{rel}"
            );
        }
        // A second first run overwrites its own files without failing.
        write_sample(tmp.path()).unwrap();
    }
}
