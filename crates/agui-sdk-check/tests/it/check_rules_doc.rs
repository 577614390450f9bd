//! `docs/check-rules.md` lists every rule id the code can report, and nothing else.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The string literals of `text` shaped like a rule id (`section/name`).
fn ids_in_code(text: &str, out: &mut BTreeSet<String>) {
    for (i, piece) in text.split('"').enumerate() {
        let is_id = i % 2 == 1
            && piece.split_once('/').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && !b.contains('/')
                    && piece
                        .bytes()
                        .all(|c| c.is_ascii_lowercase() || c == b'-' || c == b'/')
            });
        if is_id {
            out.insert(piece.to_owned());
        }
    }
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_rule_id_is_documented_and_every_documented_id_exists() {
    let r = root();
    let mut files = Vec::new();
    rs_files(&r.join("crates/agui-sdk-check/src"), &mut files);
    for f in [
        "crates/agui-sdk-core/src/semantics/verify/rule.rs",
        "crates/agui-sdk-core/src/semantics/inbound/mod.rs",
        "crates/agui-sdk-core/src/semantics/chunks.rs",
        "crates/agui-sdk-client/src/error.rs",
    ] {
        files.push(r.join(f));
    }
    let mut code = BTreeSet::new();
    for f in &files {
        ids_in_code(&std::fs::read_to_string(f).unwrap(), &mut code);
    }
    // Media types and the like are not rule ids.
    code.retain(|id| !id.starts_with("text/") && !id.starts_with("application/"));
    assert!(code.len() > 40, "{code:?}");
    let doc = std::fs::read_to_string(r.join("docs/check-rules.md")).unwrap();
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(id, _)| id.to_owned())
        .filter(|id| id.contains('/'))
        .collect();
    let undocumented: Vec<_> = code.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "ids missing from docs/check-rules.md: {undocumented:?}"
    );
    let stale: Vec<_> = documented.difference(&code).collect();
    assert!(
        stale.is_empty(),
        "documented ids no code reports: {stale:?}"
    );
}
