//! Real kernel, side by side (docs/placers.md): numakit's daemon against
//! Debian's numad on the daemon's scenarios, in 4-node guests of the QEMU
//! test bed (bench/placers/topology), one boot per scenario, side by side:
//!
//! * `remote`: a busy 340 MiB process whose pages are on node 0 while busy
//!   loops pinned to nodes 0-2 make the scheduler run it on node 3;
//! * `uneven`: three busy 320 MiB processes, the pages of two on node 0 and
//!   of one on node 1.
//!
//! Each scenario runs once under numad and once under `numakit daemon`
//! (bench/placers/guest.sh, sampled every second by nk-locality), until the
//! worst process has been 90 % local for five seconds or for 90 s. The test
//! fails when the set-up did not start remote, or when numakit ends with a
//! lower locality than numad on any scenario, page-weighted over the
//! scenario's processes and for the worst process: over the processes' own
//! pages within a tenth of a point (sampling: a page or two of a stack), and
//! over all pages within one point, for the pages of files other processes
//! map too (the C library), which numakit leaves where they are and numad
//! moves. What each did is printed (`--nocapture`). numakit runs with a do-no-harm threshold of
//! 90 % in this guest ([`NK_DECIDE`]: TCG's CPU-time noise).
//!
//! Then, in the same boot, beside kernel AutoNUMA (`kernel.numa_balancing=1`,
//! as stock kernels ship): AutoNUMA alone, and AutoNUMA with the packaged
//! daemon (contrib/numakit-daemon.toml, `autonuma = "place-cpus"`, with
//! [`NK_DECIDE`]'s two keys replaced), each for [`BESIDE_SECS`]. The packaged
//! default must end at least as local (same tolerances); the daemon must
//! have bound CPUs, in CPU-only mode, and migrated no page itself; and its
//! binds must not make the kernel move pages twice ([`moves_after_binds`]):
//! the pages that arrive on a node after a process was bound (the
//! sampler sees its CPU affinity narrow) may exceed those its position
//! required at the bind (its pages away from the node it ran on, or away
//! from the node holding most of them, whichever is more) by at most
//! [`BESIDE_PAGES_TOLERANCE`] of the scenario's memory over all bound
//! processes. A bind away from where the process and its pages were adds a
//! whole process's pages. (Not pages migrated against AutoNUMA alone's:
//! where the scheduler first puts `uneven`'s processes, and where it moves
//! them in the first seconds, before the daemon's first decision, decides
//! whether the kernel moves one, two or three processes' pages, in either
//! run: in six runs each by hand, beyond the pages remote at the start,
//! beside 0, 0, +82k, +82k, -82k, +164k and alone 0, 0, +82k, 0, 0, 0, the
//! beside runs' binds each where process and pages already were.)
//! The debug daemon runs at nice 0 here, not the packaged unit's 10: under
//! TCG it needs seconds of CPU time per scan (2.9 s for its first), and in a
//! guest whose every vCPU is busy a nice-10 share did not reach its first
//! bind within the run. In `remote`, where every CPU is busy, it runs on
//! node 0's CPU beside the loop pinned there ([`REMOTE_NK`]): anywhere
//! else it displaced the placed process, whose pages AutoNUMA then moved to
//! wherever the scheduler ran it, before the daemon decided anything (two
//! runs of main this session: 156,226 and 134,709 pages against 87,061 and
//! 88,093 alone). On a real host the packaged unit's nice 10 and a release
//! build's milliseconds per scan keep it from displacing a job;
//! docs/placers.md ("Beside AutoNUMA") compares pages migrated with the
//! release build at nice 10. In `uneven` one CPU is idle and the daemon
//! runs where the scheduler puts it.
//!
//! Needs numad on the host (scripts/install-deps; the guest runs the host's
//! binaries) and nk-hold / nk-locality built beside numakit (`cargo build
//! --workspace`). Skipped when QEMU cannot run here, failed under `CI=true`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use numakit_testbed::{require_vm, RunSpec, Topology, Vm};

const NK: &str = env!("CARGO_BIN_EXE_numakit");
const TOPOLOGY: &str = include_str!("../../../bench/placers/topology");
/// Seconds each placer runs at most; a run ends earlier once the worst
/// process has been at least 90 % local for [`SETTLE`] samples (numad moves
/// the 340 MiB within its first scans; the debug numakit, slower than a
/// release build under TCG, within about a minute).
const SECS: u32 = 90;
/// `guest.sh`'s SETTLE: locality and samples in a row that end a run.
const SETTLE: &str = "0.9:5";
/// Locality over all pages: one point for the shared file pages.
const TOLERANCE: f64 = 0.01;
/// Locality over the processes' own pages: a tenth of a point.
const OWN_TOLERANCE: f64 = 0.001;
/// numakit's `[decide]` table in the guest: `min_age_s` as in guest.sh, and
/// a do-no-harm threshold of 90 % instead of 3 %. Under TCG a busy
/// process's CPU-time rate swings by several per cent with the host's load
/// (the CI run of 2026-11-23 saw 1.013 -> 0.966 CPUs for an unchanged
/// process), so the documented 3 % reverts moves on noise; this test is
/// about where each placer puts processes and their memory. The do-no-harm
/// rule itself is tested by `daemon::` unit tests and `vm_daemon` (which
/// sets the same threshold in its guest for the same reason).
const NK_DECIDE: &str = "min_age_s = 5\nharm_threshold = 0.9";
/// Seconds of each run beside AutoNUMA, whole (no early end: the two runs'
/// final locality and pages migrated are over equal windows). AutoNUMA makes both scenarios
/// local within about 10 s here; the daemon binds from its second scan.
const BESIDE_SECS: u32 = 40;
/// Pages that arrive on a node after the daemon bound their process, beyond
/// what the process's position required at the bind: at most this share of
/// the scenario's resident pages, over every bound process. A bind away from
/// where AutoNUMA had brought a process's pages adds that process's pages
/// (a third of `uneven`'s, all of `remote`'s); what stays below is the
/// kernel's own movement between the sample before the bind and the bind
/// (a second, with AutoNUMA moving up to 256 MiB per scan).
const BESIDE_PAGES_TOLERANCE: f64 = 0.25;
/// How numakit's daemon runs in `remote`, where every CPU is busy
/// (guest.sh's `NK_CPUS` and `NK_NICE`): on node 0's one CPU, which a loop
/// pinned by its owner keeps busy, so that its own CPU use never displaces
/// the process it places; and ahead of the loop there, so that sharing the
/// CPU does not slow its scans (at nice 0 it got half of it, and beside
/// AutoNUMA once made two scans in a 40 s run).
const REMOTE_NK: &str = "NK_CPUS=0 NK_NICE=-10";
/// The placers of one boot: the two daemons until settled, then the two
/// runs beside AutoNUMA whole.
fn runs_of(scenario: &str) -> Vec<(String, String)> {
    let pin = if scenario == "remote" { format!("{REMOTE_NK} ") } else { String::new() };
    let settled = ["numad", "numakit"].map(|p| (p, format!("{pin}sh bench/placers/guest.sh {scenario} {p} {SECS}")));
    let beside = ["autonuma", "numakit-autonuma"]
        .map(|p| (p, format!("{pin}SETTLE= sh bench/placers/guest.sh {scenario} {p} {BESIDE_SECS}")));
    settled.into_iter().chain(beside).map(|(p, cmd)| (format!("{scenario}.{p}"), cmd)).collect()
}

/// The `result` line of guest.sh as key -> value.
fn result(name: &str, out: &numakit_testbed::Output) -> BTreeMap<String, String> {
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("result "))
        .unwrap_or_else(|| panic!("{name}: no result line\n{}\n{}", out.stdout, out.stderr));
    line.split_whitespace().skip(1).filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect()
}

/// Fails unless `a` ends at least as local as `b` on scenario `s`,
/// page-weighted and for the worst process: over own pages within
/// [`OWN_TOLERANCE`], over all pages within [`TOLERANCE`]. `log` gives the
/// run's output for the message.
type Run<'a> = (&'a str, &'a BTreeMap<String, String>);
fn at_least_as_local(s: &str, (a_name, a): Run, (b_name, b): Run, log: impl Fn() -> String) {
    for (key, tolerance) in
        [("final", TOLERANCE), ("final_min", TOLERANCE), ("final_own", OWN_TOLERANCE), ("final_own_min", OWN_TOLERANCE)]
    {
        assert!(
            num(a, key) + tolerance >= num(b, key),
            "{s}: {a_name}'s {key} locality {} is lower than {b_name}'s {}\n{a_name}: {a:?}\n{b_name}: {b:?}\n{}",
            a[key],
            b[key],
            log()
        );
    }
}

/// The scenario's resident pages at the last sample of a run: the sum of
/// each process's `pid=PID:LOCAL/TOTAL@...` total.
fn resident_pages(stdout: &str) -> f64 {
    let last = stdout.lines().rfind(|l| l.starts_with("sample ")).unwrap_or("");
    seen_in(last).values().map(|p| p.total).sum()
}

/// The scenario's pages away from their process's node at the run's start
/// (its `setup` sample, just before the placer starts): the sum of each
/// process's TOTAL - LOCAL.
fn remote_pages_at_start(stdout: &str) -> f64 {
    let setup = stdout.lines().find(|l| l.starts_with("setup ")).unwrap_or("");
    seen_in(setup).values().map(|p| p.total - p.local).sum()
}

/// One process as a `setup` or `sample` line shows it.
#[derive(Debug, Clone, Default)]
struct Seen {
    local: f64,
    total: f64,
    /// pages per node
    nodes: BTreeMap<u32, f64>,
    /// the nodes its CPU affinity allows
    allowed: String,
}

/// The processes of a `setup` or `sample` line, by PID:
/// `pid=PID:LOCAL/TOTAL@RUN:N0=P,N1=P:allowed=NODES`.
fn seen_in(line: &str) -> BTreeMap<u32, Seen> {
    line.split_whitespace()
        .filter_map(|f| f.strip_prefix("pid="))
        .filter_map(|f| {
            let (pid, rest) = f.split_once(':')?;
            let (local, rest) = rest.split_once('/')?;
            let (total, rest) = rest.split_once('@')?;
            let mut parts = rest.split(':').skip(1);
            let nodes = parts
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(|np| {
                    let (n, p) = np.strip_prefix('N')?.split_once('=')?;
                    Some((n.parse().ok()?, p.parse().ok()?))
                })
                .collect();
            let allowed = parts.find_map(|p| p.strip_prefix("allowed=")).unwrap_or("").to_string();
            Some((pid.parse().ok()?, Seen { local: local.parse().ok()?, total: total.parse().ok()?, nodes, allowed }))
        })
        .collect()
}

/// A process the daemon bound during a run, as the sampler saw it.
#[derive(Debug, PartialEq)]
struct Bound {
    pid: u32,
    /// `t` of the first sample that shows it bound
    t: String,
    /// its pages at the sample before
    pages: f64,
    /// pages that arrived on a node from the sample before the bind to the
    /// last sample: the sum over nodes of each node's gain
    arrived: f64,
    /// pages its position required to move at the sample before the bind:
    /// those away from the nodes it ran on, or away from the node holding
    /// most of them, whichever is more (a bind to either is sound)
    required: f64,
}

/// Each process whose CPU affinity narrowed during the run (a `sample`
/// whose `allowed` differs from the `setup` line's): what arrived on a node
/// after the bind against what its position required ([`Bound`]).
fn moves_after_binds(stdout: &str) -> Vec<Bound> {
    let lines: Vec<(&str, BTreeMap<u32, Seen>)> = stdout
        .lines()
        .filter(|l| l.starts_with("setup ") || l.starts_with("sample "))
        .map(|l| (l.split_whitespace().find_map(|f| f.strip_prefix("t=")).unwrap_or("?"), seen_in(l)))
        .collect();
    let Some((_, setup)) = lines.first() else { return Vec::new() };
    let mut bound = Vec::new();
    for (pid, first) in setup {
        let at = |i: usize| lines[i].1.get(pid);
        let Some(i) =
            (1..lines.len()).find(|&i| at(i).is_some_and(|p| !p.allowed.is_empty() && p.allowed != first.allowed))
        else {
            continue;
        };
        let (Some(before), Some(last)) = ((0..i).rev().find_map(at), (0..lines.len()).rev().find_map(at)) else {
            continue;
        };
        let arrived = last.nodes.iter().map(|(n, p)| (p - before.nodes.get(n).copied().unwrap_or(0.0)).max(0.0)).sum();
        let most = before.nodes.values().copied().fold(0.0, f64::max);
        bound.push(Bound {
            pid: *pid,
            t: lines[i].0.to_string(),
            pages: before.total,
            arrived,
            required: (before.total - most).max(before.total - before.local),
        });
    }
    bound
}

fn num(r: &BTreeMap<String, String>, key: &str) -> f64 {
    r.get(key).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no number {key} in {r:?}"))
}

/// numakit without debug information (21 MB instead of 120 MB), in the
/// target directory: guest.sh copies the binaries into the guest's memory
/// over 9p first. Falls back to the binary itself when `strip` fails.
fn numakit_stripped() -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("vm_placers");
    let dest = dir.join("numakit");
    let ok = std::fs::create_dir_all(&dir).is_ok()
        && std::process::Command::new("strip").arg("-o").arg(&dest).arg(NK).status().is_ok_and(|s| s.success());
    if ok {
        dest.display().to_string()
    } else {
        NK.to_string()
    }
}

fn numad_installed() -> bool {
    std::process::Command::new("numad").arg("-V").output().is_ok_and(|o| o.status.success())
}

#[test]
fn vm_numakit_reaches_at_least_numads_locality() {
    require_vm!();
    if !numad_installed() {
        let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        assert!(!ci, "numad is required under CI=true (scripts/install-deps installs it)");
        eprintln!("skipping: numad is not installed (scripts/install-deps)");
        return;
    }
    let bin = Path::new(NK).parent().expect("binary directory");
    for b in ["nk-hold", "nk-locality"] {
        assert!(bin.join(b).is_file(), "{} is missing: cargo build --workspace first", bin.join(b).display());
    }
    let opts: Vec<&str> = TOPOLOGY.lines().filter(|l| !l.starts_with('#')).flat_map(str::split_whitespace).collect();
    let topo = Topology::from_options(&opts).expect("bench/placers/topology");

    // One boot per scenario, the two side by side (a guest is one TCG
    // thread); numad and numakit run one after the other in the same boot,
    // so each comparison is made under the same conditions.
    let boots: Vec<Vec<(String, String)>> = ["remote", "uneven"].iter().map(|s| runs_of(s)).collect();
    let runs: Vec<(String, String)> = boots.concat();
    let spec = RunSpec {
        kernel_args: Some("clearcpuid=erms".into()),
        ..RunSpec::default()
            .env("NK", numakit_stripped())
            .env("HOLD", bin.join("nk-hold").display().to_string())
            .env("SETTLE", SETTLE)
            .env("NK_DECIDE", NK_DECIDE)
            .env("NK_NICE", "0")
            .timeout(Duration::from_secs(1500))
    };
    let out = Vm::run_boots(&topo, &boots, spec).unwrap_or_else(|e| panic!("guest: {e}"));

    let mut got = BTreeMap::new();
    for (name, _) in &runs {
        let o = &out[name];
        let r = result(name, o);
        assert_eq!(r.get("status").map(String::as_str), Some("ok"), "{name}: {r:?}\n{}", o.stdout);
        // Straight to the process's stderr, past libtest's capture: CI prints
        // no output of a passing test, and these four lines say how long each
        // placer's run lasted (docs/testbed.md: the test's time in CI).
        let g = |k: &str| r.get(k).map_or("?", String::as_str);
        let _ = writeln!(
            std::io::stderr(),
            "vm_placers {name}: locality {} -> {} (worst {} -> {}), own pages {} (worst {}), >= 90% from {} s, run \
             {} s, {} pages migrated ({} remote at the start), placer CPU {} s, over capacity {}, affinity {}{}",
            g("start"),
            g("final"),
            g("start_min"),
            g("final_min"),
            g("final_own"),
            g("final_own_min"),
            g("t90"),
            g("last_t"),
            g("pgmigrate_success"),
            remote_pages_at_start(&o.stdout),
            g("placer_cpu_s"),
            g("over"),
            g("affinity"),
            r.get("nk_binds_total").map_or(String::new(), |b| format!(", binds {b}"))
        );
        if r.values().any(|v| v.is_empty()) || !r.contains_key("placer_cpu_s") {
            eprintln!("  result: {r:?}");
        }
        // the worst process's locality over time, and the nodes it ran on
        let trace: Vec<String> = o
            .stdout
            .lines()
            .filter(|l| l.starts_with("sample "))
            .filter_map(|l| {
                let field = |k: &str| l.split_whitespace().find_map(|f| f.strip_prefix(k));
                let runs: Vec<&str> = l
                    .split_whitespace()
                    .filter_map(|f| f.split_once('@'))
                    .map(|(_, r)| r.split(':').next().unwrap_or(""))
                    .collect();
                Some(format!("{}:{}@{}", field("t=")?, field("min=")?, runs.join("/")))
            })
            .collect();
        eprintln!("  samples (t:worst@nodes run on): {}", trace.join(" "));
        for b in moves_after_binds(&o.stdout) {
            eprintln!(
                "  bound: pid {} from t={} ({} pages): {} arrived after, {} required by its position",
                b.pid, b.t, b.pages, b.arrived, b.required
            );
        }
        for l in o.stdout.lines().filter(|l| {
            l.contains("Advising pid") || l.contains("moved to node") || l.starts_with("log numakit daemon: pid")
        }) {
            eprintln!("  {l}");
        }
        if r.get("over").map(String::as_str) == Some("1") {
            eprintln!("  note: {name} ends with a node over capacity: {}", r.get("nodes").map_or("", String::as_str));
        }
        got.insert(name.clone(), r);
    }

    for s in ["remote", "uneven"] {
        for p in ["numad", "numakit", "autonuma", "numakit-autonuma"] {
            let r = &got[&format!("{s}.{p}")];
            // The set-up really started remote: some process (in `remote` the
            // only one) had nearly all its pages away from its CPU.
            assert!(num(r, "start_min") < 0.1, "{s}/{p}: the set-up did not start remote: {r:?}");
            assert!(num(r, "start") < 0.7, "{s}/{p}: the set-up did not start remote: {r:?}");
        }
        at_least_as_local(
            s,
            ("numakit", &got[&format!("{s}.numakit")]),
            ("numad", &got[&format!("{s}.numad")]),
            || out[&format!("{s}.numakit")].stdout.clone(),
        );

        // Beside AutoNUMA.
        let (alone, beside) = (&got[&format!("{s}.autonuma")], &got[&format!("{s}.numakit-autonuma")]);
        let log = &out[&format!("{s}.numakit-autonuma")].stdout;
        assert_eq!(beside.get("nk_cpus_only").map(String::as_str), Some("1"), "{s}: not in CPU-only mode: {beside:?}");
        assert!(num(beside, "nk_binds_total") >= 1.0, "{s}: the packaged daemon bound nothing: {beside:?}\n{log}");
        assert_eq!(num(beside, "nk_pages_migrated_total"), 0.0, "{s}: the daemon moved pages itself: {beside:?}");
        at_least_as_local(s, ("the packaged daemon beside AutoNUMA", beside), ("AutoNUMA alone", alone), || {
            log.clone()
        });
        let resident = resident_pages(log);
        assert!(resident > 0.0, "{s}: no sample of the scenario's pages\n{log}");
        let binds = moves_after_binds(log);
        assert!(!binds.is_empty(), "{s}: the sampler saw no process bound beside AutoNUMA: {beside:?}\n{log}");
        let beyond: f64 = binds.iter().map(|b| (b.arrived - b.required).max(0.0)).sum();
        assert!(
            beyond <= BESIDE_PAGES_TOLERANCE * resident,
            "{s}: after the daemon's binds {beyond} pages arrived beyond those the processes' position required, \
             the scenario holds {resident}: {binds:?}\nbeside: {beside:?}\n{log}"
        );
    }
}

/// The page counts the beside-AutoNUMA check rests on, from guest.sh's
/// lines (no guest needed).
#[test]
fn pages_remote_at_the_start_and_resident_at_the_end() {
    let out = "setup scenario=uneven placer=autonuma t=-1 up=9 loc=0.3335 min=0 own=0.3 own_min=0 \
               pid=271:5/81950@1:N0=81945,N1=5 pid=272:81940/81950@0:N0=81940,N1=10 pid=273:0/81930@2:N1=81930\n\
               sample scenario=uneven placer=autonuma t=1 up=10 loc=0.5 min=0 own=0.5 own_min=0 \
               pid=271:81950/81951@0:N0=81950 pid=272:81940/81950@0:N0=81940 pid=273:10/81930@2:N1=81920\n\
               sample scenario=uneven placer=autonuma t=2 up=11 loc=1 min=1 own=1 own_min=1 \
               pid=271:81951/81951@0:N0=81951 pid=272:81950/81950@0:N0=81950 pid=273:81930/81930@1:N1=81930\n";
    assert_eq!(remote_pages_at_start(out), (81950 - 5 + 10 + 81930) as f64);
    assert_eq!(resident_pages(out), (81951 + 81950 + 81930) as f64);
    assert_eq!(remote_pages_at_start("no setup line"), 0.0);
}

/// What arrived after each bind against what the process's position
/// required, from guest.sh's lines (no guest needed): one process bound
/// where it and its pages were, one bound where it ran while its pages were
/// elsewhere (AutoNUMA then moves them: required), one bound away from where
/// it and its pages were (a fight: all of it beyond), one never bound.
#[test]
fn pages_that_arrive_after_a_bind_against_those_required() {
    let out = "setup scenario=uneven placer=numakit-autonuma t=-1 up=9 loc=0.3 min=0 own=0.3 own_min=0 \
               pid=1:1000/1010@0:N0=1000,N1=10:allowed=0,1,2,3 pid=2:0/2000@1:N0=2000:allowed=0,1,2,3 \
               pid=3:3000/3000@2:N2=3000:allowed=0,1,2,3 pid=4:5/500@3:N0=495,N3=5:allowed=0,1,2,3\n\
               sample scenario=uneven placer=numakit-autonuma t=1.0 up=10 loc=0.5 min=0 own=0.5 own_min=0 \
               pid=1:1000/1010@0:N0=1000,N1=10:allowed=0,1,2,3 pid=2:100/2000@1:N0=1900,N1=100:allowed=0,1,2,3 \
               pid=3:3000/3000@2:N2=3000:allowed=0,1,2,3 pid=4:5/500@3:N0=495,N3=5:allowed=0,1,2,3\n\
               sample scenario=uneven placer=numakit-autonuma t=2.0 up=11 loc=0.6 min=0 own=0.6 own_min=0 \
               pid=1:1000/1010@0:N0=1000,N1=10:allowed=0 pid=2:500/2000@1:N0=1500,N1=500:allowed=1 \
               pid=3:0/3000@3:N2=3000:allowed=3 pid=4:5/500@3:N0=495,N3=5:allowed=0,1,2,3\n\
               sample scenario=uneven placer=numakit-autonuma t=3.0 up=12 loc=0.9 min=0 own=0.9 own_min=0 \
               pid=1:1010/1010@0:N0=1010:allowed=0 pid=2:2000/2000@1:N1=2000:allowed=1 \
               pid=3:2990/3000@3:N2=10,N3=2990:allowed=3 pid=4:5/500@3:N0=495,N3=5:allowed=0,1,2,3\n";
    let b = moves_after_binds(out);
    let want = |pid, pages, arrived, required| Bound { pid, t: "2.0".into(), pages, arrived, required };
    assert_eq!(b, vec![want(1, 1010.0, 10.0, 10.0), want(2, 2000.0, 1900.0, 1900.0), want(3, 3000.0, 2990.0, 0.0)]);
    let beyond: f64 = b.iter().map(|b| (b.arrived - b.required).max(0.0)).sum();
    assert_eq!(beyond, 2990.0, "only the bind away from process and pages counts");
    assert!(moves_after_binds("no lines").is_empty());
}
