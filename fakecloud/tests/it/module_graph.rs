//! The modules of the workspace's crates must not import each other in a circle: in
//! fakecloud models below handlers, handlers below the router; in the CCM the service
//! controller's pure core, cloud edge and reconcile apart; in scenarios the API server's
//! parts, the simulation's and the property suite's. Parses the sources (`crate::x` and
//! `super::x` paths, `use` trees included) and fails on a cycle, printing it.
//!
//! Nodes are top-level modules (`src/x.rs`, `src/x/…`), with the modules a crate lists in
//! its split (`api` in fakecloud, …) split into their submodules (`api::servers`, …) so that
//! a cycle among those counts too. Unit tests (`tests.rs`, `mod tests`) are not part of the
//! graph: a test may use any module it likes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// fakecloud's split. `model` is one node: the store holds the records and the records
/// render through the store's `Ctx`, a recursion by design (like a struct and its fields);
/// what matters is that nothing below the model reaches up into it and the model reaches no
/// HTTP layer.
const SPLIT: &[&str] = &["api"];

/// The other crates of the workspace, each with its split (longest prefix wins).
const OTHER_CRATES: &[(&str, &[&str])] = &[
    (
        "ccm",
        &[
            "service",
            "service::pure",
            "service::cloud",
            "service::reconcile",
            "node",
        ],
    ),
    (
        "scenarios",
        &["apiserver", "sim", "sim::props", "testbed", "workloads"],
    ),
];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                rs_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/model/load_balancers/pools.rs` → `[model,
/// load_balancers, pools]`; `mod.rs` names its directory; `lib.rs`/`main.rs` are the root.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

/// The graph node a module path belongs to (empty: the crate root, not a node): the
/// longest split prefix of `path` and the segment after it, else its first segment.
fn node(path: &[String], split: &[&str]) -> Option<String> {
    let first = path.first()?;
    let joined = path.join("::");
    let prefix = split
        .iter()
        .filter(|s| joined == **s || joined.starts_with(&format!("{s}::")))
        .max_by_key(|s| s.len());
    match prefix {
        Some(prefix) => {
            let depth = prefix.split("::").count();
            Some(match path.get(depth) {
                Some(next) => format!("{prefix}::{next}"),
                None => prefix.to_string(),
            })
        }
        None => Some(first.clone()),
    }
}

/// Source without comments (line and block) and string literals, so that paths in docs
/// and messages do not count, in ASCII.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            // Raw strings are not used for paths; plain ones may hold escaped quotes.
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('"', '\'', 'x'); lifetimes are left alone.
            let end = b[i + 1..]
                .iter()
                .skip(1)
                .position(|c| *c == b'\'')
                .map(|p| i + 2 + p + 1)
                .unwrap_or(b.len());
            i = end;
            out.push_str("' '");
        } else {
            // Non-ASCII text outside comments and strings (a `≥` in an identifier-free
            // spot) becomes a space: the output stays ASCII, so byte offsets are char ones.
            out.push(if b[i].is_ascii() { b[i] as char } else { ' ' });
            i += 1;
        }
    }
    out
}

/// Every module path a source refers to: `crate::a::b…`, `super::…` (resolved against
/// `here`), and `use crate::{a, b::c}` trees. Paths are returned from the crate root.
fn references(src: &str, here: &[String], is_mod_file: bool) -> Vec<Vec<String>> {
    let text = strip(src);
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let at_word = i == 0 || !ident(bytes[i - 1]);
        let (prefix, base): (&str, Option<Vec<String>>) =
            if at_word && text[i..].starts_with("crate::") {
                ("crate::", Some(Vec::new()))
            } else if at_word && text[i..].starts_with("super::") {
                // `super` in `a/b.rs` is `a`; in `a/mod.rs` (module `a`) it is the parent of `a`.
                let mut p = here.to_vec();
                let _ = is_mod_file;
                p.pop();
                ("super::", Some(p))
            } else {
                (".", None)
            };
        let Some(mut base) = base else {
            i += 1;
            continue;
        };
        i += prefix.len();
        // Further `super::` hops.
        while text[i..].starts_with("super::") {
            base.pop();
            i += "super::".len();
        }
        // Leading `a::b::` segments, then a name or a `{…}` tree.
        loop {
            let n = text[i..].bytes().take_while(|c| ident(*c)).count();
            if n > 0 && text[i + n..].starts_with("::") {
                base.push(text[i..i + n].to_string());
                i += n + 2;
            } else {
                break;
            }
        }
        if text[i..].starts_with('{') {
            // A use tree: the first segment of every entry at its top level.
            let mut depth = 0;
            let mut segment_start = true;
            while i < bytes.len() {
                let c = bytes[i];
                match c {
                    b'{' => {
                        depth += 1;
                        segment_start = depth == 1;
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' => segment_start = depth == 1,
                    _ if segment_start && depth == 1 && ident(c) => {
                        let start = i;
                        while i < bytes.len() && ident(bytes[i]) {
                            i += 1;
                        }
                        let mut p = base.clone();
                        p.push(text[start..i].to_string());
                        out.push(p);
                        segment_start = false;
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        } else {
            let n = text[i..].bytes().take_while(|c| ident(*c)).count();
            let mut p = base;
            if n > 0 {
                p.push(text[i..i + n].to_string());
                i += n;
            }
            out.push(p);
        }
    }
    out
}

/// fakecloud's graph (`MODULE_GRAPH_SRC` points at another tree, e.g. an old revision, to
/// print its graph).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = std::env::var_os("MODULE_GRAPH_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    graph_of(&src, SPLIT)
}

/// The graph of the crate whose sources are in `src`.
fn graph_of(src: &Path, split: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    files.sort();
    // Unit tests are not part of the graph.
    files.retain(|f| !module_path(src, f).iter().any(|p| p == "tests"));
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| node(&module_path(src, f), split))
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let here = module_path(src, f);
        let Some(from) = node(&here, split) else {
            continue;
        };
        edges.entry(from.clone()).or_default();
        let is_mod = f.file_name().is_some_and(|n| n == "mod.rs");
        let mut text = std::fs::read_to_string(f).expect("read");
        // Inline unit tests (`use super::*` there means this module) are not dependencies.
        if let Some(at) = text.find("#[cfg(test)]\nmod tests") {
            text.truncate(at);
        }
        // A module uses the children it declares (`mod x;`), often without a path; a split
        // module's declarations only make its submodules nodes of their own (they share
        // its vocabulary: the children of `node` use `node::ServerDirectory`).
        let split_parent = split.contains(&here.join("::").as_str());
        let children = strip(&text)
            .lines()
            .filter_map(|l| {
                // Any visibility: a folder's face keeps its parts private or `pub(crate)`.
                let l = l.trim();
                let l = ["pub(crate) ", "pub(super) ", "pub "]
                    .iter()
                    .find_map(|v| l.strip_prefix(v))
                    .unwrap_or(l);
                let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
                let mut p = here.clone();
                p.push(name.trim().to_string());
                Some(p)
            })
            .filter(|_| !split_parent)
            .collect::<Vec<_>>();
        for target in references(&text, &here, is_mod).into_iter().chain(children) {
            let Some(to) = node(&target, split) else {
                continue;
            };
            // Only modules of this crate (`crate::Config` is a re-export, not a node).
            let to = if modules.contains(&to) {
                to
            } else if let Some(first) = target.first().filter(|t| modules.contains(*t)) {
                first.clone()
            } else {
                continue;
            };
            if to != from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    edges
}

/// A cycle, if any, as the list of its nodes (first repeated at the end).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if !state.contains_key(n.as_str()) {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn module_imports_have_no_cycle() {
    let edges = graph();
    for (from, to) in &edges {
        let to: Vec<&str> = to.iter().map(String::as_str).collect();
        println!("{from} -> {}", to.join(", "));
    }
    if let Some(cycle) = find_cycle(&edges) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_other_crates_modules_have_no_cycle() {
    for (krate, split) in OTHER_CRATES {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(krate)
            .join("src");
        let edges = graph_of(&src, split);
        assert!(
            edges.len() > 10,
            "{krate}: too few modules found in {}",
            src.display()
        );
        if let Some(cycle) = find_cycle(&edges) {
            panic!("{krate}: import cycle: {}", cycle.join(" -> "));
        }
    }
}

/// The CCM service controller's layers, each with the layers it must never reach, directly
/// or through other modules: the pure core neither the cloud edge nor the reconcile, the
/// cloud edge not the reconcile.
const CCM_LAYERS: &[(&str, &[&str])] = &[
    ("service::pure", &["service::cloud", "service::reconcile"]),
    ("service::cloud", &["service::reconcile"]),
];

/// A path from `from` to a module under one of `forbidden`, if the graph has one.
fn path_to(
    edges: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    forbidden: &[&str],
) -> Option<Vec<String>> {
    let under = |m: &str, p: &str| m == p || m.starts_with(&format!("{p}::"));
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![from.to_string()]];
    while let Some(path) = stack.pop() {
        let last = path.last()?.clone();
        if forbidden.iter().any(|f| under(&last, f)) {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for next in edges.get(&last).into_iter().flatten() {
            let mut longer = path.clone();
            longer.push(next.clone());
            stack.push(longer);
        }
    }
    None
}

#[test]
fn the_ccm_service_layers_only_reach_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ccm/src");
    let split = OTHER_CRATES
        .iter()
        .find(|(k, _)| *k == "ccm")
        .map(|(_, s)| *s)
        .expect("ccm's split");
    let edges = graph_of(&src, split);
    for (layer, forbidden) in CCM_LAYERS {
        let members: Vec<&String> = edges
            .keys()
            .filter(|m| m.starts_with(&format!("{layer}::")))
            .collect();
        assert!(
            members.len() >= 3,
            "ccm: too few modules in {layer}: {members:?}"
        );
        for m in members {
            if let Some(path) = path_to(&edges, m, forbidden) {
                panic!("ccm: {layer} reaches upwards: {}", path.join(" -> "));
            }
        }
    }
}

#[test]
fn a_layer_reaching_upwards_is_found_through_other_modules() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("service::pure::plan", vec!["service::pure::model", "node"]),
        ("node", vec!["service::reconcile::state"]),
        ("service::pure::model", vec![]),
    ]
    .into_iter()
    .map(|(f, t)| (f.to_string(), t.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        path_to(&edges, "service::pure::plan", &["service::reconcile"]),
        Some(vec![
            "service::pure::plan".to_string(),
            "node".to_string(),
            "service::reconcile::state".to_string()
        ])
    );
    assert_eq!(
        path_to(&edges, "service::pure::model", &["service::reconcile"]),
        None
    );
}

#[test]
fn model_does_not_import_http_layers() {
    let edges = graph();
    for (from, to) in edges.iter().filter(|(f, _)| f.starts_with("model")) {
        let bad: Vec<&String> = to
            .iter()
            .filter(|t| t.starts_with("api") || ["app", "admin", "server"].contains(&t.as_str()))
            .collect();
        assert!(bad.is_empty(), "{from} imports {bad:?}");
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    for f in files {
        let text = strip(&std::fs::read_to_string(&f).expect("read"));
        assert!(!text.contains("axum"), "{} uses axum", f.display());
    }
}

#[test]
fn the_parser_sees_a_planted_cycle() {
    let here = vec!["model".to_string(), "servers".to_string()];
    let refs = references(
        "use crate::{app::App, state};\n// crate::admin\nfn f() { super::store::x(); \"crate::api\"; }",
        &here,
        false,
    );
    let flat: Vec<String> = refs.iter().map(|r| r.join("::")).collect();
    assert_eq!(flat, ["app", "state", "model::store::x"]);
    let tree = references("use crate::model::{a::B, c};", &here, false);
    let flat: Vec<String> = tree.iter().map(|r| r.join("::")).collect();
    assert_eq!(flat, ["model::a", "model::c"]);
    let path = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
    let split = ["sim", "sim::props"];
    assert_eq!(
        node(&path("sim::props::play"), &split).as_deref(),
        Some("sim::props::play")
    );
    assert_eq!(
        node(&path("sim::check"), &split).as_deref(),
        Some("sim::check")
    );
    assert_eq!(
        node(&path("apiserver::http"), &split).as_deref(),
        Some("apiserver")
    );
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        find_cycle(&edges),
        Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
    );
}
