//! `numakit stat` and the exporter in a real 4-node kernel (QEMU test bed,
//! topology `4n-rr`: CPU i on node i % 4), in two boots side by side:
//!
//! * a helper holding 64 MiB bound to node 2 (`numakit run -N 2 -m 2`)
//!   shows it in `stat -p`: every byte numa_maps puts on node 2 (between
//!   numa_maps read just before and just after: file pages of what it maps
//!   may come and go meanwhile), the 64 MiB mapping on node 2 within one
//!   page, locality 100%, and the same bytes in the exporter (bracketed the
//!   same way);
//! * a helper interleaved over nodes 0 and 1 while running on node 0 is
//!   about 50% local;
//! * node counters equal numastat's for the same quiet moment (a frozen
//!   copy bind-mounted for numastat), and live ones lie between two
//!   numastat runs;
//! * PIDs exiting while `stat -p` reads them do not break its output;
//! * numakit invoked as `numastat` prints what the real numastat prints,
//!   byte for byte, for `-n -m -c -s -v -z -V -p` and mixes, with and
//!   without `NUMASTAT_WIDTH` (see [`numastat_parity`]).
//!
//! AutoNUMA is turned off in the guest first, so that nothing moves the
//! helpers' pages between the readings compared.
//!
//! Skipped when QEMU cannot run here, failed instead under `CI=true`.

use std::collections::BTreeMap;
use std::time::Duration;

use numakit_testbed::{require_vm, RunSpec, Topology, Vm};
use serde_json::Value;

const NK: &str = env!("CARGO_BIN_EXE_numakit");
const MIB: u64 = 64;

/// A python helper that maps `MIB` MiB of shared anonymous memory (its
/// own mapping: shared, it never merges with the interpreter's private
/// memory), writes every page, says it is ready, and sleeps.
fn helper(tag: &str) -> String {
    format!(
        "/usr/bin/python3 -c \"import mmap, time\nm = mmap.mmap(-1, {MIB} << 20)\n\
         for i in range(0, len(m), 4096): m[i] = 1\n\
         open('/tmp/{tag}.ready', 'w').write('1')\ntime.sleep(900)\""
    )
}

/// The checks, in two boots side by side (a guest is one TCG thread): the
/// numastat parity rows in one, the rest in the other, each boot with its
/// own helpers.
fn boots() -> Vec<Vec<(String, String)>> {
    // AutoNUMA off first: the guest kernel boots with it on, and it can move
    // the helpers' shared-library pages to the node they run on while the
    // checks read them (a clean-clone CI run saw 312 pages more on node 2 in
    // the exporter than in `stat -p` read earlier, the likely cause). The
    // checks compare readings taken at different moments, so the memory
    // must stay where it is.
    let start = format!(
        "echo 0 > /proc/sys/kernel/numa_balancing\n\
         {NK} run -N 2 -m 2 -- {bound} >/dev/null 2>&1 &\necho $! > /tmp/bound.pid\n\
         {NK} run -N 0 -i 0,1 -- {inter} >/dev/null 2>&1 &\necho $! > /tmp/inter.pid\n\
         for i in $(seq 300); do [ -e /tmp/bound.ready ] && [ -e /tmp/inter.ready ] && break; sleep 0.1; done\n\
         cat /tmp/bound.pid /tmp/inter.pid; cat /proc/$(cat /tmp/bound.pid)/comm",
        bound = helper("bound"),
        inter = helper("inter"),
    );
    let frozen = format!(
        "R=/tmp/frozen; mkdir -p $R/sys/devices/system/cpu\n\
         for d in /sys/devices/system/node/node[0-9]*; do mkdir -p $R$d; cat $d/numastat > $R$d/numastat; done\n\
         unshare -m --propagation private sh -c \"mount --bind $R/sys/devices/system/node /sys/devices/system/node && numastat\"\n\
         echo '=== ours'; {NK} --sysroot $R stat --compat\n\
         echo '=== json'; {NK} --sysroot $R stat --json"
    );
    let exiting = format!(
        "B=$(cat /tmp/bound.pid)\n\
         for round in 1 2 3 4 5; do\n\
           pids=''\n\
           for i in $(seq 1 60); do sleep 0.0$((i % 9 + 1)) >/dev/null 2>&1 & pids=\"$pids $!\"; done\n\
           {NK} stat -p $B $pids --json > /tmp/ex.json 2>/tmp/ex.err; rc=$?\n\
           echo \"=== $round $rc $(cat /tmp/ex.err | wc -l)\"; cat /tmp/ex.json\n\
           wait\n\
         done"
    );
    let exporter = format!(
        "ip link set lo up\n\
         {NK} exporter --listen 127.0.0.1:0 --top 5 >/dev/null 2>/tmp/exp.err &\nE=$!\n\
         for i in $(seq 100); do grep -q http:// /tmp/exp.err && break; sleep 0.1; done\n\
         {scrape}\nkill $E",
        scrape = bracketed("curl -sS \"$(grep -o 'http://[^ ]*' /tmp/exp.err)\"")
    );
    let stop = "kill $(cat /tmp/bound.pid) $(cat /tmp/inter.pid)";
    vec![
        vec![
            ("start0".into(), start.clone()),
            ("numastat_parity".into(), numastat_parity()),
            ("stop0".into(), stop.into()),
        ],
        vec![
            ("start1".into(), start),
            ("bound".into(), bracketed(&format!("{NK} stat -p $(cat /tmp/bound.pid) --json"))),
            ("inter_json".into(), format!("{NK} stat -p $(cat /tmp/inter.pid) --json")),
            ("inter_maps".into(), "cat /proc/$(cat /tmp/inter.pid)/numa_maps".into()),
            ("text".into(), format!("{NK} stat -p $(cat /tmp/bound.pid) $(cat /tmp/inter.pid)")),
            ("frozen".into(), frozen),
            ("bracket".into(), format!("numastat; echo '=== ours'; {NK} stat --compat; echo '=== after'; numastat")),
            ("exiting".into(), exiting),
            ("exporter".into(), exporter),
            ("stop1".into(), stop.into()),
        ],
    ]
}

/// The rows of the numastat parity check: `NUMASTAT_WIDTH` (empty: unset)
/// and the arguments (`$B`/`$I` the bound/interleaved helper's pid).
const NUMASTAT_ROWS: &[(&str, &str)] = &[
    ("", ""),
    ("", "-n"),
    ("", "-m"),
    ("", "-c -m"),
    ("", "-z -n"),
    ("", "-s"),
    ("", "-s2"),
    ("", "-c"),
    ("", "-z"),
    ("", "-v"),
    ("", "-m -n"),
    ("", "-czs"),
    ("", "-V"),
    ("", "-p $I"),
    ("", "-p $B -p $I"),
    ("", "-v -p $I"),
    ("", "-c $B $I"),
    ("", "-z -p $I"),
    ("", "-m -p $I"),
    ("", "-p python3"),
    ("", "-p 999999999"),
    ("200", ""),
    ("200", "-n"),
    ("200", "-m"),
    ("200", "-c -m"),
    ("200", "-p $B $I"),
    ("200", "-s -m -n"),
    ("40", "-m"),
];

/// Shell: the real numastat and numakit invoked as `numastat` (a symlink in
/// the guest's /tmp, first in PATH, so both see the same argv[0]) on the
/// rows above. Node counters and meminfo are frozen first (every regular
/// file of /sys/devices/system/node copied, bind-mounted back over it in a
/// private mount namespace): both then read the same figures and compare
/// byte for byte, stdout, stderr and exit code. The process rows read the
/// live numa_maps of sleeping helpers, which the page cache can still
/// change (file pages of the interpreter): ours must equal one of two real
/// runs around it, with up to three tries.
fn numastat_parity() -> String {
    let mut rows = String::new();
    for (w, args) in NUMASTAT_ROWS {
        rows.push_str(&format!("row '{w}' {args}\n"));
    }
    format!(
        "mkdir -p /tmp/ns && ln -sf {NK} /tmp/ns/numastat\n\
         R=/tmp/frozen-ns; rm -rf $R\n\
         find /sys/devices/system/node -maxdepth 4 -type f | while read f; do\n\
           d=$R${{f#/sys/devices/system/node}}; mkdir -p \"${{d%/*}}\"; cat \"$f\" > \"$d\" 2>/dev/null\n\
         done\n\
         cat > /tmp/nsparity.sh <<'EOS'\n\
         mount --bind /tmp/frozen-ns /sys/devices/system/node || exit 9\n\
         B=$(cat /tmp/bound.pid); I=$(cat /tmp/inter.pid)\n\
         echo \"ours $(PATH=/tmp/ns:$PATH command -v numastat) theirs $(command -v numastat)\"\n\
         one() {{ ( if [ -n \"$W\" ]; then export NUMASTAT_WIDTH=$W; else unset NUMASTAT_WIDTH; fi\n\
           if [ $1 = ours ]; then PATH=/tmp/ns:$PATH; fi; t=$2; shift 2\n\
           numastat \"$@\" > /tmp/ns.$t.out 2> /tmp/ns.$t.err; echo $? > /tmp/ns.$t.rc ) ; }}\n\
         same() {{ cmp -s /tmp/ns.$1.out /tmp/ns.o.out && cmp -s /tmp/ns.$1.err /tmp/ns.o.err && cmp -s /tmp/ns.$1.rc /tmp/ns.o.rc; }}\n\
         row() {{ W=$1; shift\n\
           for try in 1 2 3; do\n\
             one real a \"$@\"; one ours o \"$@\"; one real b \"$@\"\n\
             if same a || same b; then echo \"same [$W] $* (try $try, $(wc -l < /tmp/ns.o.out) lines, exit $(cat /tmp/ns.o.rc))\"; return; fi\n\
           done\n\
           echo \"DIFF [$W] $*\"; for x in a o; do echo \"--- $x exit $(cat /tmp/ns.$x.rc)\"; cat /tmp/ns.$x.out /tmp/ns.$x.err; done\n\
         }}\n\
         {rows}EOS\n\
         unshare -m --propagation private sh /tmp/nsparity.sh"
    )
}

/// Shell: `cmd` between two reads of the bound helper's numa_maps (file
/// pages of what it maps may come and go while `cmd` reads).
fn bracketed(cmd: &str) -> String {
    format!(
        "B=$(cat /tmp/bound.pid); cat /proc/$B/numa_maps; echo '=== run'\n{cmd}\n\
         echo '=== after'; cat /proc/$B/numa_maps"
    )
}

/// Of [`bracketed`]'s output: the bytes numa_maps put on node 2 before and
/// after (smaller first), what `cmd` printed, and the numa_maps after.
fn bracket_on_2(out: &str) -> ((u64, u64), &str, &str) {
    let (before, rest) = out.split_once("=== run\n").expect("run marker");
    let (printed, after) = rest.split_once("=== after\n").expect("after marker");
    let on_2 = |maps: &str| maps_bytes(maps).get(&2).copied().unwrap_or(0);
    let (a, b) = (on_2(before), on_2(after));
    ((a.min(b), a.max(b)), printed, after)
}

/// Pages per node of one numa_maps line, and its page size.
fn line_pages(line: &str) -> (BTreeMap<u32, u64>, u64, u64) {
    let mut nodes = BTreeMap::new();
    let (mut anon, mut page) = (0, 4096);
    for tok in line.split_whitespace() {
        if let Some((k, v)) = tok.split_once('=') {
            if let (Some(n), Ok(v)) = (k.strip_prefix('N').and_then(|n| n.parse().ok()), v.parse::<u64>()) {
                nodes.insert(n, v);
            } else if k == "anon" {
                anon = v.parse().unwrap_or(0);
            } else if k == "kernelpagesize_kB" {
                page = v.parse::<u64>().unwrap_or(4) * 1024;
            }
        }
    }
    (nodes, anon, page)
}

/// Bytes per node over all lines.
fn maps_bytes(text: &str) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let (nodes, _, page) = line_pages(l);
        for (n, p) in nodes {
            *out.entry(n).or_default() += p * page;
        }
    }
    out
}

/// Pages per node of the helper's buffer (the `/dev/zero` shared mapping).
fn big_mapping(text: &str) -> BTreeMap<u32, u64> {
    text.lines().filter(|l| l.contains("file=/dev/zero")).map(line_pages).map(|(n, _, _)| n).next().unwrap_or_default()
}

fn process(json: &str) -> Value {
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(v["processes"].as_array().map(Vec::len), Some(1), "{v}");
    v["processes"][0].clone()
}

fn node_bytes(p: &Value, id: u64) -> u64 {
    p["nodes"].as_array().and_then(|a| a.iter().find(|n| n["id"] == id)).and_then(|n| n["bytes"].as_u64()).unwrap_or(0)
}

fn parse_compat(text: &str) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    let mut header: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if line.starts_with(' ') {
            header = line.split_whitespace().map(str::to_string).collect();
            continue;
        }
        let mut f = line.split_whitespace();
        let name = f.next().unwrap_or_default().to_string();
        for (node, v) in header.iter().zip(f) {
            out.push((node.clone(), name.clone(), v.parse().unwrap_or(u64::MAX)));
        }
    }
    out
}

#[test]
fn vm_stat_in_four_nodes() {
    require_vm!();
    let topo = Topology::named("4n-rr").expect("named topology");
    let out = Vm::run_boots(&topo, &boots(), RunSpec::default().timeout(Duration::from_secs(600)))
        .unwrap_or_else(|e| panic!("guest: {e}"));
    let get = |k: &str| out[k].stdout.clone();
    let mut helpers = Vec::new();
    for start in ["start0", "start1"] {
        let started = get(start);
        let ids: Vec<String> = started.lines().map(str::to_string).collect();
        assert!(ids.len() == 3 && ids[2] == "python3", "helpers did not start: {started}\n{}", out[start].stderr);
        helpers.push(ids);
    }
    // The pids the checks of the second boot read.
    let (bound_pid, inter_pid) = (helpers[1][0].as_str(), helpers[1][1].as_str());
    let mib = MIB << 20;

    // numastat parity: the real numastat and numakit as `numastat`, byte for
    // byte on frozen counters and meminfo, the process rows bracketed.
    let o = &out["numastat_parity"];
    let lines: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("same [") || l.starts_with("DIFF [")).collect();
    assert!(o.stdout.contains("ours /tmp/ns/numastat theirs /usr/bin/numastat"), "which numastat ran: {o:?}");
    assert_eq!(lines.len(), NUMASTAT_ROWS.len(), "every row ran: {o:?}");
    assert!(!o.stdout.contains("DIFF ["), "numastat vs numakit as numastat:\n{}\n{}", o.stdout, o.stderr);
    eprintln!("numastat parity in the guest: {} rows the same\n{}", lines.len(), lines.join("\n"));

    // Bound to node 2: everything numa_maps puts on node 2 (read just before
    // and just after), and the buffer there.
    let bound = get("bound");
    let ((lo, hi), json, maps) = bracket_on_2(&bound);
    let p = process(json);
    assert_eq!(p["pid"].to_string(), bound_pid);
    assert_eq!(p["cpus_nodes"], serde_json::json!([2]), "{p}");
    assert_eq!(p["locality"].as_f64(), Some(1.0), "{p}");
    assert!((lo..=hi).contains(&node_bytes(&p, 2)), "numa_maps {lo} before, {hi} after: {p}\n{maps}");
    assert!(node_bytes(&p, 2) >= mib, "{p}");
    let big = big_mapping(maps);
    let pages = MIB * 256;
    assert!(big.len() == 1 && big.get(&2).is_some_and(|&n| (pages..=pages + 1).contains(&n)), "buffer: {big:?}");
    let total: u64 = (0..4).map(|n| node_bytes(&p, n)).sum();
    assert_eq!(p["total_bytes"].as_u64(), Some(total));
    eprintln!(
        "bound helper {bound_pid}: node 2 {} bytes (numa_maps: {lo} before, {hi} after), buffer {big:?} pages, \
         locality {}, total {total}",
        node_bytes(&p, 2),
        p["locality"]
    );

    // Interleaved over 0 and 1, running on node 0: about half local.
    let q = process(&get("inter_json"));
    assert_eq!(q["pid"].to_string(), inter_pid);
    assert_eq!(q["cpus_nodes"], serde_json::json!([0]), "{q}");
    let loc = q["locality"].as_f64().expect("locality");
    assert!((0.40..=0.60).contains(&loc), "interleaved locality {loc}: {q}");
    let big = big_mapping(&get("inter_maps"));
    let half = pages / 2;
    assert!(
        big.keys().copied().collect::<Vec<_>>() == [0, 1] && big.values().all(|&n| (half - 1..=half + 1).contains(&n)),
        "interleaved buffer: {big:?}"
    );
    eprintln!(
        "interleaved helper {inter_pid}: locality {loc:.4}, buffer {big:?} pages, cpus_nodes {}",
        q["cpus_nodes"]
    );
    let text = get("text");
    assert!(text.contains(&format!("{bound_pid} (python3)")) && text.contains("100.0%  runs on node 2"), "{text}");

    // Node counters of one frozen moment: numastat's text, ours, our JSON.
    let frozen = get("frozen");
    let (theirs, rest) = frozen.split_once("=== ours\n").expect("ours");
    let (ours, json) = rest.split_once("=== json\n").expect("json");
    assert_eq!(ours, theirs, "stat --compat vs numastat on the same counters");
    let v: Value = serde_json::from_str(json).expect("stat --json");
    let parsed = parse_compat(theirs);
    assert_eq!(parsed.len(), 4 * 6, "{theirs}");
    for (node, name, value) in parsed {
        let id: u64 = node.trim_start_matches("node").parse().expect("node id");
        let n = v["nodes"].as_array().and_then(|a| a.iter().find(|n| n["id"] == id)).expect("node in json");
        assert_eq!(n[&name].as_u64(), Some(value), "{node} {name}");
    }

    // Live: between two numastat runs.
    let bracket = get("bracket");
    let (before, rest) = bracket.split_once("=== ours\n").expect("ours");
    let (ours, after) = rest.split_once("=== after\n").expect("after");
    let (a, b, c) = (parse_compat(before), parse_compat(ours), parse_compat(after));
    assert_eq!((a.len(), b.len(), c.len()), (24, 24, 24), "{bracket}");
    for ((x, y), z) in a.iter().zip(&b).zip(&c) {
        assert!(x.2 <= y.2 && y.2 <= z.2, "{} {}: {} <= {} <= {}", y.0, y.1, x.2, y.2, z.2);
    }

    // PIDs exiting while read.
    let exiting = get("exiting");
    let rounds: Vec<&str> = exiting.split("=== ").filter(|s| !s.trim().is_empty()).collect();
    assert_eq!(rounds.len(), 5, "{exiting}");
    for r in rounds {
        let (head, json) = r.split_once('\n').expect("round");
        let f: Vec<&str> = head.split_whitespace().collect();
        assert_eq!(f[1], "0", "stat -p exit status in round {head}: {json}");
        assert!(f[2] == "0" || f[2] == "1", "more than one stderr line in round {head}");
        let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("round {head}: {e}: {json}"));
        let shown = v["processes"].as_array().expect("processes");
        let bound: i64 = bound_pid.parse().expect("pid");
        assert!(shown.iter().any(|p| p["pid"] == bound), "round {head}: bound helper missing");
        let n =
            shown.len() + v["exited"].as_array().map_or(0, Vec::len) + v["unreadable"].as_array().map_or(0, Vec::len);
        assert_eq!(n, 61, "round {head}: every PID accounted for: {v}");
    }

    // The exporter shows the same bytes as numa_maps read just before and
    // just after its scrape. (Not as `stat -p` read minutes earlier: the
    // helper sleeps, but file pages of what it maps can come into the page
    // cache on its node meanwhile; a CI run saw 328 more on node 2.)
    let exported = get("exporter");
    let ((lo, hi), page, _) = bracket_on_2(&exported);
    let (lo, hi) = (lo as f64, hi as f64);
    let metric = |name: &str, pid: &str, node: Option<&str>| -> Option<f64> {
        page.lines().find_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let ok = series.starts_with(&format!("{name}{{"))
                && series.contains(&format!("pid=\"{pid}\""))
                && node.is_none_or(|n| series.contains(&format!("node=\"{n}\"")));
            ok.then(|| value.parse().ok()).flatten()
        })
    };
    let got = metric("numakit_process_memory_bytes", bound_pid, Some("2"));
    assert!(
        got.is_some_and(|b| lo <= b && b <= hi && b >= (MIB << 20) as f64),
        "exporter {got:?} bytes on node 2, numa_maps {lo} before / {hi} after:\n{page}"
    );
    assert_eq!(metric("numakit_process_locality_ratio", bound_pid, None), Some(1.0));
    assert!(page.contains("numakit_node_memory_free_bytes{node=\"3\"}"), "{page}");
}
