//! A deterministic mutation fuzzer of the library's kernel-file parsers
//! that runs on stable Rust under `cargo test`. Seeds are the real
//! machines' files of hwloc's dumps (`../shared/fixtures/hwloc`, extracted
//! by `common::fixtures`) and, for files the dumps do not hold
//! (`numa_maps`, a process's `stat`/`status`/`statm`/`schedstat`/`maps`,
//! `vmstat`, `fib_trie`, route tables), the examples below. Each seed is
//! mutated by a fixed-seed sequence of byte edits (bit flips, truncation,
//! deleted, duplicated and spliced ranges, huge and negative numbers, NULs,
//! bytes that are not UTF-8, separators) and fed to its parsers. Any panic,
//! or an error string that is not one line, fails the test, naming the
//! parser, the seed file, the iteration and the file holding the input.
//!
//! `NUMAKIT_FUZZ_ITERS` (default 48 mutants per seed) and
//! `NUMAKIT_FUZZ_SEED` (default 1) make the long version
//! (docs/hostile-input.md).

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use numakit::place::iospec;
use numakit::procs::{self, cgroup, numa_maps, pidstat};
use numakit::sets::{CpuSet, NodeSet};
use numakit::stats::{counters, process, vmstat};
use numakit::sys::{self, stat};
use numakit::topo;

/// Seeds of one kind taken from the dumps (distinct contents, in path
/// order): enough for variety, few enough to stay fast.
const SEEDS_PER_KIND: usize = 24;

/// The parsers a kernel file is fed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Meminfo,
    ProcStat,
    Numastat,
    Distance,
    List,
    Mask,
    Cgroup,
    Status,
    CacheSize,
    NumaMaps,
    PidStat,
    Statm,
    Schedstat,
    Maps,
    Vmstat,
    FibTrie,
    Route,
}

/// The kind of a dump's file, by its path below the root.
fn kind_of(rel: &str) -> Option<Kind> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    Some(match name {
        "meminfo" => Kind::Meminfo,
        "stat" if rel == "proc/stat" => Kind::ProcStat,
        "numastat" => Kind::Numastat,
        "distance" => Kind::Distance,
        "cgroup" if rel.starts_with("proc/") => Kind::Cgroup,
        "status" if rel.starts_with("proc/") => Kind::Status,
        "size" if rel.contains("/cache/index") => Kind::CacheSize,
        "online" | "possible" | "present" | "has_cpu" | "has_memory" | "has_normal_memory" | "cpulist" => Kind::List,
        n if n.ends_with("_list") => Kind::List,
        "cpumap" | "thread_siblings" | "core_siblings" | "core_cpus" | "package_cpus" | "die_cpus" | "local_cpus" => {
            Kind::Mask
        }
        n if n.ends_with("_map") => Kind::Mask,
        _ => return None,
    })
}

/// Seeds of the files the dumps do not hold, as the kernel writes them.
fn builtin_seeds() -> Vec<(Kind, String, Vec<u8>)> {
    let s = |k: Kind, name: &str, text: &str| (k, format!("builtin:{name}"), text.as_bytes().to_vec());
    vec![
        s(
            Kind::NumaMaps,
            "numa_maps",
            "7f2c1a000000 bind:1 anon=2560 dirty=2560 active=0 N1=2560 kernelpagesize_kB=4\n\
             01b4c000 default heap anon=33 dirty=33 N0=30 N2=3 kernelpagesize_kB=4\n\
             7f00 default file=/usr/lib/x\\040y.so mapped=3 mapmax=6 N0=3 kernelpagesize_kB=4\n\
             7fff default stack anon=5 dirty=5 N0=5 kernelpagesize_kB=4\n\
             7f40 default file=/anon_hugepage\\040(deleted) huge dirty=1 N0=1 kernelpagesize_kB=2048\n\
             7f50 prefer (many):0-1 anon=1 N1=1 kernelpagesize_kB=4\n\
             7f60 weighted interleave:0-1 anon=2 N0=1 N1=1 kernelpagesize_kB=4\n7f70 interleave:0-3\n",
        ),
        s(
            Kind::PidStat,
            "stat",
            "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 2 0 100 1000000 200 \
             18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n",
        ),
        s(
            Kind::Status,
            "status",
            "Name:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\nThreads:\t2\nVmRSS:\t  1024 kB\n\
             Cpus_allowed:\tff\nCpus_allowed_list:\t0-7\nMems_allowed:\t00000000,00000003\nMems_allowed_list:\t0-1\n",
        ),
        s(Kind::Statm, "statm", "2256 1024 896 5 0 130 0\n"),
        s(Kind::Schedstat, "schedstat", "3114250 24081 12\n"),
        s(
            Kind::Maps,
            "maps",
            "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n\
             7ffd6f1d2000-7ffd6f1f3000 rw-p 00000000 00:00 0          [stack]\n\
             7f00a000-7f00b000 rw-s 00000000 00:05 1          /dev/shm/x\n",
        ),
        s(
            Kind::Vmstat,
            "vmstat",
            "nr_free_pages 12345\nnuma_hit 99\nnuma_pte_updates 10\nnuma_hint_faults 7\nnuma_hint_faults_local 5\n\
             numa_pages_migrated 3\npgmigrate_success 3\npgmigrate_fail 0\npgpromote_success 1\npgdemote_kswapd 2\n",
        ),
        s(
            Kind::FibTrie,
            "fib_trie",
            "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\nLocal:\n  +-- 0.0.0.0/0 3 0 5\n\
             \x20    +-- 127.0.0.0/8 2 0 2\n        +-- 127.0.0.0/31 1 0 0\n           |-- 127.0.0.1\n\
             \x20             /32 host LOCAL\n     |-- 192.168.2.9\n        /32 host LOCAL\n",
        ),
        s(
            Kind::Route,
            "route",
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
             eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
             eth0\t0002A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n\
             fd000000000000000000000000000000 08 00000000000000000000000000000000 00 \
             00000000000000000000000000000000 00000100 00000001 00000000 00000001 ib0\n",
        ),
        s(Kind::Cgroup, "cgroup", "12:cpuset:/x\n1:name=systemd:/user.slice\n0::/user.slice/job.scope\n"),
    ]
}

/// Feeds `bytes` to every parser of `kind`; an error must be one line.
fn feed(kind: Kind, bytes: &[u8]) -> Result<(), String> {
    // As `SysRoot::read` hands a file over, and raw (callers that read
    // `/proc` themselves keep the ending).
    let lossy = String::from_utf8_lossy(bytes);
    let read = lossy.trim_end_matches(|c: char| c.is_whitespace() || c == '\0');
    let one_line = |r: Result<(), String>| match r {
        Err(e) if e.contains('\n') || e.contains('\r') => Err(format!("a multi-line error: {e:?}")),
        _ => Ok(()),
    };
    for t in [read, lossy.as_ref()] {
        match kind {
            Kind::Meminfo => one_line(sys::parse_kv_lines(t).map(drop))?,
            Kind::ProcStat => one_line(stat::parse_stat(t).map(drop))?,
            Kind::Numastat => one_line(counters::parse_numastat(t).map(drop))?,
            Kind::Distance => one_line(topo::parse_distance_row(t).map(drop))?,
            Kind::List | Kind::Mask => {
                let _ = (CpuSet::parse_list(t), NodeSet::parse_list(t), CpuSet::parse_mask(t), NodeSet::parse_mask(t));
            }
            Kind::Cgroup => {
                if let Some(p) = cgroup::parse_path(t) {
                    let _ = cgroup::dir(&p);
                }
            }
            Kind::Status => {
                let _ = procs::parse_status(t);
            }
            Kind::CacheSize => {
                let _ = numakit::units::parse_size(t);
            }
            Kind::NumaMaps => {
                let maps = numa_maps::parse(t);
                for m in &maps {
                    let _ = (m.bytes(), m.is_private(), m.bytes_per_node().count());
                }
                let _ = procs::bytes_per_node(&maps);
                let _ = process::summarize_text(1, "x", t, &[0, 1, 2], NodeSet::first_n(1));
                let _ = process::summarize(1, "x", &maps, &[0, 1, 2], NodeSet::first_n(2));
                one_line(process::numastat_usage(t, &[0, 1], 4096, 2 << 20).map(drop))?;
                let _ = numakit::daemon::collect::memory_of(t);
            }
            Kind::PidStat => {
                let _ = pidstat::parse_proc_stat(t);
            }
            Kind::Statm => {
                let _ = pidstat::parse_statm_resident(bytes);
            }
            Kind::Schedstat => {
                let _ = procs::parse_run_delay(t);
            }
            Kind::Maps => {
                let _ = procs::parse_maps(t);
            }
            Kind::Vmstat => {
                let v = vmstat::parse_vmstat(t);
                let _ = v.hint_local_ratio();
            }
            Kind::FibTrie => {
                for ip in [0x7f00_0001, 0xc0a8_0209, 0, u32::MAX] {
                    let _ = iospec::is_local_v4(t, ip);
                }
            }
            Kind::Route => {
                let _ = (iospec::best_route_v4(t, 0xc0a8_0207), iospec::best_route_v6(t, 0xfd00 << 112));
            }
        }
    }
    Ok(())
}

/// xorshift64*: a fixed sequence for a fixed seed, nothing else needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// What a mutation may insert: numbers at and past every limit, signs,
/// separators, NULs, bytes that are not UTF-8, terminal escapes.
const TOKENS: &[&[u8]] = &[
    b"18446744073709551615",
    b"18446744073709551616",
    b"99999999999999999999999",
    b"4294967295",
    b"4294967296",
    b"16384",
    b"1024",
    b"1048576",
    b"-1",
    b"-",
    b"0x",
    b"+",
    b",",
    b":",
    b"=",
    b"/",
    b"\n",
    b" ",
    b"\t",
    b"\0",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\x1b]0;x\x07",
    b"(",
    b")",
    b"..",
    b"N",
    b" kB",
    b" MB",
];

/// One to four edits of `data`; `other` is another seed of the same kind
/// (for splicing).
fn mutate(rng: &mut Rng, data: &[u8], other: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(d.len() + 1);
        match rng.below(10) {
            0 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] ^= 1 << rng.below(8);
            }
            1 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] = rng.next() as u8;
            }
            2 => d.truncate(at),
            3 => {
                let end = (at + rng.below(32)).min(d.len());
                d.drain(at..end);
            }
            4 => {
                // Duplicate a range (repeated lines, ids, fields).
                let end = (at + 1 + rng.below(64)).min(d.len());
                let chunk = d[at.min(end)..end].to_vec();
                for _ in 0..=rng.below(3) {
                    d.splice(at..at, chunk.iter().copied());
                }
            }
            5 if !other.is_empty() => {
                let from = rng.below(other.len());
                let to = (from + 1 + rng.below(128)).min(other.len());
                d.splice(at..at, other[from..to].iter().copied());
            }
            6 | 7 => {
                // Replace one of the numbers with a token (most often a
                // number at or past a limit).
                let runs: Vec<usize> =
                    (0..d.len()).filter(|&i| d[i].is_ascii_digit() && (i == 0 || !d[i - 1].is_ascii_digit())).collect();
                if let Some(&start) = runs.get(rng.below(runs.len())) {
                    let end = start + d[start..].iter().take_while(|b| b.is_ascii_digit()).count();
                    let pool = if rng.below(2) == 0 { 10 } else { TOKENS.len() };
                    let tok = TOKENS[rng.below(pool)];
                    d.splice(start..end, tok.iter().copied());
                }
            }
            _ => {
                let tok = TOKENS[rng.below(TOKENS.len())];
                d.splice(at..at, tok.iter().copied());
            }
        }
    }
    d
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Every file below `dir`, relative to `root`, sorted.
fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let Ok(meta) = p.symlink_metadata() else { continue };
        if meta.is_dir() {
            walk(root, &p, out);
        } else if meta.is_file() {
            if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
}

/// Seeds by kind: the dumps' files (distinct contents) and the built-ins.
fn corpus() -> BTreeMap<Kind, Vec<(String, Vec<u8>)>> {
    let mut by_kind: BTreeMap<Kind, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for f in common::fixtures() {
        let mut files = Vec::new();
        for top in ["sys/devices/system", "proc"] {
            walk(&f.root, &f.root.join(top), &mut files);
        }
        for rel in files {
            let Some(kind) = kind_of(&rel) else { continue };
            let seeds = by_kind.entry(kind).or_default();
            if seeds.len() >= SEEDS_PER_KIND {
                continue;
            }
            let Ok(bytes) = std::fs::read(f.root.join(&rel)) else { continue };
            if bytes.len() <= 1 << 16 && !seeds.iter().any(|(_, b)| *b == bytes) {
                seeds.push((format!("{}/{rel}", f.name), bytes));
            }
        }
    }
    for (kind, name, bytes) in builtin_seeds() {
        by_kind.entry(kind).or_default().push((name, bytes));
    }
    by_kind
}

#[test]
fn mutated_kernel_files_never_panic_a_parser() {
    let iters = env_u64("NUMAKIT_FUZZ_ITERS", 48);
    let seed = env_u64("NUMAKIT_FUZZ_SEED", 1);
    let corpus = corpus();
    if !common::fixtures().is_empty() {
        // The dumps hold every kind below; a kind without seeds would be
        // a silently skipped parser.
        for k in
            [Kind::Meminfo, Kind::ProcStat, Kind::Numastat, Kind::Distance, Kind::List, Kind::Mask, Kind::CacheSize]
        {
            assert!(corpus.get(&k).is_some_and(|s| s.len() >= 3), "{k:?}: fewer than 3 seeds in the dumps");
        }
    }
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("parser-mutations");
    let mut failures = Vec::new();
    let (mut runs, mut seeds) = (0u64, 0usize);
    for (kind, files) in &corpus {
        for (i, (name, bytes)) in files.iter().enumerate() {
            seeds += 1;
            let other = &files[(i + 1) % files.len()].1;
            // One stream per seed file: a failure replays from its name alone.
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ fnv(name) | 1);
            // A built-in seed is its kind's only one: it gets the mutants
            // a kind's seeds from the dumps share.
            let n = if name.starts_with("builtin:") { iters * 8 } else { iters };
            for it in 0..=n {
                let input = if it == 0 { bytes.clone() } else { mutate(&mut rng, bytes, other) };
                runs += 1;
                let res = catch_unwind(AssertUnwindSafe(|| feed(*kind, &input)));
                let problem = match res {
                    Ok(Ok(())) => continue,
                    Ok(Err(e)) => e,
                    Err(p) => {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        format!("panicked: {msg}")
                    }
                };
                std::fs::create_dir_all(&out_dir).expect("mkdir");
                let file = out_dir.join(format!("{kind:?}-{}-{it}", failures.len()));
                std::fs::write(&file, &input).expect("write failing input");
                failures.push(format!("{kind:?} on {name}, mutant {it}: {problem} (input: {})", file.display()));
                break;
            }
        }
    }
    eprintln!("parser mutations: {runs} inputs from {seeds} seeds of {} kinds, {iters} mutants each", corpus.len());
    eprintln!(
        "HOSTILE|parsers|kernel files of the dumps mutated (bit flips, cuts, splices, numbers at every limit, NULs, not UTF-8), each fed to its parser|{runs}|{}",
        failures.len()
    );
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// FNV-1a of a seed's name: its stream of mutations depends on nothing else.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[test]
fn mutations_are_deterministic_and_varied() {
    let seed = b"0-3,8\n";
    let run = || {
        let mut rng = Rng(7);
        (0..200).map(|_| mutate(&mut rng, seed, b"ff,00000001")).collect::<Vec<_>>()
    };
    let a = run();
    assert_eq!(a, run(), "the same seed gives the same mutants");
    let distinct: std::collections::BTreeSet<&Vec<u8>> = a.iter().collect();
    assert!(distinct.len() > 150, "only {} distinct mutants of 200", distinct.len());
    assert!(a.iter().any(|m| std::str::from_utf8(m).is_err()), "no mutant is invalid UTF-8");
    assert!(a.iter().any(|m| m.contains(&0)), "no mutant holds a NUL");
    assert!(a.iter().any(|m| m.windows(20).any(|w| w == b"18446744073709551615")), "no huge number");
    assert!(a.iter().any(|m| m.len() < seed.len()), "no truncation or deletion");
}
