//! The official Kubernetes Python client (`kubernetes` on PyPI) against the testbed's
//! embedded API server, driven by `ci/kube_python_client.py`: CRUD of every kind discovery
//! lists (typed API classes), the four patch types, a watch from a list's resourceVersion,
//! an informer-like list-and-watch loop across server-side timeouts, `create_from_yaml`, and
//! the Status bodies of 404, 409 and 422 errors.
//!
//! Needs a Python with `kubernetes` installed: `ci/test` installs it into target/cli-venv
//! and sets `KUBE_PYTHON` to that venv's `python`. Without the variable the test says so
//! and passes, so a plain `cargo test` works offline.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn official_python_client_works_against_the_testbed() {
    let Some(python) = std::env::var_os("KUBE_PYTHON") else {
        eprintln!(
            "kube_python skipped: set KUBE_PYTHON to a python with the `kubernetes` package (ci/test does)"
        );
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ci/kube_python_client.py");
    let output = Command::new(python)
        .arg(script)
        .args(["--testbed", env!("CARGO_BIN_EXE_testbed")])
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && failures.is_empty(),
        "Python client checks failed ({summary}):\n{}\nstderr:\n{}",
        failures.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    // A run that checked little must not pass: every served kind's CRUD alone is over 150.
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 200, "too few checks ran: {summary}");
}
