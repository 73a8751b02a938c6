//! Profiles: named sets of knob values, each with where its advice comes
//! from. Built-in ones ([`builtin`]) and users' TOML files in a profiles
//! folder (default `/etc/numakit/profiles.d`, see [`find`]):
//!
//! ```toml
//! # /etc/numakit/profiles.d/db.toml  →  numakit tune apply db
//! description = "database hosts: the database binds its own memory"
//! source = "our 2024 load tests, ticket OPS-123"
//!
//! [settings]
//! "kernel.numa_balancing" = 0
//! "kernel/mm/transparent_hugepage/enabled" = "never"
//! ```
//!
//! Setting names are any name or alias `tune show` lists (quoted when they
//! hold dots or slashes); values are integers, strings or booleans. A file
//! is checked when it is loaded: every knob must exist and every value be
//! one the knob accepts. Reading files is all this module does.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::knobs;
use super::plan::Setting;
use super::TuneError;

/// A profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// Name (`hep-farm`; a user profile's file name without `.toml`).
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Where the advice comes from.
    pub source: String,
    /// The settings.
    pub settings: Vec<Setting>,
    /// The file it came from (`None` for built-ins).
    pub file: Option<PathBuf>,
}

struct Builtin {
    name: &'static str,
    description: &'static str,
    source: &'static str,
    settings: &'static [(&'static str, &'static str)],
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "hep-farm",
        description: "batch farms of high-energy-physics jobs: khugepaged collapses huge pages 100x more often",
        source: "HEP farm study cited in numakit's tuning issue: khugepaged scan_sleep_millisecs 10000 -> 100 gave \
                 HEPSPEC06 +1.4% and ATLAS simulation +3.5-4.5%",
        settings: &[("kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs", "100")],
    },
    Builtin {
        name: "bound-workloads",
        description: "jobs statically bound to nodes (numactl/numakit run, cpusets): AutoNUMA off",
        source: "SUSE Linux Enterprise Server System Analysis and Tuning Guide, chapter Automatic NUMA balancing \
                 (documentation.suse.com/sles/15-SP6/html/SLES-all/cha-tuning-numactl.html): statically bound \
                 workloads gain nothing and pay for the scanning and hinting faults",
        settings: &[("kernel.numa_balancing", "0")],
    },
    Builtin {
        name: "throughput",
        description: "long-running multi-threaded throughput jobs left to the kernel: AutoNUMA on",
        source: "SPECjbb on a 4-node machine up to +47% with automatic NUMA balancing on, the figure cited in \
                 numakit's tuning issue (see docs/tune.md)",
        settings: &[("kernel.numa_balancing", "1")],
    },
    Builtin {
        name: "latency",
        description: "latency-sensitive services: no AutoNUMA page scanning or migration, no zone reclaim stalls",
        source: "kernel sysctl documentation (vm.zone_reclaim_mode: reclaim on the local node stalls allocations; \
                 kernel.numa_balancing: hinting faults and migrations cost latency); tuned's network-latency \
                 profile also sets kernel.numa_balancing=0",
        settings: &[("kernel.numa_balancing", "0"), ("vm.zone_reclaim_mode", "0")],
    },
];

/// The built-in profiles.
pub fn builtin() -> Vec<Profile> {
    BUILTINS
        .iter()
        .map(|b| Profile {
            name: b.name.to_string(),
            description: b.description.to_string(),
            source: b.source.to_string(),
            settings: b.settings.iter().map(|(k, v)| Setting::new(*k, *v)).collect(),
            file: None,
        })
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    description: String,
    #[serde(default)]
    source: String,
    settings: toml::Table,
}

/// Parses a profile file's text; `name` names it in errors.
pub fn parse(name: &str, text: &str, file: Option<PathBuf>) -> Result<Profile, TuneError> {
    let bad = |why: String| TuneError::Profile { name: file_or_name(name, file.as_deref()), why };
    let f: ProfileFile = toml::from_str(text).map_err(|e| bad(one_line(&e.to_string())))?;
    let mut settings = Vec::new();
    for (key, value) in f.settings {
        let value = match value {
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::String(s) => s,
            toml::Value::Boolean(b) => b.to_string(),
            other => return Err(bad(format!("{key}: {other} is not an integer, string or boolean"))),
        };
        let knob = knobs::lookup(&key).ok_or_else(|| bad(format!("unknown knob \"{key}\"")))?;
        knob.validate(&value).map_err(|why| bad(format!("{key}={value}: {why}")))?;
        settings.push(Setting::new(key, value));
    }
    if settings.is_empty() {
        return Err(bad("[settings] is empty".into()));
    }
    Ok(Profile { name: name.to_string(), description: f.description, source: f.source, settings, file })
}

fn file_or_name(name: &str, file: Option<&Path>) -> String {
    file.map_or_else(|| name.to_string(), crate::text::path)
}

/// TOML errors span lines; a message is one line.
fn one_line(s: &str) -> String {
    let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::one_line(&collapsed, 4 * crate::text::QUOTE_MAX_CHARS)
}

/// Reads the profile file `path`.
pub fn load_file(path: &Path) -> Result<Profile, TuneError> {
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let text = crate::files::read_named_text(path)
        .map_err(|e| TuneError::Profile { name: crate::text::path(path), why: e.why.to_string() })?;
    parse(&name, &text, Some(path.to_path_buf()))
}

/// Whether `name` can be a profile name (no path parts).
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The profile `name`: a file path when it holds a `/` or ends in `.toml`;
/// else `DIR/name.toml` when that file exists (a user profile of a
/// built-in's name replaces it); else the built-in.
pub fn find(name: &str, dir: &Path) -> Result<Profile, TuneError> {
    if name.contains('/') || name.ends_with(".toml") {
        return load_file(Path::new(name));
    }
    if !plain_name(name) {
        return Err(TuneError::Profile { name: name.into(), why: "not a profile name".into() });
    }
    let file = dir.join(format!("{name}.toml"));
    if file.is_file() {
        return load_file(&file);
    }
    builtin().into_iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<String> = builtin().into_iter().map(|p| p.name).collect();
        TuneError::Profile {
            name: name.into(),
            why: format!("no such profile (built-in: {}; yours: {}/*.toml)", names.join(", "), dir.display()),
        }
    })
}

/// Every profile: the built-ins, then the folder's `*.toml` files (sorted);
/// a user file replaces the built-in of its name. Files that fail to load
/// are returned as errors beside the rest. A missing folder has no files.
pub fn list(dir: &Path) -> (Vec<Profile>, Vec<TuneError>) {
    let mut profiles = builtin();
    let mut errors = Vec::new();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => {
            rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            errors.push(TuneError::Profile { name: dir.display().to_string(), why: format!("cannot list it: {e}") });
            Vec::new()
        }
    };
    files.sort();
    for f in files {
        match load_file(&f) {
            Ok(p) => {
                profiles.retain(|b| b.name != p.name);
                profiles.push(p);
            }
            Err(e) => errors.push(e),
        }
    }
    (profiles, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_valid_and_sourced() {
        let all = builtin();
        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, vec!["hep-farm", "bound-workloads", "throughput", "latency"]);
        for p in &all {
            assert!(!p.source.is_empty() && !p.description.is_empty(), "{}", p.name);
            for s in &p.settings {
                let k = knobs::lookup(&s.knob).unwrap_or_else(|| panic!("{}: {}", p.name, s.knob));
                assert!(k.validate(&s.value).is_ok(), "{}: {}={}", p.name, s.knob, s.value);
            }
        }
        assert!(all[0].source.contains("HEPSPEC06 +1.4%") && all[0].source.contains("3.5-4.5%"));
        assert!(all[2].source.contains("+47%"));
    }

    #[test]
    fn user_files() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            d.path().join("db.toml"),
            "description = \"db\"\nsource = \"tests\"\n[settings]\n\"kernel.numa_balancing\" = 0\nthp = \"never\"\ndemotion_enabled = true\n",
        )
        .expect("write");
        std::fs::write(d.path().join("latency.toml"), "[settings]\nautonuma = 0\n").expect("write");
        std::fs::write(d.path().join("bad.toml"), "[settings]\nautonuma = 9\n").expect("write");
        std::fs::write(d.path().join("notes.txt"), "ignored").expect("write");

        let db = find("db", d.path()).expect("db");
        assert_eq!(db.settings.len(), 3);
        assert!(db.settings.contains(&Setting::new("demotion_enabled", "true")));
        assert_eq!(db.file.as_deref(), Some(d.path().join("db.toml").as_path()));
        // a user file replaces the built-in of its name
        assert!(find("latency", d.path()).expect("latency").file.is_some());
        assert!(find("hep-farm", d.path()).expect("builtin").file.is_none());
        let e = find("bad", d.path()).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("autonuma=9: must be an integer from 0 to 3"), "{e}");
        let e = find("nope", d.path()).unwrap_err().to_string();
        assert!(e.contains("no such profile") && e.contains("hep-farm"), "{e}");
        assert!(find("../etc/passwd", d.path()).is_err());
        let by_path = d.path().join("db.toml");
        assert_eq!(find(&by_path.display().to_string(), d.path()).expect("path").name, "db");

        let (all, errors) = list(d.path());
        assert_eq!(errors.len(), 1);
        assert_eq!(all.iter().filter(|p| p.name == "latency").count(), 1);
        assert!(all.iter().any(|p| p.name == "db"));
        let (all, errors) = list(&d.path().join("missing"));
        assert!(errors.is_empty() && all.len() == 4);
    }

    #[test]
    fn parse_errors_are_one_line_and_named() {
        for (text, want) in [
            ("[settings]\nnope = 1\n", "unknown knob \"nope\""),
            ("[settings]\nautonuma = [1]\n", "not an integer, string or boolean"),
            ("colour = 1\n[settings]\nautonuma = 0\n", "unknown field"),
            ("[settings]\n", "[settings] is empty"),
            ("[settings\n", "x.toml"),
        ] {
            let e = parse("x", text, Some(PathBuf::from("x.toml"))).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{text:?}: {e}");
            assert!(e.starts_with("profile x.toml: "), "{e}");
        }
    }
}
