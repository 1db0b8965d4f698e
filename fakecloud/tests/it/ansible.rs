//! cloudscale.ch's official Ansible modules (the `cloudscale_ch.cloud` collection bundled by
//! PyPI's `ansible`) create, update, re-run idempotently and delete every resource they manage
//! against the `fakecloud` binary, driven by `ci/ansible_acceptance.py` with the playbooks in
//! `ci/ansible/` (every module of the installed collection must run, or the script fails).
//!
//! Needs Ansible: set `ANSIBLE_PLAYBOOK` to the `ansible-playbook` of a venv with `ansible`
//! installed (`ci/test`'s venv, `target/cli-venv`). Without that variable the test says so and
//! passes, so a plain `cargo test` works offline.

use crate::support::run_acceptance;
use std::path::PathBuf;
use std::process::Command;

/// Fewer checks than this means playbooks or modules were skipped (a full run has 119).
const MIN_CHECKS: usize = 100;

#[test]
fn ansible_modules_complete_crud_on_every_resource() {
    let Some(ansible_playbook) = std::env::var_os("ANSIBLE_PLAYBOOK") else {
        eprintln!(
            "ansible acceptance skipped: set ANSIBLE_PLAYBOOK to the ansible-playbook of a venv \
             with ansible installed (e.g. target/cli-venv/bin/ansible-playbook)"
        );
        return;
    };
    let ansible_playbook = PathBuf::from(ansible_playbook);
    // The venv's own Python runs the script, as ci/test does; python3 when that is not there.
    let python = ansible_playbook
        .parent()
        .map(|bin| bin.join("python3"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("python3"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ci/ansible_acceptance.py");
    let mut script_run = Command::new(python);
    script_run
        .arg(script)
        .arg("--ansible")
        .arg(&ansible_playbook)
        .args(["--fakecloud", env!("CARGO_BIN_EXE_fakecloud")]);
    run_acceptance("Ansible acceptance", script_run, MIN_CHECKS);
}
