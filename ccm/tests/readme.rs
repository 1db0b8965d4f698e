//! The flag table in `ccm/README.md` is the one the binary has: every flag of `Options` has
//! a row, with its default where it has one.

use ccm::options::Options;
use clap::CommandFactory;

#[test]
fn every_flag_is_in_the_readme_with_its_default() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
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
