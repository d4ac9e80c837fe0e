//! The library's modules import only lower layers (ARCHITECTURE.md, "Imports point
//! down"): read from the `crate::` paths of each module's production code, that is, the
//! text above its `#[cfg(test)]` module.

use std::collections::BTreeSet;
use std::path::Path;

/// Lowest first; a module may import its own layer's members only when listed together
/// here and not importing each other both ways (checked below).
const LAYERS: &[&[&str]] = &[
    &["models", "constrain", "jsonl", "stats"],
    &["llm", "embed", "schemas"],
    &["structured", "kb"],
    &["protocols"],
    &["eval", "service"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn production_text(text: &str) -> &str {
    match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    }
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn library_imports_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let path_re = regex::Regex::new(r"crate::([a-z_]+)").unwrap();
    let mut edges = BTreeSet::new();
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        let Some(from) = layer_of(&module) else {
            continue; // lib.rs, and the shells (cli, server, mcp), which sit on top
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for c in path_re.captures_iter(production_text(&text)) {
            let target = &c[1];
            if target == module {
                continue;
            }
            match layer_of(target) {
                Some(to) if to > from => wrong.push(format!(
                    "{} imports {target} (a higher layer)",
                    rel.display()
                )),
                Some(_) => {
                    edges.insert((module.clone(), target.to_string()));
                }
                None => {}
            }
        }
    }
    for (a, b) in &edges {
        if edges.contains(&(b.clone(), a.clone())) {
            wrong.push(format!("{a} and {b} import each other"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// ARCHITECTURE.md, "No production file over ~500 lines without a reason": a file longer
/// than that is named there, and its code above the unit tests is within the limit unless
/// ARCHITECTURE.md says why it is one unit.
#[test]
fn long_files_are_named_in_the_architecture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut files = Vec::new();
    rs_files(&root.join("src"), &mut files);
    rs_files(&root.join("src-tauri/src"), &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        if text.lines().count() <= 500 {
            continue;
        }
        let rel = file.strip_prefix(root.join("src")).unwrap_or(&file);
        let name = rel.to_string_lossy();
        if !map.contains(&format!("`{name}`")) {
            wrong.push(format!("{name} is not named in ARCHITECTURE.md"));
        }
        let code = production_text(&text).lines().count();
        if code > 500 && !map.contains(&format!("`{name}` (")) {
            wrong.push(format!(
                "{name} has {code} lines above its tests and no reason in ARCHITECTURE.md"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
