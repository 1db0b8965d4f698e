//! The real kubectl clients the suites drive the embedded API server with.

use std::path::{Path, PathBuf};

/// The installed `kubectl.1.NN` clients, oldest first: next to the real path of the
/// `kubectl` on `PATH` (a dispatcher that picks the client matching the server's version).
/// Empty where there is none.
pub fn installed_clients() -> Vec<(u32, PathBuf)> {
    let Some(path) = std::env::var_os("PATH") else {
        return Vec::new();
    };
    let Some(dir) = std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .and_then(|k| std::fs::canonicalize(k).ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let minor = name.strip_prefix("kubectl.1.")?.parse().ok()?;
            Some((minor, e.path()))
        })
        .collect();
    found.sort();
    found
}
