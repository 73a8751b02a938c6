//! `numakit tune` in a real multi-node kernel (QEMU test bed, `2s-intel-ht`:
//! two nodes, debugfs mounted, Debian kernel 6.x), one boot for all checks:
//!
//! * `tune show` finds every knob this kernel has (debugfs scan knobs,
//!   per-node weights);
//! * `set` changes the values and `revert` restores them exactly;
//! * `kill -9` between two writes, then `revert`, restores all of them;
//! * apply twice (three times), then `revert`: the FIRST originals come back;
//! * an invalid value is refused with nothing written and no state file;
//! * the effect of `kernel.numa_balancing` 0 vs 1: a task running on node 0
//!   whose 64 MiB sit on node 1 takes no NUMA hinting faults (and no page
//!   moves) with 0, and takes them (and its pages move to node 0) with 1;
//! * `tune check` reads the guest.
//!
//! Skipped when QEMU cannot run here, failed instead under `CI=true`.

use std::collections::BTreeMap;
use std::time::Duration;

use numakit_testbed::{require_vm, Output, RunSpec, Topology, Vm};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

/// Shell helpers every check starts with (each check runs in its own subshell).
fn prelude() -> String {
    format!(
        r#"NK={BIN}
export NUMAKIT_TUNE_STATE=/tmp/tune-state.json
vals() {{
  for f in /proc/sys/kernel/numa_balancing /proc/sys/vm/zone_reclaim_mode \
      /sys/kernel/mm/transparent_hugepage/enabled \
      /sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs \
      /sys/kernel/mm/mempolicy/weighted_interleave/node1 \
      /sys/kernel/debug/sched/numa_balancing/scan_delay_ms; do
    printf '%s|' "$(cat $f)"
  done
  echo
}}
"#
    )
}

const SET_REVERT: &str = r#"
echo "before $(vals)"
$NK tune set kernel.numa_balancing=0 vm.zone_reclaim_mode=1 thp=never \
  khugepaged.scan_sleep_millisecs=100 wi.node1=3 scan_delay_ms=500 || exit 1
echo "applied $(vals)"
$NK tune revert || exit 1
echo "reverted $(vals)"
test -e "$NUMAKIT_TUNE_STATE" && echo "state kept" || echo "state removed"
"#;

const KILL9: &str = r#"
echo "before $(vals)"
NUMAKIT_TUNE_PAUSE_AFTER_WRITE=2 $NK tune set autonuma=0 zone_reclaim_mode=1 thp=never \
  khugepaged.scan_sleep_millisecs=100 >/dev/null 2>/tmp/kill9.err &
pid=$!
i=0
until grep -q 'paused after write 2 ' /tmp/kill9.err; do
  i=$((i+1))
  if [ $i -gt 900 ]; then echo "never paused"; cat /tmp/kill9.err; kill -9 $pid; exit 1; fi
  sleep 0.2
done
kill -9 $pid
wait $pid
echo "killed status=$?"
echo "mid $(vals)"
test -e "$NUMAKIT_TUNE_STATE" && echo "state kept"
$NK tune revert || exit 1
echo "reverted $(vals)"
"#;

const TWICE: &str = r#"
echo "before $(vals)"
$NK tune apply hep-farm || exit 1
$NK tune set khugepaged.scan_sleep_millisecs=200 autonuma=0 || exit 1
$NK tune apply latency || exit 1
echo "applied $(vals)"
$NK tune revert || exit 1
echo "reverted $(vals)"
"#;

const INVALID: &str = r#"
echo "before $(vals)"
$NK tune set vm.zone_reclaim_mode=1 kernel.numa_balancing=7
echo "status $?"
echo "after $(vals)"
test -e "$NUMAKIT_TUNE_STATE" && echo "state exists" || echo "no state"
"#;

/// Hinting faults of a task on node 0 whose memory is on node 1: allocated
/// (first touch, default policy) while running on node 1's CPUs, then the
/// task is moved to node 0's CPUs and keeps touching its 64 MiB, for 10 s
/// with balancing off, and with it on until the first faults, moves and page
/// on node 0 are seen (10 s at most). Faster
/// scanning (scan_delay/period_min 100 ms) through `tune set`, undone at the
/// end by `tune revert`.
const HINT_FAULTS: &str = r#"
cat > /tmp/touch.pl <<'PL'
my ($ready) = @ARGV;
my $n = 64 << 20;
my $s = "\0" x $n;
for (my $i = 0; $i < $n; $i += 4096) { vec($s, $i, 8) = 1 }
open(my $f, ">", $ready) or die "$ready: $!"; close $f;
while (1) { for (my $i = 0; $i < $n; $i += 4096) { vec($s, $i, 8) = 2 } }
PL
vmstat() { awk -v k="$1" '$1==k {print $2}' /proc/vmstat; }
pages() { grep -o 'N[0-9]*=[0-9]*' /proc/$1/numa_maps | awk -F= -v p="$2" '{s[$1]+=$2} END {printf "%s_N0=%d %s_N1=%d", p, s["N0"], p, s["N1"]}'; }
$NK tune set kernel.numa_balancing=0 scan_delay_ms=100 scan_period_min_ms=100 >/dev/null || exit 1
sleep 2
for mode in 0 1; do
  $NK tune set kernel.numa_balancing=$mode >/dev/null || exit 1
  rm -f /tmp/ready
  $NK run -N 1 -- perl /tmp/touch.pl /tmp/ready &
  pid=$!
  i=0
  while [ ! -e /tmp/ready ]; do i=$((i+1)); [ $i -gt 900 ] && { echo "toucher never ready"; exit 1; }; sleep 0.2; done
  before=$(pages $pid before)
  $NK pin $pid --nodes 0 >/dev/null || exit 1
  h0=$(vmstat numa_hint_faults); m0=$(vmstat numa_pages_migrated)
  # 0: the whole 10 s, nothing may happen in them; 1: until faults, moves and
  # a page on node 0 are seen, 10 s at most
  i=0
  while [ $i -lt 10 ]; do
    sleep 1; i=$((i+1))
    [ $mode = 0 ] && continue
    h1=$(vmstat numa_hint_faults); m1=$(vmstat numa_pages_migrated); after=$(pages $pid after)
    [ $((h1-h0)) -gt 0 ] && [ $((m1-m0)) -gt 0 ] && [ "${after#after_N0=0 }" = "$after" ] && break
  done
  h1=$(vmstat numa_hint_faults); m1=$(vmstat numa_pages_migrated)
  after=$(pages $pid after)
  kill $pid; wait $pid 2>/dev/null
  echo "mode=$mode hint_faults=$((h1-h0)) pages_migrated=$((m1-m0)) $before $after"
done
$NK tune revert >/dev/null || exit 1
echo "reverted balancing=$(cat /proc/sys/kernel/numa_balancing) scan_delay=$(cat /sys/kernel/debug/sched/numa_balancing/scan_delay_ms)"
"#;

/// The `TAG ...` line of a check's output, without the tag.
fn tagged(o: &Output, tag: &str) -> String {
    let prefix = format!("{tag} ");
    o.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no '{tag}' line in: {o:?}"))
        .to_string()
}

/// The `|`-separated knob values of a `vals` line.
fn fields(line: &str) -> Vec<String> {
    line.trim_end_matches('|').split('|').map(str::to_string).collect()
}

/// `key=value` pairs of a line.
fn pairs(line: &str) -> BTreeMap<String, i64> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect()
}

#[test]
fn vm_tune_in_a_two_node_kernel() {
    require_vm!();
    let t = Topology::named("2s-intel-ht").expect("named topology");
    let p = prelude();
    let checks: Vec<(&str, String)> = vec![
        ("show", format!("{p}$NK tune show --json")),
        ("set_revert", format!("{p}{SET_REVERT}")),
        ("kill9", format!("{p}{KILL9}")),
        ("twice", format!("{p}{TWICE}")),
        ("invalid", format!("{p}{INVALID}")),
        ("hint_faults", format!("{p}{HINT_FAULTS}")),
        ("check", format!("{p}$NK tune check --json")),
    ];
    let spec = RunSpec::default().timeout(Duration::from_secs(900));
    let out = Vm::run_checks(&t, &checks, spec).unwrap_or_else(|e| panic!("{e}"));
    for (name, o) in &out {
        eprintln!("--- {name} (status {})\n{}{}", o.status, o.stdout, o.stderr);
    }

    // show: every knob this kernel has is found, debugfs ones included
    let show = &out["show"];
    assert!(show.success(), "{show:?}");
    let v: Value = serde_json::from_str(&show.stdout).expect("show json");
    let knob = |name: &str| -> Value {
        v["knobs"].as_array().expect("knobs").iter().find(|k| k["name"] == name).cloned().unwrap_or(Value::Null)
    };
    assert_eq!(knob("kernel.numa_balancing")["value"], "1", "a 2-node guest boots with AutoNUMA on");
    let scan = knob("kernel.numa_balancing_scan_delay_ms");
    assert_eq!(scan["path"], "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms", "{scan}");
    assert_eq!(scan["value"], "1000");
    for n in 0..2 {
        let w = knob(&format!("kernel/mm/mempolicy/weighted_interleave/node{n}"));
        assert!(w["available"].as_bool().unwrap_or(false), "{w}");
    }

    // set changes every value, revert restores exactly what was there
    let o = &out["set_revert"];
    assert!(o.success(), "{o:?}");
    let before = fields(&tagged(o, "before"));
    let applied = fields(&tagged(o, "applied"));
    assert_eq!(before.len(), 6, "{before:?}");
    assert_eq!(applied[0], "0");
    assert_eq!(applied[1], "1");
    assert!(applied[2].contains("[never]"), "{applied:?}");
    assert_eq!(&applied[3..], &["100", "3", "500"]);
    assert_eq!(fields(&tagged(o, "reverted")), before);
    assert!(o.stdout.contains("state removed"), "{o:?}");

    // kill -9 after the second of four writes: revert restores both written knobs
    let o = &out["kill9"];
    assert!(o.success(), "{o:?}");
    let before = fields(&tagged(o, "before"));
    let mid = fields(&tagged(o, "mid"));
    assert_eq!(tagged(o, "killed"), "status=137", "{o:?}");
    assert_eq!((mid[0].as_str(), mid[1].as_str()), ("0", "1"), "writes 1 and 2 made: {mid:?}");
    assert_eq!((&mid[2], &mid[3]), (&before[2], &before[3]), "writes 3 and 4 never made: {mid:?}");
    assert!(o.stdout.contains("state kept"));
    assert_eq!(fields(&tagged(o, "reverted")), before);

    // three applies on top of each other, one revert: the first originals
    let o = &out["twice"];
    assert!(o.success(), "{o:?}");
    let before = fields(&tagged(o, "before"));
    let applied = fields(&tagged(o, "applied"));
    assert_eq!((applied[0].as_str(), applied[3].as_str()), ("0", "200"), "{applied:?}");
    assert_eq!(fields(&tagged(o, "reverted")), before);

    // an invalid value: exit 2, nothing written, no state file
    let o = &out["invalid"];
    assert_eq!(tagged(o, "status"), "2", "{o:?}");
    assert_eq!(tagged(o, "after"), tagged(o, "before"));
    assert!(o.stdout.contains("no state"), "{o:?}");
    assert!(o.stderr.contains("kernel.numa_balancing=7: must be an integer from 0 to 3"), "{o:?}");

    // numa_balancing 0: no hinting faults, nothing moves; 1: faults, pages move to node 0
    let o = &out["hint_faults"];
    assert!(o.success(), "{o:?}");
    let line = |mode: i64| {
        o.stdout
            .lines()
            .map(pairs)
            .find(|p| p.get("mode") == Some(&mode))
            .unwrap_or_else(|| panic!("no mode={mode} line: {o:?}"))
    };
    let (off, on) = (line(0), line(1));
    for p in [&off, &on] {
        assert!(p["before_N1"] > 15_000, "the toucher's 64 MiB start on node 1: {p:?}");
    }
    assert_eq!((off["hint_faults"], off["pages_migrated"]), (0, 0), "balancing off: flat: {off:?}");
    assert!(on["hint_faults"] > 0, "balancing on: hinting faults: {on:?}");
    assert!(on["pages_migrated"] > 0 && on["after_N0"] > 0, "balancing on: pages move to node 0: {on:?}");
    assert!(o.stdout.contains("reverted balancing=1 scan_delay=1000"), "{o:?}");

    // check reads the guest
    let o = &out["check"];
    assert!(o.success(), "{o:?}");
    let v: Value = serde_json::from_str(&o.stdout).expect("check json");
    let autonuma = v["findings"].as_array().expect("findings").iter().find(|f| f["key"] == "autonuma").cloned();
    assert_eq!(autonuma.map(|f| f["value"].clone()), Some(Value::from("1")));
}
