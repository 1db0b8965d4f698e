//! Conformance check 61: the official Python CLI (`cloudscale-cli`) completes list, create,
//! show, update and delete for servers, server groups, networks, subnets and floating IPs
//! against the `fakecloud` binary, driven by `ci/cli_acceptance.py` (which starts the binary
//! with short delays and also covers load balancers over raw HTTP, since the CLI has none).
//! The binary serves the same router as the library, so one run covers both; `ci/test`
//! runs this suite beside the scenarios' (the CLI's process start-ups wait, mostly).
//!
//! Needs the CLI: `ci/test` installs it into a venv and sets `CLOUDSCALE_CLI` to its
//! `cloudscale` executable. Without that variable the test says so and passes, so a plain
//! `cargo test` works offline; CI always runs it.

use crate::support::run_acceptance;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn check_61_python_cli_completes_crud_on_every_resource() {
    let Some(cli) = std::env::var_os("CLOUDSCALE_CLI") else {
        eprintln!(
            "check_61 skipped: set CLOUDSCALE_CLI to a cloudscale-cli executable (ci/test does)"
        );
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ci/cli_acceptance.py");
    let mut run = Command::new("python3");
    run.arg(script)
        .arg("--cli")
        .arg(cli)
        .args(["--fakecloud", env!("CARGO_BIN_EXE_fakecloud")]);
    // Over 300 checks in a full run.
    run_acceptance("CLI acceptance", run, 301);
}
