//! OCR of scanned PDF pages with Tesseract (Debian's `tesseract-ocr`), run as a program
//! rather than linked: it is optional at run time. A PDF page with no text layer is the
//! image a scanner stored; that image is handed to `tesseract stdin stdout`, and its
//! text becomes the page's. Without Tesseract the page is left unread, with a note that
//! names the package.
//!
//! `SEXTANT_TESSERACT` names the program (empty: OCR off); `SEXTANT_OCR_LANG` the
//! languages (Tesseract's codes, default `eng`, e.g. `deu+eng`).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};

/// What to do when Tesseract is missing.
pub const INSTALL_HINT: &str =
    "install Tesseract to read them (Debian/Ubuntu: apt install tesseract-ocr; `make app` does)";

/// The Tesseract program: `SEXTANT_TESSERACT`, else `tesseract` on the PATH.
pub fn tesseract() -> Option<PathBuf> {
    if let Some(named) = std::env::var_os("SEXTANT_TESSERACT") {
        let path = PathBuf::from(named);
        return (!path.as_os_str().is_empty() && path.is_file()).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("tesseract"))
        .find(|p| p.is_file())
}

/// An image file's text, read by Tesseract: an error names the package when it is
/// missing, or says the image holds no text.
pub fn parse_image(bytes: &[u8]) -> Result<String> {
    let Some(program) = tesseract() else {
        bail!("an image, which is read with OCR: {INSTALL_HINT}");
    };
    let text = image_text(&program, bytes)?;
    if text.trim().is_empty() {
        bail!("no text found in the image (OCR)");
    }
    Ok(text)
}

/// The text Tesseract reads in an image (any format Leptonica reads: JPEG, PNG, PNM,
/// TIFF…), with a paragraph's lines joined.
pub fn image_text(program: &PathBuf, image: &[u8]) -> Result<String> {
    let lang = std::env::var("SEXTANT_OCR_LANG").unwrap_or_else(|_| "eng".into());
    let mut child = Command::new(program)
        .args(["stdin", "stdout", "-l", &lang])
        // One page at a time on a small machine: Tesseract's own threads only contend.
        .env("OMP_THREAD_LIMIT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", program.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    let image = image.to_vec();
    // Written from another thread: Tesseract may start writing before it has read all.
    let writer = std::thread::spawn(move || stdin.write_all(&image));
    let out = child.wait_with_output()?;
    let _ = writer.join();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!(
            "Tesseract failed ({}): {}",
            out.status,
            err.lines().last().unwrap_or("no message")
        );
    }
    Ok(paragraphs(&String::from_utf8_lossy(&out.stdout)))
}

/// Tesseract's lines joined into paragraphs (it breaks lines where the scan did).
fn paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(|p| super::collapse_ws(p.trim_matches('\u{c}')))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The largest image on a PDF page as a file Tesseract reads: JPEG as stored, 8-bit gray
/// or RGB and 1-bit gray samples as PNM. None when the page has no image; an error names
/// an encoding that cannot be handed on (CCITT fax, JBIG2, …).
pub fn page_image(doc: &lopdf::Document, page: lopdf::ObjectId) -> Result<Option<Vec<u8>>> {
    let Ok(images) = doc.get_page_images(page) else {
        return Ok(None);
    };
    let Some(image) = images.iter().max_by_key(|i| i.width * i.height) else {
        return Ok(None);
    };
    let filters = image.filters.clone().unwrap_or_default();
    let (w, h) = (image.width, image.height);
    match filters.last().map(String::as_str) {
        Some("DCTDecode") | Some("JPXDecode") if filters.len() == 1 => {
            return Ok(Some(image.content.to_vec()))
        }
        None | Some("FlateDecode") | Some("LZWDecode") => {}
        Some(other) => bail!("its image is {other}-encoded, which OCR here cannot read"),
    }
    let samples = doc
        .get_object(image.id)?
        .as_stream()?
        .decompressed_content()
        .unwrap_or_else(|_| image.content.to_vec());
    let gray = image.color_space.as_deref() == Some("DeviceGray");
    let header = |kind: &str| format!("{kind}\n{w} {h}\n").into_bytes();
    let pnm = match (image.bits_per_component, gray) {
        (Some(8), true) => [header("P5"), b"255\n".to_vec(), samples].concat(),
        (Some(8), false) if image.color_space.as_deref() == Some("DeviceRGB") => {
            [header("P6"), b"255\n".to_vec(), samples].concat()
        }
        // PDF's 1-bit gray is 0 = black; PBM's is 1 = black.
        (Some(1), true) => [header("P4"), samples.iter().map(|b| !b).collect()].concat(),
        (bits, _) => {
            return Err(anyhow!(
                "its image has {} bits per sample in {}, which OCR here cannot read",
                bits.unwrap_or(0),
                image
                    .color_space
                    .as_deref()
                    .unwrap_or("an unknown colour space")
            ))
        }
    };
    Ok(Some(pnm))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tesseract_s_lines_become_paragraphs() {
        assert_eq!(
            paragraphs("Close valve V12 before\nyou stop pump P3.\n\nWait.\n\u{c}"),
            "Close valve V12 before you stop pump P3.\n\nWait."
        );
    }
}
