//! Shared helpers for the core crate's tests.
#![allow(dead_code)]

use std::path::PathBuf;

pub(crate) mod arb;
pub(crate) mod codec;
pub(crate) mod js_numbers;

/// Path of a file under `fixtures/reference/` (the reference vectors).
pub(crate) fn reference(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/reference")
        .join(path)
}

/// Reads a reference fixture as bytes.
pub(crate) fn read(path: &str) -> Vec<u8> {
    std::fs::read(reference(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// Lines of a JSON Lines fixture, split on `\n` only (one vector holds a raw U+2028).
pub(crate) fn lines(path: &str) -> Vec<String> {
    let text = String::from_utf8(read(path)).expect("fixture is UTF-8");
    text.split('\n')
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Each line parsed as JSON (key order kept).
pub(crate) fn json_lines(path: &str) -> Vec<serde_json::Value> {
    lines(path)
        .iter()
        .map(|l| serde_json::from_str(l).expect("fixture line is JSON"))
        .collect()
}
