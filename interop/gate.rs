//! Whether the reference implementations the interoperability tests run against are
//! installed (`scripts/setup-interop.sh`). Shared by every crate's interop tests
//! (`#[path]`-included), so that plain `cargo test` on a fresh clone passes: without
//! the packages an interop test prints one line saying how to run it, and returns.
//! `./scripts/test-all.sh` (and so CI) sets `AGUI_REQUIRE_INTEROP=1`, under which a
//! missing package is a failure, never a skip.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository's `interop/` folder.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop")
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
    let required =
        std::env::var_os("AGUI_REQUIRE_INTEROP").is_some_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{test}: the reference packages are not installed (AGUI_REQUIRE_INTEROP is set): run scripts/setup-interop.sh"
    );
    println!(
        "skipped {test}: the reference packages are not installed; run scripts/setup-interop.sh, or ./scripts/test-all.sh, to run it"
    );
    false
}
