//! numactl parity in a real 4-node kernel (QEMU test bed, `4n-rr`: CPU i on
//! node i % 4, so node k has CPUs k and k+4): a table of argument vectors,
//! each run (half of them in each of two boots) by the real numactl 2.0.16 and by `numakit numactl`
//! (and, every third row, by numakit invoked as `numactl` through a
//! symlink), on the same tiny command. The command prints its effective placement as the kernel
//! sees it (`Cpus_allowed_list` and `Mems_allowed_list` from
//! /proc/self/status, the memory policy of its first mapping from
//! /proc/self/numa_maps, which also shows `=balancing`) and as the real
//! numactl's `--show` reads it.
//!
//! Per row: the same exit status class (0 or not), and for successes the
//! same output (free memory masked in `--hardware` rows: it moves between
//! two runs; so is the interleave pointer's next node, which must be in the
//! interleave mask). Rows where numakit deliberately differs are marked with the
//! difference docs/install.md ("Where numakit differs") documents, and the
//! test asserts that difference.
//!
//! A second table runs the options that take CPUs or nodes with the
//! caller narrowed (`narrowed_table`): its affinity by `taskset` (CPUs 0
//! and 2 of the root cpuset), its cpuset by a cgroup v2 cpuset (CPUs
//! 0-1,4-5 and memory nodes 0-1: nodes 0 and 1), and both (`taskset -c 0`
//! inside that cpuset), with and without `--all`. numactl 2.0.16 judges a
//! CPU list against the affinity and a node list against the cpuset's
//! nodes; its `--cpunodebind` binds past the affinity, `!` inverts within
//! the machine, and the kernel keeps what `--all` reaches inside the
//! cpuset. Those rows skip the `numactl` link and use a probe of shell
//! builtins only (no process but the shell itself); `-c` (the same as
//! `-N`) and `-w` (not in numactl 2.0.16) are left to the first table.
//!
//! The second boot also runs `numakit pin` against `taskset -p` on a child
//! (both of taskset's forms, on 8 CPUs), as tests/pin_taskset.rs does here.
//!
//! Skipped when QEMU cannot run here, failed instead under `CI=true`.

use std::time::Duration;

use numakit_testbed::{require_vm, RunSpec, Topology, Vm};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

/// What a row must show.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    /// Same exit class; on success the same output.
    Same,
    /// numactl 2.0.16 refuses, numakit accepts: an option of a newer numactl
    /// (`-w`, numactl 2.0.17+).
    NewerOption,
    /// taskset succeeds (the kernel drops CPUs the machine lacks), `numakit
    /// pin` refuses with exit 2 (it checks a list against the machine).
    NumakitRefuses,
}
use Want::*;

/// The argument vectors (before the command).
fn table() -> Vec<(Vec<&'static str>, Want)> {
    let v = |s: &[&'static str], w: Want| (s.to_vec(), w);
    vec![
        // Policies.
        v(&["-m", "1"], Same),
        v(&["--membind=0-1"], Same),
        v(&["-p", "2"], Same),
        v(&["--preferred", "3"], Same),
        v(&["-P", "1-2"], Same),
        v(&["-i", "0-3"], Same),
        v(&["-i", "all"], Same),
        v(&["-w", "0-1"], NewerOption),
        v(&["-l"], Same),
        v(&["-N", "2"], Same),
        v(&["-N", "1,3"], Same),
        v(&["-c", "1"], Same),
        v(&["-C", "3"], Same),
        v(&["-C", "0-2"], Same),
        v(&["--physcpubind", "5"], Same),
        // Lists.
        v(&["-m", "all"], Same),
        v(&["-m", "!0"], Same),
        v(&["-m", "!0-1"], Same),
        v(&["-m", "+1"], Same),
        v(&["-m", "+0-1"], Same),
        v(&["-C", "!0"], Same),
        v(&["-C", "+2"], Same),
        v(&["-C", "+1-2"], Same),
        v(&["-N", "all"], Same),
        v(&["-N", "!3"], Same),
        v(&["-m", "1-0"], Same),
        v(&["-C", "1-0"], Same),
        v(&["-N", "3-1"], Same),
        v(&["-C", "0,2,7"], Same),
        v(&["-C", "7,0"], Same),
        v(&["-m", "0,3"], Same),
        v(&["-i", "3,0"], Same),
        v(&["-m", "1,1"], Same),
        v(&["-p", "0-1"], Same),
        v(&["-p", "all"], Same),
        v(&["-C", "0-7:2"], Same),
        v(&["-C", "0-7:1/2"], Same),
        // Repeated options: the last wins.
        v(&["-C", "0", "-C", "1"], Same),
        v(&["-m", "0", "-m", "1"], Same),
        v(&["-N", "0", "-N", "1"], Same),
        v(&["-m", "0", "-i", "1"], Same),
        v(&["-p", "1", "-m", "2"], Same),
        v(&["-i", "all", "-l"], Same),
        v(&["-N", "0", "-C", "5"], Same),
        v(&["-C", "5", "-N", "0"], Same),
        // Option order and spellings.
        v(&["-N", "1", "-m", "1"], Same),
        v(&["-m", "1", "-N", "1"], Same),
        v(&["--membind=1", "--cpunodebind", "1"], Same),
        v(&["-N1", "-m1"], Same),
        v(&["--cpun=2", "--memb", "2"], Same),
        v(&["-m", "1", "--", "sh"], Same),
        // --all / -a.
        v(&["-a", "-m", "all"], Same),
        v(&["--all", "-C", "!0"], Same),
        v(&["-a", "-N", "+1"], Same),
        // --balancing / -b.
        v(&["-b", "-m", "1"], Same),
        v(&["-m", "0-1", "-b"], Same),
        v(&["-b", "-i", "all"], Same),
        v(&["-b", "-N", "1"], Same),
        v(&["-b"], Same),
        // --hardware / --show mixed with policies.
        v(&["-H"], Same),
        v(&["-H", "-m", "0"], Same),
        v(&["-m", "0", "-H"], Same),
        v(&["-s"], Same),
        v(&["-s", "-m", "1"], Same),
        v(&["-m", "1", "-s"], Same),
        v(&["-N", "2", "-C", "1", "--show"], Same),
        v(&["-s", "-H"], Same),
        v(&["-H", "-s"], Same),
        // Bad inputs.
        v(&["-m", "9"], Same),
        v(&["-N", "9"], Same),
        v(&["-C", "9"], Same),
        v(&["-p", "9"], Same),
        v(&["-i", "0,9"], Same),
        v(&["-m", ""], Same),
        v(&["-C", ""], Same),
        v(&["-N", ""], Same),
        v(&["-m", "garbage"], Same),
        v(&["-C", "x"], Same),
        v(&["-m", "0-"], Same),
        v(&["-m", ","], Same),
        v(&["-m", "+4"], Same),
        v(&["-C", "+8"], Same),
        v(&["-Q"], Same),
        v(&["--foo"], Same),
        v(&["--p", "0"], Same),
        v(&["-V"], Same),
        v(&["--version"], Same),
        v(&["-v"], Same),
        // In-order rules, found by this table (numactl acts option by option).
        v(&["-m", "all", "-a"], Same),
        v(&["-C", "9", "-C", "0"], Same),
        v(&["-C", "!1-0"], Same),
        v(&["-C", "+3-1"], Same),
        v(&["-m", "0", "-b"], Same),
        v(&["-N", "0", "-H"], Same),
        v(&["-H", "-Z"], Same),
        v(&["-s", "--foo"], Same),
        // Found after the first table: `same` repeats the last node list as
        // typed; -l takes no list, so -a may follow it.
        v(&["-N", "1", "-m", "same"], Same),
        v(&["-m", "2", "-N", "same"], Same),
        v(&["-p", "3", "-N", "same"], Same),
        v(&["-C", "1", "-m", "same"], Same),
        v(&["-C", "same"], Same),
        v(&["-l", "-a"], Same),
    ]
}

/// How a narrowed row's caller is narrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Narrow {
    /// `taskset -c 0,2` in the root cpuset.
    Taskset,
    /// The cgroup v2 cpuset `nk`: CPUs 0-1,4-5, memory nodes 0-1.
    Cpuset,
    /// `taskset -c 0` inside the cpuset `nk`.
    Both,
}
use Narrow::*;

/// The rows run with the caller narrowed: every option that takes CPUs or
/// nodes, lists that reach past the limit, with and without `--all`.
fn narrowed_table() -> Vec<(Narrow, Vec<&'static str>, Want)> {
    let v = |n: Narrow, s: &[&'static str], w: Want| (n, s.to_vec(), w);
    vec![
        // The affinity (CPUs 0 and 2, nodes 0 and 2): CPU lists are judged
        // against it, node lists are not.
        v(Taskset, &["-C", "1"], Same),
        v(Taskset, &["--all", "--physcpubind=1"], Same),
        v(Taskset, &["-C", "0-2"], Same),
        v(Taskset, &["-C", "!0"], Same),
        v(Taskset, &["-a", "-C", "all"], Same),
        v(Taskset, &["-N", "1"], Same),
        v(Taskset, &["-m", "1"], Same),
        v(Taskset, &["-p", "3"], Same),
        v(Taskset, &["-P", "1-2"], Same),
        v(Taskset, &["-i", "all"], Same),
        v(Taskset, &["-s"], Same),
        // The cpuset (nodes 0-1): CPU and node lists judged against it;
        // --all lets a list reach past it, the kernel keeps the rest.
        v(Cpuset, &["-C", "2"], Same),
        v(Cpuset, &["-a", "-C", "1-3"], Same),
        v(Cpuset, &["-C", "!0"], Same),
        v(Cpuset, &["-N", "2"], Same),
        v(Cpuset, &["-a", "-N", "1-2"], Same),
        v(Cpuset, &["-m", "2"], Same),
        v(Cpuset, &["-a", "-m", "1-2"], Same),
        v(Cpuset, &["-p", "2"], Same),
        v(Cpuset, &["-a", "-p", "2"], Same),
        v(Cpuset, &["-P", "1"], Same),
        v(Cpuset, &["-a", "-P", "1-3"], Same),
        v(Cpuset, &["-i", "0-2"], Same),
        v(Cpuset, &["-a", "-i", "all"], Same),
        v(Cpuset, &["-s"], Same),
        // Both: taskset -c 0 inside the cpuset.
        v(Both, &["-C", "4"], Same),
        v(Both, &["-a", "-C", "1"], Same),
        v(Both, &["-N", "1"], Same),
        v(Both, &["-m", "1"], Same),
        v(Both, &["-a", "-s"], Same),
    ]
}

/// The shell of a narrowed row: the check's own shell (`( eval … )`, a
/// subshell: `/proc/self` read by a builtin is that process) narrows itself,
/// then the runs as in [`row_script`], each printing its placement with
/// shell builtins (`/tmp/probe-b.sh`).
fn narrowed_row_script(narrow: Narrow, args: &[&str]) -> String {
    let a: Vec<String> = args.iter().map(|x| q(x)).collect();
    let a = a.join(" ");
    let enter = match narrow {
        Taskset => "taskset -p -c 0,2 $me >/dev/null",
        Cpuset => "echo $me > /sys/fs/cgroup/nk/cgroup.procs",
        Both => "echo $me > /sys/fs/cgroup/nk/cgroup.procs && taskset -p -c 0 $me >/dev/null",
    };
    format!(
        "read -r me _ < /proc/self/stat; {enter} || exit 99
         echo '@@ real'; /usr/bin/numactl {a} sh /tmp/probe-b.sh 2>/tmp/e1; echo \"@@ rc $?\"; [ -s /tmp/e1 ] && cat /tmp/e1 >&2
         echo '@@ numakit'; {NK} numactl {a} sh /tmp/probe-b.sh 2>/tmp/e2; echo \"@@ rc $?\"; [ -s /tmp/e2 ] && cat /tmp/e2 >&2
         true"
    )
}

/// `'…'` quoting for the guest's sh.
fn q(a: &str) -> String {
    format!("'{}'", a.replace('\'', "'\\''"))
}

/// The shell of one row: the runs, each as `@@ WHO` then its stdout and
/// `@@ rc CODE`. The symlink run only on every third row (`link`): the guest
/// is emulated, and each run costs about two seconds there.
fn row_script(args: &[&str], link: bool) -> String {
    let a: Vec<String> = args.iter().map(|x| q(x)).collect();
    let a = a.join(" ");
    let mut s = format!(
        "echo '@@ real'; /usr/bin/numactl {a} sh /tmp/probe.sh 2>/tmp/e1; echo \"@@ rc $?\"; cat /tmp/e1 >&2\n\
         echo '@@ numakit'; {NK} numactl {a} sh /tmp/probe.sh 2>/tmp/e2; echo \"@@ rc $?\"; cat /tmp/e2 >&2"
    );
    if link {
        s.push_str(&format!(
            "\necho '@@ link'; /tmp/nb/numactl {a} sh /tmp/probe.sh 2>/tmp/e3; echo \"@@ rc $?\"; cat /tmp/e3 >&2"
        ));
    }
    s
}

/// A run's (exit code, stdout with free memory and the interleave
/// pointer's node masked; a pointer outside `interleavemask` stays).
fn runs(out: &str) -> Vec<(String, i32, String)> {
    let mut v = Vec::new();
    for part in out.split("@@ ").filter(|p| !p.is_empty()) {
        if let Some(rc) = part.strip_prefix("rc ") {
            if let Some(last) = v.last_mut() {
                let (_, code, _): &mut (String, i32, String) = last;
                *code = rc.trim().parse().unwrap_or(-1);
            }
            continue;
        }
        let (who, text) = part.split_once('\n').unwrap_or((part, ""));
        let mask: Vec<&str> = text
            .lines()
            .find_map(|l| l.strip_prefix("interleavemask:"))
            .map(|m| m.split_whitespace().collect())
            .unwrap_or_default();
        // The interleave pointer's node, masked when it is in the mask: the
        // kernel moves the pointer at every page it allocates for the
        // process under the policy (page tables, slab pages), so even two
        // runs of the real numactl differ there now and then.
        let next = |node: &str, line: &str, masked: &str| match mask.contains(&node.trim()) {
            true => masked.to_string(),
            false => line.to_string(),
        };
        let masked: String = text
            .lines()
            .map(|l| {
                if let Some((head, _)) = l.split_once(" free: ") {
                    format!("{head} free: N MB\n")
                } else if let Some(n) =
                    l.strip_prefix("preferred node: ").and_then(|r| r.strip_suffix(" (interleave next)"))
                {
                    format!("{}\n", next(n, l, "preferred node: N (interleave next)"))
                } else if let Some(n) = l.strip_prefix("interleavenode: ") {
                    format!("{}\n", next(n, l, "interleavenode: N"))
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        v.push((who.trim().to_string(), -1, masked));
    }
    v
}

#[test]
fn vm_numactl_parity_table_on_4n_rr() {
    require_vm!();
    let rows = table();
    let setup = format!(
        "echo 0 > /proc/sys/kernel/numa_balancing\n\
         mkdir -p /tmp/nb && ln -sf {NK} /tmp/nb/numactl\n\
         cat > /tmp/probe.sh <<'EOS'\n\
         grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status\n\
         echo \"policy $(head -1 /proc/self/numa_maps | cut -d' ' -f2)\"\n\
         /usr/bin/numactl --show\n\
         EOS\n\
         cat > /tmp/probe-b.sh <<'EOS'\n\
         while IFS= read -r l; do case $l in Cpus_allowed_list*|Mems_allowed_list*) echo \"$l\";; esac; done < /proc/self/status\n\
         read -r _ p _ < /proc/self/numa_maps; echo \"policy $p\"\n\
         EOS\n\
         mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup\n\
         echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control && mkdir -p /sys/fs/cgroup/nk\n\
         echo 0-1,4-5 > /sys/fs/cgroup/nk/cpuset.cpus && echo 0-1 > /sys/fs/cgroup/nk/cpuset.mems\n\
         cat /sys/fs/cgroup/nk/cpuset.cpus.effective\n\
         /usr/bin/numactl --version 2>&1 | head -1; dpkg-query -W numactl"
    );
    // Two boots side by side (a guest is one TCG thread): the rows split in
    // half, the pin rows with the second half.
    let half = rows.len().div_ceil(2);
    let mut boots = vec![vec![("setup0".to_string(), setup.clone())], vec![("setup1".to_string(), setup)]];
    for (i, (args, _)) in rows.iter().enumerate() {
        boots[usize::from(i >= half)].push((format!("row{i:03}"), row_script(args, i % 3 == 0)));
    }
    // A quarter of the narrowed rows in the first boot, the rest in the
    // second: the first half of the table is the slower one (more `link`
    // runs and --hardware rows), and this split ends both boots together
    // (their guest uptimes are printed below).
    let narrowed = narrowed_table();
    for (i, (narrow, args, _)) in narrowed.iter().enumerate() {
        boots[usize::from(i % 4 != 0)].push((format!("narrow{i:03}"), narrowed_row_script(*narrow, args)));
    }
    boots[1].push(("pin_taskset".to_string(), pin_script()));
    for (b, boot) in boots.iter_mut().enumerate() {
        boot.push((format!("uptime{b}"), "cat /proc/uptime".to_string()));
    }
    let topo = Topology::named("4n-rr").expect("named topology");
    let out = Vm::run_boots(&topo, &boots, RunSpec::default().timeout(Duration::from_secs(1200)))
        .unwrap_or_else(|e| panic!("guest: {e}"));
    for setup in ["setup0", "setup1"] {
        assert!(out[setup].stdout.contains("2.0.16"), "the guest's numactl: {:?}", out[setup]);
        assert!(out[setup].stdout.starts_with("0-1,4-5\n"), "the cpuset nk: {:?}", out[setup]);
    }

    let (mut same, mut documented, mut failures) = (0, 0, Vec::new());
    for (i, (args, want)) in rows.iter().enumerate() {
        let o = &out[&format!("row{i:03}")];
        let r = runs(&o.stdout);
        let who: Vec<&str> = r.iter().map(|x| x.0.as_str()).collect();
        let want_who: &[&str] = if i % 3 == 0 { &["real", "numakit", "link"] } else { &["real", "numakit"] };
        assert_eq!(who, want_who, "row {args:?}: {o:?}");
        let real = &r[0];
        let describe = || {
            format!(
                "numactl {args:?} ({want:?}):\n{}\n--- stderr ---\n{}",
                r.iter().map(|(w, c, t)| format!("--- {w} exit {c} ---\n{t}")).collect::<String>(),
                o.stderr
            )
        };
        let ok = match want {
            Same => r[1..].iter().all(|(_, code, text)| {
                (*code == 0) == (real.1 == 0) && (real.1 != 0 || *text == real.2) && *code != -1
            }),
            NewerOption => real.1 != 0 && r[1..].iter().all(|(_, code, _)| *code == 0),
            NumakitRefuses => false,
        };
        if !ok {
            failures.push(describe());
        } else if *want == Same {
            same += 1;
        } else {
            documented += 1;
        }
    }
    eprintln!("numactl parity: {same} rows the same, {documented} documented differences, {} failing", failures.len());

    // The narrowed rows: the same rules, and every narrowing took effect
    // (the real numactl's own view of the affinity and memory nodes).
    let (mut n_same, mut n_documented, before) = (0, 0, failures.len());
    for (i, (narrow, args, want)) in narrowed.iter().enumerate() {
        let o = &out[&format!("narrow{i:03}")];
        let r = runs(&o.stdout);
        let who: Vec<&str> = r.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(who, ["real", "numakit"], "{narrow:?} row {args:?}: {o:?}");
        let real = &r[0];
        let ok = match want {
            Same => real.1 == 0 && r[1].1 == 0 && r[1].2 == real.2 || real.1 != 0 && r[1].1 > 0,
            NewerOption => real.1 != 0 && r[1].1 == 0,
            NumakitRefuses => false,
        };
        if !ok {
            failures.push(format!(
                "{narrow:?}: numactl {args:?} ({want:?}):\n{}\n--- stderr ---\n{}",
                r.iter().map(|(w, c, t)| format!("--- {w} exit {c} ---\n{t}")).collect::<String>(),
                o.stderr
            ));
        } else if *want == Same {
            n_same += 1;
        } else {
            n_documented += 1;
        }
    }
    for b in 0..2 {
        let up = out[&format!("uptime{b}")].stdout.split_whitespace().next().unwrap_or("?").to_string();
        eprintln!("boot {b}: {up} s of guest time at its end");
    }
    let shown = |n: Narrow, args: &[&str]| {
        let i = narrowed.iter().position(|(x, a, _)| *x == n && a == args).expect("row");
        runs(&out[&format!("narrow{i:03}")].stdout)[0].2.clone()
    };
    assert!(shown(Taskset, &["-s"]).contains("physcpubind: 0 2 \n"), "taskset took effect");
    assert!(shown(Cpuset, &["-s"]).contains("physcpubind: 0 1 4 5 \n"), "the cpuset took effect");
    assert!(shown(Cpuset, &["-s"]).contains("membind: 0 1 \n"), "the cpuset's nodes");
    assert!(shown(Both, &["-a", "-s"]).contains("physcpubind: 0 \n"), "taskset in the cpuset");
    eprintln!(
        "narrowed callers: {n_same} rows the same, {n_documented} documented differences, {} failing",
        failures.len() - before
    );

    // pin against taskset on 8 CPUs: same exit class and affinity, except
    // the documented rows (numakit refuses CPUs the machine lacks in a list).
    let o = &out["pin_taskset"];
    let mut pin_failures = Vec::new();
    let lines: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("pin ")).collect();
    assert_eq!(lines.len(), PIN_ROWS.len(), "every pin row ran: {o:?}");
    for (line, (form, value, want)) in lines.iter().zip(PIN_ROWS) {
        // "pin FORM VALUE | taskset RC CPUS | numakit RC CPUS"
        let f: Vec<&str> = line.split(" | ").collect();
        let t: Vec<&str> = f[1].split_whitespace().collect();
        let n: Vec<&str> = f[2].split_whitespace().collect();
        let ok = match want {
            Same => (t[1] == "0") == (n[1] == "0") && (t[1] != "0" || t.get(2) == n.get(2)),
            NumakitRefuses => t[1] == "0" && n[1] == "2",
            NewerOption => false,
        };
        if !ok {
            pin_failures.push(format!("{form} {value}: {line}"));
        }
    }
    eprintln!("pin vs taskset on 8 CPUs: {} rows, {} failing\n{}", lines.len(), pin_failures.len(), lines.join("\n"));
    assert!(failures.is_empty(), "{} of {} rows:\n{}", failures.len(), rows.len(), failures.join("\n"));
    assert!(pin_failures.is_empty(), "pin vs taskset:\n{}\n{o:?}", pin_failures.join("\n"));
}

/// `numakit pin` against `taskset -p` on the guest's 8 CPUs: (form, value,
/// want).
const PIN_ROWS: &[(&str, &str, Want)] = &[
    ("mask", "0xf0", Same),
    ("mask", "55", Same),
    ("mask", "0x80", Same),
    ("mask", "ff", Same),
    ("mask", "ff,ffffffff", Same),
    ("mask", "00000000,00000006", Same),
    ("mask", "0x100", Same),
    ("mask", "0", Same),
    ("list", "0-7:2", Same),
    ("list", "1-7:3", Same),
    ("list", "4-5,7", Same),
    ("list", "6-2", Same),
    ("list", "8", Same),
    ("list", "0-15:4", NumakitRefuses),
    ("list", "0,9", NumakitRefuses),
];

/// Shell: each pin row on a sleeping child, affinity reset to 0-7 before
/// each tool; prints `pin FORM VALUE | taskset RC CPUS | numakit RC CPUS`.
fn pin_script() -> String {
    let mut s = String::from(
        "sleep 600 & C=$!
         cpus() { grep Cpus_allowed_list /proc/$C/status | cut -f2; }
",
    );
    for (form, value, _) in PIN_ROWS {
        let (ts, nk) = if *form == "mask" {
            (format!("taskset -p {v} $C", v = q(value)), format!("{NK} pin --mask {v} $C", v = q(value)))
        } else {
            (format!("taskset -p -c {v} $C", v = q(value)), format!("{NK} pin -c {v} $C", v = q(value)))
        };
        s.push_str(&format!(
            "taskset -p -c 0-7 $C >/dev/null; {ts} >/dev/null 2>&1; t=\"$? $(cpus)\"\n\
             taskset -p -c 0-7 $C >/dev/null; {nk} >/dev/null 2>/tmp/pe; n=\"$? $(cpus)\"; cat /tmp/pe >&2\n\
             echo \"pin {form} {value} | taskset $t | numakit $n\"\n"
        ));
    }
    s.push_str("kill $C\n");
    s
}
