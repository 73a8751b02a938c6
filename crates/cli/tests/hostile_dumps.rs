//! Hostile input: real machines' dumps (hwloc's test data) with one kernel
//! file at a time made hostile — empty, truncated, garbage, not UTF-8,
//! huge numbers and ranges, reversed and duplicate ids, floods of
//! terminal escapes, a FIFO, a link to /dev/zero, a folder, missing — and
//! numakit's reading commands run on each. Any panic, hang, signal,
//! multi-line or unbounded error, control character on stderr, or exit
//! code outside 0/1/2/75 fails the test. The counts it prints are the
//! table in docs/hostile-input.md.

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NK: &str = env!("CARGO_BIN_EXE_numakit");
/// Longer than any command takes on a dump (milliseconds), short enough
/// that a hang is found.
const HANG: Duration = Duration::from_secs(10);
const MAX_STDERR: usize = 1000;
const MAX_STDOUT: usize = 8 << 20;

/// Dumps of different kinds (if the fixtures are there): many nodes, a
/// hybrid CPU, generic initiators and CPU-less nodes, an ARM cluster.
const DUMPS: &[&str] =
    &["16amd64-8n2c", "20em64t-hybrid-1p6c2t+2ca4co1t", "fakememinitiators-1np2c+1npp+gi", "128arm-2pa2n8cluster4co"];

/// Files tried, relative to the root (those a dump has).
const FILES: &[&str] = &[
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/possible",
    "sys/devices/system/cpu/present",
    "sys/devices/system/node/online",
    "sys/devices/system/node/has_cpu",
    "sys/devices/system/node/has_memory",
    "sys/devices/system/node/node0/cpulist",
    "sys/devices/system/node/node0/cpumap",
    "sys/devices/system/node/node0/meminfo",
    "sys/devices/system/node/node0/distance",
    "sys/devices/system/node/node0/numastat",
    "sys/devices/system/node/node1/cpulist",
    "sys/devices/system/node/node1/distance",
    "sys/devices/system/cpu/cpu0/topology/core_id",
    "sys/devices/system/cpu/cpu0/topology/physical_package_id",
    "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
    "sys/devices/system/cpu/cpu0/topology/core_siblings",
    "sys/devices/system/cpu/cpu0/cache/index0/size",
    "sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_map",
    "sys/devices/system/cpu/cpu0/online",
    "proc/meminfo",
    "proc/self/status",
];

#[derive(Clone, Copy, Debug)]
enum Mutation {
    Empty,
    Truncated,
    Garbage,
    NotUtf8,
    HugeNumber,
    Negative,
    HugeRange,
    Reversed,
    Duplicates,
    Escapes,
    Fifo,
    DevZero,
    Folder,
    Missing,
}

const MUTATIONS: &[Mutation] = &[
    Mutation::Empty,
    Mutation::Truncated,
    Mutation::Garbage,
    Mutation::NotUtf8,
    Mutation::HugeNumber,
    Mutation::Negative,
    Mutation::HugeRange,
    Mutation::Reversed,
    Mutation::Duplicates,
    Mutation::Escapes,
    Mutation::Fifo,
    Mutation::DevZero,
    Mutation::Folder,
    Mutation::Missing,
];

/// The commands run on each mutated dump.
const COMMANDS: &[&[&str]] = &[
    &["topo"],
    &["topo", "--json"],
    &["topo", "--hardware"],
    &["topo", "--svg", "-"],
    &["stat", "-m"],
    &["run", "--dry-run", "-N", "0", "--", "true"],
];

fn mutate(path: &Path, original: &[u8], m: Mutation) {
    let write = |b: &[u8]| fs::write(path, b).expect("write");
    let _ = fs::remove_file(path);
    match m {
        Mutation::Empty => write(b""),
        Mutation::Truncated => write(&original[..original.len() / 2]),
        Mutation::Garbage => write(b"z#!@ 7 ,- :: kB 0x\n"),
        Mutation::NotUtf8 => write(b"\xff\xfe0-\x80\x00\x01\n"),
        Mutation::HugeNumber => write(b"18446744073709551616\n"),
        Mutation::Negative => write(b"-1\n"),
        Mutation::HugeRange => write(b"0-1048575\n"),
        Mutation::Reversed => write(b"7-2\n"),
        Mutation::Duplicates => write(b"0,0,0-1,1\n"),
        Mutation::Escapes => write("\x1b]0;pwned\x07\n".repeat(10_000).as_bytes()),
        Mutation::Fifo => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
            // SAFETY: mkfifo with a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        }
        Mutation::DevZero => std::os::unix::fs::symlink("/dev/zero", path).expect("symlink"),
        Mutation::Folder => fs::create_dir(path).expect("mkdir"),
        Mutation::Missing => {}
    }
}

/// The mutation in words, for the report.
fn words(m: Mutation) -> &'static str {
    match m {
        Mutation::Empty => "empty",
        Mutation::Truncated => "cut in half",
        Mutation::Garbage => "garbage text",
        Mutation::NotUtf8 => "bytes that are not UTF-8",
        Mutation::HugeNumber => "2^64",
        Mutation::Negative => "-1",
        Mutation::HugeRange => "the range 0-1048575",
        Mutation::Reversed => "a reversed range",
        Mutation::Duplicates => "duplicate ids",
        Mutation::Escapes => "10,000 terminal escape sequences",
        Mutation::Fifo => "a FIFO",
        Mutation::DevZero => "a link to /dev/zero",
        Mutation::Folder => "a folder",
        Mutation::Missing => "missing",
    }
}

fn restore(path: &Path, original: &[u8]) {
    if path.is_dir() && !path.is_symlink() {
        fs::remove_dir_all(path).expect("rm dir");
    } else {
        let _ = fs::remove_file(path);
    }
    fs::write(path, original).expect("restore");
}

/// What went wrong with one run, if anything.
fn check_run(root: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new(NK)
        .arg("--sysroot")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (mut out, mut err) = (child.stdout.take().expect("out"), child.stderr.take().expect("err"));
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        let _ = (&mut out).take(MAX_STDOUT as u64 + 1).read_to_end(&mut o);
        let _ = std::io::copy(&mut out, &mut std::io::sink());
        o.len()
    });
    let err_reader = std::thread::spawn(move || {
        let mut e = Vec::new();
        let _ = (&mut err).take(64 << 10).read_to_end(&mut e);
        let _ = std::io::copy(&mut err, &mut std::io::sink());
        e
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if t.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let out_len = reader.join().expect("stdout");
    let err = err_reader.join().expect("stderr");
    let Some(status) = status else { return Some(format!("hang (killed after {HANG:?})")) };
    let text = String::from_utf8_lossy(&err);
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return Some(format!("killed by signal {sig}: {}", text.lines().next().unwrap_or("")));
    }
    let code = status.code().unwrap_or(-1);
    if text.contains("panicked") || code == 101 {
        return Some(format!("panic: {}", text.lines().next().unwrap_or("")));
    }
    if ![0, 1, 2, 75].contains(&code) {
        return Some(format!("exit {code}"));
    }
    if err.len() > MAX_STDERR {
        return Some(format!("stderr of {} bytes", err.len()));
    }
    let body = text.strip_suffix('\n').unwrap_or(&text);
    if body.contains('\n') {
        return Some(format!("{} lines on stderr: {body:?}", body.lines().count()));
    }
    if body.chars().any(char::is_control) {
        return Some(format!("control characters on stderr: {body:?}"));
    }
    if out_len > MAX_STDOUT {
        return Some(format!("more than {MAX_STDOUT} bytes on stdout"));
    }
    if code != 0 && body.is_empty() {
        return Some(format!("exit {code} without a word"));
    }
    None
}

/// A private copy of a dump (the fixtures are shared by other tests).
fn copy_tree(from: &Path, to: &Path) {
    let st = Command::new("cp").arg("-a").arg(from).arg(to).status().expect("cp");
    assert!(st.success(), "cp -a {}", from.display());
}

#[test]
fn hostile_kernel_files_never_crash_hang_or_flood() {
    let roots: Vec<PathBuf> = DUMPS.iter().filter_map(|n| common::fixture_root(n)).collect();
    if roots.is_empty() {
        return; // fixture_root already failed in CI or said why it skipped
    }
    let work = tempfile::tempdir().expect("tmp");
    let (mut tried, mut failures) = (0usize, Vec::new());
    let mut by_mutation: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for (i, src) in roots.iter().enumerate() {
        let root = work.path().join(format!("d{i}"));
        copy_tree(src, &root);
        for rel in FILES {
            let path = root.join(rel);
            let Ok(original) = fs::read(&path) else { continue };
            for &m in MUTATIONS {
                mutate(&path, &original, m);
                for args in COMMANDS {
                    tried += 1;
                    let e = by_mutation.entry(words(m).to_string()).or_default();
                    e.0 += 1;
                    if let Some(why) = check_run(&root, args) {
                        e.1 += 1;
                        failures.push(format!("{} {rel} {m:?} `{}`: {why}", DUMPS[i], args.join(" ")));
                    }
                }
                restore(&path, &original);
            }
        }
    }
    eprintln!("hostile dumps: {tried} runs over {} dumps, {} failures", roots.len(), failures.len());
    for (m, (n, f)) in &by_mutation {
        eprintln!("HOSTILE|kernel files|one file at a time {m}; {} commands on each|{n}|{f}", COMMANDS.len());
    }
    assert!(tried > 1000, "only {tried} runs: the dumps lack the files tried");
    assert!(failures.is_empty(), "{} of {tried} runs failed:\n{}", failures.len(), failures.join("\n"));
}

/// The limits the reader and the control socket enforce, for the table in
/// docs/hostile-input.md (scripts/hostile-report).
#[test]
fn limits_in_force() {
    use numakit::daemon::ctl;
    let lines = [
        ("kernel files", "bytes read of one file", numakit::sys::MAX_FILE_BYTES.to_string()),
        ("kernel files", "CPU ids below", numakit::topo::MAX_CPUS.to_string()),
        ("kernel files", "node ids below", numakit::topo::MAX_NODES.to_string()),
        ("messages", "characters of an outside value quoted", numakit::text::QUOTE_MAX_CHARS.to_string()),
        ("control socket", "bytes of a request", ctl::MAX_REQUEST_BYTES.to_string()),
        ("control socket", "seconds for a whole request", ctl::REQUEST_TIMEOUT.as_secs_f64().to_string()),
    ];
    const { assert!(numakit::sys::MAX_FILE_BYTES >= 1 << 20 && numakit::topo::MAX_CPUS >= 8192) };
    for (what, limit, value) in lines {
        eprintln!("LIMIT|{what}|{limit}|{value}");
    }
}
