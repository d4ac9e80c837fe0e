//! A folder of broken and hostile files beside two good ones, ingested by the `sextant`
//! binary as a user would: the ingest finishes (exit 0), every bad file is skipped with
//! its reason, the good files are searchable, memory and time stay bounded.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A PDF from its objects (numbered from 1, the first the catalog), with a valid xref.
fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut v = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    v.extend_from_slice(data);
    v.extend_from_slice(b"\nendstream");
    v
}

const FONT: &str = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";

/// One page showing `content` (a content stream, with its dictionary entries).
fn one_page_pdf(content_dict: &str, content: &[u8], catalog_extra: &str) -> Vec<u8> {
    pdf(&[
        format!("<< /Type /Catalog /Pages 2 0 R {catalog_extra} >>").into_bytes(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
        stream(content_dict, content),
        FONT.as_bytes().to_vec(),
    ])
}

fn text_pdf(text: &str) -> Vec<u8> {
    one_page_pdf(
        "",
        format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").as_bytes(),
        "",
    )
}

/// A FlateDecode stream that inflates to `size` bytes of zeros.
fn bomb(size: usize) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..size >> 20 {
        z.write_all(&zeros).unwrap();
    }
    z.finish().unwrap()
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn corpus(dir: &Path) {
    // The good ones.
    write(
        dir,
        "good/valves.md",
        "# Valve maintenance\n\nThe zephyr valve is serviced every 90 days at 42 Nm.\n",
    );
    write(
        dir,
        "good/pump.html",
        "<html><head><title>Pump</title></head><body><h1>Pump</h1><p>The quokka pump runs at 3000 rpm.</p></body></html>",
    );
    // Deep nesting.
    let n = 200_000;
    write(
        dir,
        "deep.html",
        format!("<h1>Deep</h1>{}x{}", "<div>".repeat(n), "</div>".repeat(n)),
    );
    write(
        dir,
        "deep.md",
        format!("# Deep\n\n{} bottom\n", ">".repeat(50_000)),
    );
    // One 8 MB line, and thousands of headings.
    write(dir, "long-line.txt", "a".repeat(8 << 20));
    let mut headings = String::new();
    for i in 0..5_000 {
        headings.push_str(&format!("## Heading {i}\n"));
    }
    write(dir, "headings.md", headings);
    // PDFs: a decompression bomb (2 GiB of zeros), a page tree and an outline that loop,
    // a truncated file, random bytes.
    write(
        dir,
        "bomb.pdf",
        one_page_pdf("/Filter /FlateDecode", &bomb(2 << 30), ""),
    );
    write(
        dir,
        "cyclic-pages.pdf",
        pdf(&[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>".to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
            stream("", b"BT /F1 12 Tf 72 720 Td (loop) Tj ET"),
            FONT.as_bytes().to_vec(),
        ]),
    );
    let mut cyclic_outline = one_page_pdf(
        "",
        b"BT /F1 12 Tf 72 720 Td (Outline loop) Tj ET",
        "/Outlines 6 0 R",
    );
    // Objects 6 and 7 appended after the xref: an incremental update with its own xref.
    let start = cyclic_outline.len();
    let o6 = b"6 0 obj\n<< /Type /Outlines /First 7 0 R /Last 7 0 R /Count 1 >>\nendobj\n".to_vec();
    let o7 = b"7 0 obj\n<< /Title (Again) /Parent 6 0 R /Next 7 0 R /Prev 7 0 R /First 7 0 R /Dest [3 0 R /Fit] >>\nendobj\n".to_vec();
    cyclic_outline.extend_from_slice(&o6);
    cyclic_outline.extend_from_slice(&o7);
    let xref = cyclic_outline.len();
    cyclic_outline.extend_from_slice(
        format!(
            "xref\n6 2\n{:010} 00000 n \n{:010} 00000 n \ntrailer\n<< /Size 8 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            start,
            start + o6.len()
        )
        .as_bytes(),
    );
    write(dir, "cyclic-outline.pdf", cyclic_outline);
    let whole = text_pdf("a page that ends too soon");
    write(dir, "truncated.pdf", &whole[..whole.len() / 2]);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<u8> = (0..256 * 1024)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect();
    write(dir, "random.pdf", &random);
    write(dir, "random.md", &random);
    write(dir, "random.html", &random);
    // Text that is not text.
    let mut bad_utf8 = b"# Broken\n\n".to_vec();
    bad_utf8.extend(std::iter::repeat_n([0xC3u8, 0x28], 5_000).flatten());
    write(dir, "invalid-utf8.md", bad_utf8);
    write(dir, "nul.txt", b"before\0after\0\0\0");
    // Not regular files: a FIFO, a link to itself, a link out of the folder.
    let fifo = std::ffi::CString::new(dir.join("fifo.md").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::os::unix::fs::symlink("loop.md", dir.join("loop.md")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", dir.join("outside.txt")).unwrap();
}

fn peak_child_rss_mb() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

#[test]
fn a_hostile_folder_costs_only_its_bad_files() {
    let docs = tempfile::tempdir().unwrap();
    std::fs::create_dir(docs.path().join("good")).unwrap();
    corpus(docs.path());
    let kb = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(["ingest", "--json", "--parse-timeout", "10", "--kb"])
        .arg(kb.path())
        .arg(docs.path())
        .output()
        .unwrap();
    let wall = start.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}\n{err}", o.status);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let skipped: Vec<(String, String)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s[0].as_str().unwrap().to_string(),
                s[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    println!(
        "ingest took {wall:?}, peak RSS of a child {:.0} MB",
        peak_child_rss_mb()
    );
    for (file, why) in &skipped {
        println!("skipped {file}: {why}");
        assert!(why.len() > 10, "{file}: {why:?}");
    }
    let skipped_names: Vec<&str> = skipped.iter().map(|s| s.0.as_str()).collect();
    for bad in [
        "bomb.pdf",
        "truncated.pdf",
        "random.pdf",
        "random.md",
        "random.html",
        "invalid-utf8.md",
        "nul.txt",
        "fifo.md",
        "loop.md",
        "outside.txt",
    ] {
        assert!(
            skipped_names.contains(&bad),
            "{bad} not skipped: {skipped:?}"
        );
    }
    let added: Vec<&str> = report["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for good in ["good/valves.md", "good/pump.html", "deep.md", "headings.md"] {
        assert!(
            added.contains(&good),
            "{good} not added: {added:?} {skipped:?}"
        );
    }
    // Every file is accounted for: added or skipped with a reason.
    assert_eq!(added.len() + skipped.len(), 18, "{added:?} {skipped:?}");
    assert!(
        !added.contains(&"outside.txt"),
        "a link out of the folder was followed"
    );
    for (q, file) in [
        ("zephyr valve service interval", "good/valves.md"),
        ("quokka pump speed", "good/pump.html"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_sextant"))
            .args(["search", "--json", "--kb"])
            .arg(kb.path())
            .arg(q)
            .output()
            .unwrap();
        assert!(o.status.success());
        let hits: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(hits["hits"][0]["file"], file, "{q}: {hits:#}");
    }
    assert!(
        peak_child_rss_mb() < 1024.0,
        "peak RSS {:.0} MB",
        peak_child_rss_mb()
    );
    assert!(wall < Duration::from_secs(150), "{wall:?}");
}
