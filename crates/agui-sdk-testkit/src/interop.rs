//! Whether the reference implementations the interoperability tests run against are
//! installed (`scripts/setup-interop.sh`). Without the packages an interop test prints
//! one line saying how to run it, and returns; under `AGUI_REQUIRE_INTEROP=1` (set by
//! `./scripts/test-all.sh`, and so CI) a missing package is a failure, never a skip.
//!
//! This file uses only `std`: `agui-sdk-core`'s tests include it by `#[path]` (see the
//! crate docs).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository's `interop/` folder.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

/// Whether `AGUI_REQUIRE_INTEROP` is set (to anything but empty or `0`).
pub fn required() -> bool {
    std::env::var_os("AGUI_REQUIRE_INTEROP").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `true` when the reference packages are installed. Otherwise: a failure when
/// `AGUI_REQUIRE_INTEROP` is set, else one printed line and `false` (the test returns).
pub fn ready(test: &str) -> bool {
    let d = dir();
    let installed = d.join("node_modules/@ag-ui/client/package.json").is_file()
        && d.join("node_modules/@ag-ui/proto/package.json").is_file()
        && d.join(".venv/bin/python").is_file();
    if installed {
        return true;
    }
    assert!(
        !required(),
        "{test}: the reference packages are not installed (AGUI_REQUIRE_INTEROP is set): run scripts/setup-interop.sh"
    );
    println!(
        "skipped {test}: the reference packages are not installed; run scripts/setup-interop.sh, or ./scripts/test-all.sh, to run it"
    );
    false
}
