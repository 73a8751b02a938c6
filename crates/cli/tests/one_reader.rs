//! One reader: the library, the CLI, the Slurm plugin and the simulator
//! read kernel files only through `numakit::sys::SysRoot` (its size,
//! file-type and missing-file rules). This test scans their non-test
//! sources for the other ways to open a file or name a kernel path, and
//! fails on any use outside `crates/numakit/src/sys/` that [`ALLOWED`] does
//! not name with its reason. An entry that no longer matches fails too, so
//! the list stays the list of what is there.

use std::path::{Path, PathBuf};

/// The ways to reach a file without `SysRoot`, and absolute kernel paths.
const PATTERNS: &[&str] = &[
    "\"/proc",
    "\"/sys",
    "fs::read(",
    "fs::read_to_string(",
    "fs::read_dir(",
    "fs::read_link(",
    "fs::metadata(",
    "fs::symlink_metadata(",
    "File::open(",
    "OpenOptions::new(",
    "libc::open(",
    ".read_dir()",
    ".read_link()",
];

/// (file, pattern, why it is not a kernel read). Files are relative to the
/// workspace; every use of the pattern in that file is allowed.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "crates/numakit/src/files/mod.rs",
        "OpenOptions::new(",
        "FileLock's lock file; files a user names (read_named, bounded)",
    ),
    ("crates/numakit/src/files/mod.rs", "File::open(", "fsync of a folder numakit removed its own file from"),
    ("crates/numakit/src/files/mod.rs", "fs::metadata(", "same_file: whether two paths a user named are one file"),
    (
        "crates/numakit/src/files/shared.rs",
        "OpenOptions::new(",
        "a folder numakit or its users write (the ledger, report=DIR): the folder itself, names in it by openat",
    ),
    ("crates/numakit/src/daemon/service/mod.rs", "OpenOptions::new(", "the decision log, appended"),
    ("crates/numakit/src/tune/profiles.rs", "fs::read_dir(", "the profiles folder"),
    ("crates/numakit/src/daemon/ctl.rs", "fs::symlink_metadata(", "the control socket's path: is a socket there"),
    ("crates/numakit/src/place/iospec.rs", "fs::metadata(", "file:PATH, a user's file: its device, not its content"),
    ("crates/numakit/src/stats/cgroup/tree.rs", "\"/sys", "a cgroup path as typed, compared with a string, not opened"),
    ("crates/numakit/src/topo/allowed.rs", "\"/proc", "the label of where the model's allowed sets came from"),
    ("crates/cli/src/cmd/exporter.rs", "fs::metadata(", "the age of the daemon's status file (--daemon-status)"),
    ("crates/cli/src/cmd/manpages/notes.rs", "\"/proc", "the man pages' FILES sections name what is read"),
    ("crates/cli/src/cmd/manpages/notes.rs", "\"/sys", "the man pages' FILES sections name what is read"),
    ("crates/cli/src/start.rs", "libc::open(", "/dev/null for a closed standard descriptor at start-up"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether a source file holds only tests.
fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name == "proptests.rs" || name.ends_with("_tests.rs") || rel.contains("/tests/")
}

/// The code of a source file without its `#[cfg(test)] (pub(crate)) mod … { … }` blocks
/// (a top-level module ends at the first `}` in column 0) and comment
/// lines, as (line number, text).
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let next = lines.get(i + 1).copied().unwrap_or("");
        let module = next.strip_prefix("pub(crate) ").unwrap_or(next);
        if l.trim() == "#[cfg(test)]" && module.starts_with("mod ") && next.trim_end().ends_with('{') {
            while i < lines.len() && lines[i] != "}" {
                i += 1;
            }
            i += 1;
            continue;
        }
        if !l.trim_start().starts_with("//") {
            out.push((i + 1, l));
        }
        i += 1;
    }
    out
}

/// Every use of a pattern outside `sys/` and [`ALLOWED`], as
/// `file:line: pattern: text`; `allowed_seen` marks the entries used.
fn violations(rel: &str, text: &str, allowed_seen: &mut [bool]) -> Vec<String> {
    let mut out = Vec::new();
    if rel.starts_with("crates/numakit/src/sys/") || is_test_file(rel) {
        return out;
    }
    for (n, line) in code_lines(text) {
        for pat in PATTERNS {
            if !line.contains(pat) {
                continue;
            }
            match ALLOWED.iter().position(|(f, p, _)| *f == rel && p == pat) {
                Some(k) => allowed_seen[k] = true,
                None => out.push(format!("{rel}:{n}: {pat}: {}", line.trim())),
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("source folder").filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn kernel_files_are_read_through_sysroot_only() {
    let root = workspace();
    let mut files = Vec::new();
    for krate in ["numakit", "cli", "spank", "sim"] {
        sources(&root.join("crates").join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 100, "found only {} source files under {}", files.len(), root.display());
    let mut seen = vec![false; ALLOWED.len()];
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).expect("below the workspace").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(f).expect("read source");
        found.extend(violations(&rel, &text, &mut seen));
    }
    assert!(
        found.is_empty(),
        "read these through numakit::sys::SysRoot, or add them to ALLOWED with the reason:\n{}",
        found.join("\n")
    );
    let stale: Vec<String> =
        ALLOWED.iter().zip(&seen).filter(|(_, s)| !**s).map(|((f, p, _), _)| format!("{f}: {p}")).collect();
    assert!(stale.is_empty(), "ALLOWED entries that match nothing any more (remove them):\n{}", stale.join("\n"));
}

#[test]
fn a_planted_read_is_caught() {
    let mut seen = vec![false; ALLOWED.len()];
    let planted =
        "fn host() -> String {\n    std::fs::read_to_string(\"/proc/sys/kernel/hostname\").unwrap_or_default()\n}\n";
    let v = violations("crates/cli/src/cmd/run.rs", planted, &mut seen);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("crates/cli/src/cmd/run.rs:2: \"/proc: "), "{v:?}");
    assert!(v[1].starts_with("crates/cli/src/cmd/run.rs:2: fs::read_to_string(: "), "{v:?}");
    // The same in the reader itself, in a test module or in a comment is not a violation.
    assert!(violations("crates/numakit/src/sys/kernel.rs", planted, &mut seen).is_empty());
    let in_tests = format!("fn f() {{}}\n\n#[cfg(test)]\nmod tests {{\n{planted}}}\n");
    assert!(violations("crates/cli/src/cmd/run.rs", &in_tests, &mut seen).is_empty());
    assert!(violations("crates/cli/src/cmd/run.rs", "// std::fs::read(\"/sys/x\")\n", &mut seen).is_empty());
    // An allowed pattern in another file is not allowed.
    let v = violations("crates/cli/src/cmd/show.rs", "let t = std::fs::read_to_string(p);\n", &mut seen);
    assert_eq!(v.len(), 1, "{v:?}");
}
