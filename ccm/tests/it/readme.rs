//! The reference tables in `ccm/README.md` are the code's: every flag of `Options` has a
//! row with its default, and the annotation table is `ccm::service::pure::reference::markdown()`
//! (`UPDATE_README=1 cargo test -p ccm --test it readme::` rewrites it); the metrics table of
//! `deploy/README.md` is `ccm::metrics::markdown()` (the same variable rewrites it).

use ccm::options::Options;
use clap::CommandFactory;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
const BEGIN: &str = "<!-- annotations:begin (generated from src/service/pure/reference.rs) -->";
const END: &str = "<!-- annotations:end -->";

/// Checks (or, with `UPDATE_README` set, rewrites) the generated block of `path` between
/// `begin` and `end`.
fn generated_block(path: &str, begin: &str, end: &str, table: &str) {
    let text = std::fs::read_to_string(path).expect("README");
    let (Some(b), Some(e)) = (text.find(begin), text.find(end)) else {
        panic!("{path} has no {begin} … {end} block");
    };
    let start = b + begin.len();
    if std::env::var_os("UPDATE_README").is_some() {
        let updated = format!("{}\n{}{}", &text[..start], table, &text[e..]);
        std::fs::write(path, updated).expect("write README");
        return;
    }
    assert_eq!(
        text[start..e].trim(),
        table.trim(),
        "the generated table in {path} differs from the code; rerun with UPDATE_README=1"
    );
}

#[test]
fn the_annotation_table_is_the_codes() {
    generated_block(
        README,
        BEGIN,
        END,
        &ccm::service::pure::reference::markdown(),
    );
}

#[test]
fn the_metrics_table_is_the_codes() {
    generated_block(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/README.md"),
        "<!-- metrics:begin (generated from ccm/src/metrics/families.rs) -->",
        "<!-- metrics:end -->",
        &ccm::metrics::markdown(),
    );
}

#[test]
fn every_flag_is_in_the_readme_with_its_default() {
    let readme = std::fs::read_to_string(README).expect("README.md");
    let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `--")).collect();
    let mut missing = Vec::new();
    for arg in Options::command().get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        if ["help", "version"].contains(&long) {
            continue;
        }
        let flag = format!("`--{long}");
        let Some(row) = rows.iter().find(|r| {
            r.split('|').nth(1).is_some_and(|cell| {
                cell.contains(&format!("{flag}`")) || cell.contains(&format!("{flag} "))
            })
        }) else {
            missing.push(format!("--{long}: no row"));
            continue;
        };
        for default in arg.get_default_values() {
            let default = format!("`{}`", default.to_string_lossy());
            if !row.contains(&default) {
                missing.push(format!("--{long}: default {default} not in {row}"));
            }
        }
    }
    assert!(missing.is_empty(), "ccm/README.md flag table: {missing:#?}");
}
