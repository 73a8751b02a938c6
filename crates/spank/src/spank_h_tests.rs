//! `ffi.rs` against every supported Slurm's own `slurm/spank.h` and
//! `slurm/slurm_errno.h`: the `enum spank_item` values of [`Item`], the
//! `enum spank_context` values [`context_of`] reads, `struct spank_option`
//! ([`SpankOption`]), the option callback's type, the return codes, and the
//! prototype of every function ffi.rs looks up (each one's Rust type is the
//! alias beside its name in `Api`). The headers are Debian's
//! (`/usr/include/slurm`, libslurm-dev, when installed) and those in the
//! Slurm source tarballs of `../shared/vendor/slurm/` (or the folder
//! `NUMAKIT_SLURM_TARBALLS` names), read with `tar` without unpacking the
//! rest. Without any tarball the test says so and checks Debian's alone,
//! except with `CI=true`, where that fails.
//!
//! A release that changes one of these fails here, naming the release, the
//! declaration and both texts: ffi.rs must then follow, per release if
//! need be, before the plugin is built for it.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ffi::{context_of, Context, Item, SpankOption};

/// Every [`Item`] ffi.rs declares, with its name in spank.h (the match is
/// exhaustive: a new variant does not compile until it is named here).
fn c_name(item: Item) -> &'static str {
    match item {
        Item::JobUid => "S_JOB_UID",
        Item::JobGid => "S_JOB_GID",
        Item::JobId => "S_JOB_ID",
        Item::JobStepId => "S_JOB_STEPID",
        Item::JobNnodes => "S_JOB_NNODES",
        Item::JobNodeId => "S_JOB_NODEID",
        Item::JobLocalTaskCount => "S_JOB_LOCAL_TASK_COUNT",
        Item::JobTotalTaskCount => "S_JOB_TOTAL_TASK_COUNT",
        Item::JobNcpus => "S_JOB_NCPUS",
        Item::TaskId => "S_TASK_ID",
        Item::TaskGlobalId => "S_TASK_GLOBAL_ID",
        Item::TaskExitStatus => "S_TASK_EXIT_STATUS",
        Item::TaskPid => "S_TASK_PID",
        Item::SlurmVersion => "S_SLURM_VERSION",
        Item::StepCpusPerTask => "S_STEP_CPUS_PER_TASK",
        Item::StepAllocMem => "S_STEP_ALLOC_MEM",
        Item::JobArrayId => "S_JOB_ARRAY_ID",
        Item::JobArrayTaskId => "S_JOB_ARRAY_TASK_ID",
    }
}

const ITEMS: [Item; 18] = [
    Item::JobUid,
    Item::JobGid,
    Item::JobId,
    Item::JobStepId,
    Item::JobNnodes,
    Item::JobNodeId,
    Item::JobLocalTaskCount,
    Item::JobTotalTaskCount,
    Item::JobNcpus,
    Item::TaskId,
    Item::TaskGlobalId,
    Item::TaskExitStatus,
    Item::TaskPid,
    Item::SlurmVersion,
    Item::StepCpusPerTask,
    Item::StepAllocMem,
    Item::JobArrayId,
    Item::JobArrayTaskId,
];

/// What `enum spank_context`'s names mean to [`context_of`].
const CONTEXTS: [(&str, Context); 6] = [
    ("S_CTX_ERROR", Context::Error),
    ("S_CTX_LOCAL", Context::Local),
    ("S_CTX_REMOTE", Context::Remote),
    ("S_CTX_ALLOCATOR", Context::Allocator),
    ("S_CTX_SLURMD", Context::Slurmd),
    ("S_CTX_JOB_SCRIPT", Context::JobScript),
];

/// The declarations ffi.rs copied, as [`normalize`] writes them (22.05's
/// text): the name they are found by, and the declaration.
const DECLARATIONS: [(&str, &str); 15] = [
    ("spank_t", "typedef struct spank_handle*spank_t"),
    ("spank_err_t", "typedef slurm_err_t spank_err_t"),
    ("spank_opt_cb_f", "typedef int(*spank_opt_cb_f)(int val,const char*optarg,int remote)"),
    ("spank_option", "struct spank_option{char*name;char*arginfo;char*usage;int has_arg;int val;spank_opt_cb_f cb;}"),
    ("spank_context", "spank_context_t spank_context(void)"),
    ("spank_option_register", "spank_err_t spank_option_register(spank_t spank,struct spank_option*opt)"),
    ("spank_get_item", "spank_err_t spank_get_item(spank_t spank,spank_item_t item,...)"),
    ("spank_getenv", "spank_err_t spank_getenv(spank_t spank,const char*var,char*buf,int len)"),
    ("spank_setenv", "spank_err_t spank_setenv(spank_t spank,const char*var,const char*val,int overwrite)"),
    ("slurm_info", "void slurm_info(const char*format,...)"),
    ("slurm_error", "void slurm_error(const char*format,...)"),
    ("slurm_verbose", "void slurm_verbose(const char*format,...)"),
    ("slurm_debug", "void slurm_debug(const char*format,...)"),
    ("slurm_spank_log", "void slurm_spank_log(const char*,...)"),
    ("spank_item_t", "typedef enum spank_item spank_item_t"),
];

/// Comments, `extern`, `__attribute__ ((...))` and blanks taken out of C
/// text: words keep one space between them, nothing else does.
fn normalize(c: &str) -> String {
    let mut text = String::new();
    let mut rest = c;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        text.push(' ');
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    text.push_str(rest);
    let text: String = text.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    let mut pending_space = false;
    for ch in text.chars() {
        if ch.is_whitespace() {
            pending_space = true;
            continue;
        }
        let word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
        if pending_space && out.chars().last().is_some_and(word) && word(ch) {
            out.push(' ');
        }
        pending_space = false;
        out.push(ch);
    }
    // `__attribute__((...))` with its nested parentheses, and `extern `.
    while let Some(i) = out.find("__attribute__((") {
        let mut depth = 0;
        let end = out[i..].char_indices().find_map(|(j, c)| {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + j + 1);
                    }
                }
                _ => {}
            }
            None
        });
        out.replace_range(i..end.unwrap_or(out.len()), "");
    }
    // C++'s guard: `extern "C" {` (its `}` is past every declaration).
    out.replace("extern\"C\"{", "").replace("extern ", "")
}

/// The statements of normalized C text (`;`-ended, without the `;`; a
/// struct's or enum's body is part of its statement).
fn statements(normalized: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut depth) = (0, 0i32);
    for (i, c) in normalized.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = (depth - 1).max(0),
            ';' if depth == 0 => {
                out.push(normalized[start..i].trim_start_matches('}'));
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// The declaration that declares `name`: a function `name(`, a typedef
/// ending in `name` or `(*name)`, or `struct name{...}`.
fn declaration<'a>(normalized: &'a str, name: &str) -> Option<&'a str> {
    statements(normalized).into_iter().find(|stmt| {
        let function = stmt.find(&format!("{name}(")).is_some_and(|at| at > 0 && !is_word(stmt, at - 1))
            && !stmt.starts_with("typedef ");
        let typedef = stmt.starts_with("typedef ")
            && (stmt.ends_with(&format!(" {name}"))
                || stmt.ends_with(&format!("*{name}"))
                || stmt.contains(&format!("(*{name})")));
        function || typedef || stmt.starts_with(&format!("struct {name}{{"))
    })
}

/// `enum name{...}`.
fn enum_declaration<'a>(normalized: &'a str, name: &str) -> Option<&'a str> {
    statements(normalized).into_iter().find(|stmt| stmt.starts_with(&format!("enum {name}{{")))
}

fn is_word(s: &str, at: usize) -> bool {
    s.as_bytes().get(at).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// The names of an enum and their values, in order (`A, B = 5, C`).
fn enum_values(normalized: &str, name: &str) -> Result<Vec<(String, i64)>, String> {
    let decl = enum_declaration(normalized, name).ok_or_else(|| format!("no enum {name}"))?;
    let body = decl.split_once('{').and_then(|(_, b)| b.rsplit_once('}')).map(|(b, _)| b);
    let body = body.ok_or_else(|| format!("enum {name}: no body in {decl:?}"))?;
    let mut next = 0i64;
    let mut out = Vec::new();
    for entry in body.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (n, v) = match entry.split_once('=') {
            Some((n, v)) => (n.trim(), v.trim().parse().map_err(|_| format!("enum {name}: {entry:?}"))?),
            None => (entry, next),
        };
        out.push((n.to_string(), v));
        next = v + 1;
    }
    Ok(out)
}

/// `#define NAME VALUE`'s value.
fn define(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some("#define") && w.next() == Some(name)).then(|| w.next().unwrap_or("").to_string())
    })
}

/// What is wrong with ffi.rs against one release's `spank.h` and
/// `slurm_errno.h` (empty: nothing).
fn mismatches(spank_h: &str, errno_h: &str) -> Vec<String> {
    let n = normalize(spank_h);
    let mut out = Vec::new();
    match enum_values(&n, "spank_item") {
        Ok(values) => {
            for item in ITEMS {
                let got = values.iter().find(|(k, _)| k == c_name(item)).map(|(_, v)| *v);
                if got != Some(item as i64) {
                    out.push(format!("{} is {} in ffi.rs and {got:?} in spank.h", c_name(item), item as i64));
                }
            }
        }
        Err(e) => out.push(e),
    }
    match enum_values(&n, "spank_context") {
        Ok(values) => {
            for (name, ours) in CONTEXTS {
                match values.iter().find(|(k, _)| k == name) {
                    Some((_, v)) if context_of(*v as i32) == ours => {}
                    Some((_, v)) => {
                        out.push(format!("{name} is {v} in spank.h, which ffi.rs reads as {:?}", context_of(*v as i32)))
                    }
                    None => out.push(format!("{name} is not in spank.h")),
                }
            }
        }
        Err(e) => out.push(e),
    }
    for (name, want) in DECLARATIONS {
        match declaration(&n, name) {
            Some(got) if got == want => {}
            Some(got) => out.push(format!("{name}: spank.h declares {got:?}, ffi.rs copied {want:?}")),
            None => out.push(format!("{name}: not declared in spank.h (ffi.rs copied {want:?})")),
        }
    }
    for (name, want) in [("ESPANK_SUCCESS", "0"), ("SLURM_ERROR", "-1")] {
        let got = define(errno_h, name);
        if got.as_deref() != Some(want) {
            out.push(format!("{name} is {want} in ffi.rs and {got:?} in slurm_errno.h"));
        }
    }
    out
}

/// The tarballs' folder: `NUMAKIT_SLURM_TARBALLS`, else `../shared/vendor/slurm`
/// beside the repository.
fn tarball_dir() -> PathBuf {
    match std::env::var_os("NUMAKIT_SLURM_TARBALLS").filter(|d| !d.is_empty()) {
        Some(d) => d.into(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vendor/slurm"),
    }
}

/// `slurm/spank.h` and `slurm/slurm_errno.h` of a `slurm-VERSION.tar.xz`.
fn from_tarball(tarball: &Path, version: &str) -> (String, String) {
    let dir = tempfile::tempdir().expect("a folder");
    let top = format!("slurm-{version}");
    let out = Command::new("tar")
        .arg("-xJf")
        .arg(tarball)
        .arg("-C")
        .arg(dir.path())
        .args([format!("{top}/slurm/spank.h"), format!("{top}/slurm/slurm_errno.h")])
        .output()
        .expect("tar runs");
    assert!(out.status.success(), "tar -xJf {}: {}", tarball.display(), String::from_utf8_lossy(&out.stderr));
    let read = |f: &str| std::fs::read_to_string(dir.path().join(&top).join("slurm").join(f)).expect(f);
    (read("spank.h"), read("slurm_errno.h"))
}

#[test]
fn the_copied_declarations_match_every_supported_slurms_headers() {
    let mut headers: Vec<(String, String, String)> = Vec::new();
    let debian = Path::new("/usr/include/slurm");
    if let (Ok(s), Ok(e)) =
        (std::fs::read_to_string(debian.join("spank.h")), std::fs::read_to_string(debian.join("slurm_errno.h")))
    {
        headers.push((debian.display().to_string(), s, e));
    }
    let dir = tarball_dir();
    let mut tarballs: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("slurm-")?.strip_suffix(".tar.xz")?.to_string();
            Some((version, e.path()))
        })
        .collect();
    tarballs.sort();
    if tarballs.is_empty() {
        let why = format!("no slurm-VERSION.tar.xz in {} (NUMAKIT_SLURM_TARBALLS)", dir.display());
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}: CI must check every release");
        eprintln!("{why}: only the installed headers are checked");
    }
    for (version, path) in &tarballs {
        let (s, e) = from_tarball(path, version);
        headers.push((format!("Slurm {version}"), s, e));
    }
    assert!(!headers.is_empty(), "no Slurm header to check ffi.rs against");
    let wrong: Vec<String> = headers
        .iter()
        .flat_map(|(what, s, e)| mismatches(s, e).into_iter().map(move |m| format!("{what}: {m}")))
        .collect();
    assert!(wrong.is_empty(), "ffi.rs differs from Slurm's headers:\n{}", wrong.join("\n"));
    eprintln!("checked: {}", headers.iter().map(|h| h.0.as_str()).collect::<Vec<_>>().join(", "));
}

#[test]
fn a_changed_header_is_caught() {
    let spank = "/* x */\ntypedef struct spank_handle * spank_t;\ntypedef slurm_err_t spank_err_t;\n\
        enum spank_item { S_JOB_UID, S_JOB_GID = 5, S_JOB_ID };\n\
        enum spank_context { S_CTX_ERROR, S_CTX_LOCAL };\n\
        extern void slurm_info (const char *format, ...)\n  __attribute__ ((format (printf, 1, 2)));\n\
        spank_err_t spank_getenv (spank_t spank, const char *var, char *buf,\n     int len);\n";
    let n = normalize(spank);
    assert_eq!(declaration(&n, "slurm_info"), Some("void slurm_info(const char*format,...)"));
    assert_eq!(declaration(&n, "spank_getenv"), Some(DECLARATIONS[7].1));
    assert_eq!(declaration(&n, "spank_t"), Some("typedef struct spank_handle*spank_t"));
    assert_eq!(
        enum_values(&n, "spank_item").expect("an enum"),
        [("S_JOB_UID".to_string(), 0), ("S_JOB_GID".to_string(), 5), ("S_JOB_ID".to_string(), 6)]
    );
    let wrong = mismatches(spank, "#define ESPANK_SUCCESS 0\n#define SLURM_ERROR    -1\n");
    assert!(wrong.iter().any(|w| w == "S_JOB_GID is 1 in ffi.rs and Some(5) in spank.h"), "{wrong:#?}");
    assert!(wrong.iter().any(|w| w == "S_CTX_REMOTE is not in spank.h"), "{wrong:#?}");
    assert!(wrong.iter().any(|w| w.starts_with("spank_setenv: not declared")), "{wrong:#?}");
    assert!(!wrong.iter().any(|w| w.starts_with("slurm_info") || w.starts_with("ESPANK")), "{wrong:#?}");
    assert!(mismatches(spank, "#define ESPANK_SUCCESS 1\n").iter().any(|w| w.starts_with("ESPANK_SUCCESS")));
    assert_eq!(std::mem::size_of::<SpankOption>(), 40, "three pointers, two ints, a function pointer");
}
