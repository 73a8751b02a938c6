//! The SPANK plugin in a real Slurm inside the 4-node test bed guest
//! (`4n-rr`: node k has CPUs k and k+4, 512 MiB), one boot, three Slurm
//! configurations one after the other, each started and torn down by
//! `nk-slurm` (crates/testprogs, on `numakit_testbed::slurm`):
//!
//! 1. `task/none`, `proctrack/cgroup` (cgroup v2, the cpuset controller
//!    enabled down to `system.slice`, not in Slurm's folders):
//!    - a. two `srun --numa=auto -c2` jobs started together end on disjoint
//!      nodes, each with its CPUs on its node and >= 99% of its pages there;
//!    - e. the step's report (`report=DIR`) equals the step's tasks'
//!      memory per node as numa_maps shows it, and names the job's node; its
//!      allowed CPUs are those of the nearest folder above the step's that
//!      has a cpuset file (Slurm's step, user and task folders have none);
//!    - f. `sbatch --numa=auto -c2`, submitted by a user that is not root
//!      (`nkuser`, made in the guest): the batch step and an `srun -c2`
//!      step it starts end on one node, the same, CPUs and >= 99% of pages;
//!    - h. the same job's `--numa-report=FILE`: a file per step in the
//!      user's folder, owned by the user; step 0's memory per node is what
//!      numa_maps showed for the step's tasks (and the site's JSON line for
//!      the step has it exactly);
//!    - g. `salloc --numa=nodes:2 -c2 srun ...` (beside f): the step on node 2;
//!    - d. `--numa=bogus` and `--numa=nodes:7` fail the job naming the value;
//!    - c. with `numakit daemon` running, a `--numa=none` job whose memory sits
//!      on a node it cannot run on is never touched while an identical
//!      process beside it, outside Slurm, is made local; the daemon lists the
//!      job's pid and cgroup as excluded while it runs, and neither after.
//! 2. `task/affinity`:
//!    - b. Slurm's binding (`--cpu-bind=verbose`) is never widened, the memory
//!      goes to the nodes of the CPUs Slurm gave, and the two tasks of a step
//!      bound to the CPUs of two nodes get one node each; a node list outside
//!      the task's binding fails the step naming the node.
//! 3. `task/cgroup` alone, `ConstrainCores=yes` (cgroup v2, the cpuset and
//!    memory controllers enabled in `system.slice`, which Slurm's cgroup/v2
//!    plugin needs to constrain anything: without them slurmd logs
//!    "Controller cpuset is not enabled!" and the tasks run on every CPU;
//!    with cpuset alone it logs the same and every step fails):
//!    - i. a `--numa=auto` step of two tasks of 2 CPUs: each task's affinity
//!      and its cgroup's `cpuset.cpus.effective` stay inside the job's
//!      `cpuset.cpus` that Slurm wrote, the two tasks' CPUs are disjoint, and
//!      >= 99% of each task's pages are on the nodes of its CPUs.
//!
//! Every wait in the guest is long (minutes) and ends as soon as what it
//! waits for happens: on a loaded host the guest's clock can run several
//! times faster than the host's (one boot in four, with four guests on two
//! cores, counted Slurm's 30 s start timeout in about 6 s of host time).
//!
//! Skipped when QEMU cannot run here, failed instead under `CI=true`.
//! `NUMAKIT_PRINT_SCRIPT=1` prints the guest script (for
//! `testbed/numakit-vm --topo 4n-rr --append clearcpuid=erms --script FILE`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use numakit::units::human_bytes;
use numakit_testbed::{require_vm, RunSpec, Topology, Vm};
use serde_json::Value;

const NK: &str = env!("CARGO_BIN_EXE_numakit");

/// A program or library built beside numakit.
fn beside(name: &str) -> PathBuf {
    Path::new(NK).with_file_name(name)
}

/// Shell helpers, written to /tmp/nk.sh and sourced by each check and by the
/// scripts nk-slurm runs (in Slurm's work folder): the guest's set-up for
/// Slurm (`slurm_guest`, vm/lib.sh) and the readings the checks print.
const LIB: &str = r#". @REPO@/crates/cli/tests/vm/lib.sh
H=@HOLD@; SL=@NKSLURM@; SPANK=@SPANK@; NK=@NK@
# ready OUT: waits for nk-hold's ready line in OUT, prints "PID ADDR".
ready() {
  for i in $(seq 3000); do grep -q '^ready' $1 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^ready pid=\([0-9]*\) addr=\([0-9a-f]*\).*/\1 \2/p' $1 | head -1
}
# ready_all OUT N SRUN_PID: waits until OUT has N ready lines or srun has
# ended, prints "PID ADDR" for each ready line.
ready_all() {
  for i in $(seq 3000); do [ $(grep -c ^ready $1) -ge $2 ] || ! kill -0 $3 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^ready pid=\([0-9]*\) addr=\([0-9a-f]*\).*/\1 \2/p' $1
}
cpus() { sed -n 's/^Cpus_allowed_list:\t//p' /proc/$1/status; }
# nodemem PID: "N0=pages N1=pages ..." summed over all its mappings.
nodemem() {
  awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), kv, "="); t[kv[1]] += kv[2] } }
    END { for (n in t) printf "N%d=%d ", n, t[n]; print "" }' /proc/$1/numa_maps
}
# loc PID: the share of PID's pages on the node it last ran on (CPU c is on node c % 4).
loc() {
  cpu=$(awk '{ print $39 }' /proc/$1/stat 2>/dev/null); [ -n "$cpu" ] || { echo "gone"; return; }
  awk -v n=$((cpu % 4)) '{ for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), kv, "="); t += kv[2]; if (kv[1] == n) l += kv[2] } }
    END { printf "%.4f\n", (t ? l / t : 0) }' /proc/$1/numa_maps
}
now() { cut -d' ' -f1 /proc/uptime; }
"#;

/// Writes the helpers and sources them (the first lines of every check).
const HEAD: &str = "cat > /tmp/nk.sh <<'NKLIB'\n@LIB@NKLIB\n. /tmp/nk.sh\n";

/// The guest's set-up, and slurmd's view of the guest's CPUs.
const SETUP: &str = r#"
slurm_guest nkvm || exit 1
guest_user nkuser 4242 || exit 1
# cpuset and memory for the cgroups Slurm and the checks make.
echo '+cpuset +memory' > /sys/fs/cgroup/cgroup.subtree_control
sysctl -qw kernel.numa_balancing=0
slurmd -C | head -1
# The guest's clock: under a loaded host TSC calibration can go wrong and
# guest time run several times faster than the host's.
dmesg | grep -iE 'tsc|clocksource' | sed 's/^/clock /'
"#;

/// Configuration 1 (task/none, proctrack/cgroup): checks a, e, f and h, g, d and c.
const PLAIN: &str = r#"
cat > /tmp/plain.sh <<'NKEND'
echo "slurm_up $(now)"
grep "^NodeName=" $SLURM_CONF
# a. two auto jobs of two CPUs at once.
for i in 1 2; do srun --numa=auto -n1 -c2 $H --mib 64 > /tmp/a$i.out 2>&1 & done
for i in 1 2; do
  set -- $(ready /tmp/a$i.out)
  echo "auto$i pid=$1 cpus=$(cpus $1) map=$(mapping $1 $2)"
  # e. the step's processes' memory per node now (the report samples every second).
  cg=$(sed -n 's|^0::||p' /proc/$1/cgroup | sed 's|/user/.*|/user|')
  echo "cg$i $cg"
  for p in $(find /sys/fs/cgroup$cg -name cgroup.procs -exec cat {} +); do echo "step$i $p $(nodemem $p)"; done
  # The task's own folder has no cpuset file here: the report walks up to system.slice's.
  t=$(sed -n 's|^0::||p' /proc/$1/cgroup)
  echo "cpuset$i own=$(ls /sys/fs/cgroup$t/cpuset.cpus.effective 2>/dev/null | wc -l) slice=$(cat /sys/fs/cgroup/system.slice/cpuset.cpus.effective)"
done
sleep 3
for i in 1 2; do kill $(ready /tmp/a$i.out | cut -d' ' -f1); done
wait
echo "a_done $(now)"
# slurmstepd writes a step's report in its exit hook, which may come after srun returned.
for i in $(seq 3000); do [ $(cat /tmp/reports/numakit-steps.jsonl 2>/dev/null | wc -l) -ge 2 ] && break; sleep 0.1; done
sed 's/^/report /' /tmp/reports/numakit-steps.jsonl
grep -h 'numakit: slurm job [0-9]*.0 task 0: auto' $NK_SLURM_DIR/log/slurmd.log | sed 's/.*numakit: /placed /'
echo "e_done $(now)"
# g. salloc --numa=nodes:2 and a step in the allocation (beside f and h; read after them).
salloc --numa=nodes:2 -c2 srun $H --mib 32 > /tmp/g.out 2>&1 &
GP=$!
# f, h. sbatch --numa=auto --numa-report=FILE as nkuser (not root), from a folder only nkuser may
# write: the batch step (its script's nk-hold) and an srun step the script starts.
printf '#!/bin/sh\n%s --mib 32 > f_batch.out &\nsrun -n1 -c2 %s --mib 32 > f_step.out &\nwait\n' $H $H > /tmp/f.sh
FJ=$(cd /tmp/nkuser && setpriv --reuid=4242 --regid=4242 --init-groups \
  sbatch --parsable --numa=auto --numa-report=numa-%j.%s.txt -c2 -o f.out /tmp/f.sh | cut -d';' -f1)
echo "f_job $FJ"
for w in batch step; do
  set -- $(ready /tmp/nkuser/f_$w.out); echo "f_$w pid=$1 uid=$(stat -c %u /proc/$1) cpus=$(cpus $1) map=$(mapping $1 $2)"
done
# h. the step's processes' memory per node now (the report samples every second).
cg=$(sed -n 's|^0::||p' /proc/$1/cgroup | sed 's|/user/.*|/user|'); echo "h_cg $cg"
for p in $(find /sys/fs/cgroup$cg -name cgroup.procs -exec cat {} +); do echo "h_step $p $(nodemem $p)"; done
sleep 2
kill $(ready /tmp/nkuser/f_batch.out | cut -d' ' -f1) $(ready /tmp/nkuser/f_step.out | cut -d' ' -f1)
set -- $(ready /tmp/g.out); echo "g pid=$1 cpus=$(cpus $1) map=$(mapping $1 $2)"; kill $1
# Step 0's report: the site's line, then the user's file, when the step has ended.
for i in $(seq 3000); do [ -s /tmp/nkuser/numa-$FJ.0.txt ] && break; sleep 0.1; done
grep "\"cgroup\":\"$cg\"" /tmp/reports/numakit-steps.jsonl | sed 's/^/h_json /'
sed 's/^/h_report /' /tmp/nkuser/numa-$FJ.0.txt
echo "fgh_done $(now)"
# d. bad values.
srun --numa=bogus true 2> /tmp/d1; echo "bogus_rc $?"; sed 's/^/bogus_err /' /tmp/d1
srun --numa=nodes:7 true 2> /tmp/d2; echo "nodes7_rc $?"; sed 's/^/nodes7_err /' /tmp/d2
echo "d_done $(now)"
# The ends of f and g, which went on meanwhile: the batch step's report file comes last.
wait $GP; sed 's/^/g_out /' /tmp/g.out
for i in $(seq 3000); do [ -s /tmp/nkuser/numa-$FJ.batch.txt ] && break; sleep 0.1; done
for f in /tmp/nkuser/numa-*; do echo "h_file $(basename $f) $(stat -c '%u:%g %a' $f)"; done
sed 's/^/f_out /' /tmp/nkuser/f.out
grep -h "numakit: slurm job $FJ\.[0-9a-z]* task 0: " $NK_SLURM_DIR/log/slurmd.log | sed 's/.*numakit: /f_log /'
echo "fg_end $(now)"
@NONE@
NKEND
echo "start $(now)"
timeout 1200 $SL --ready-timeout 180 --node nkvm --proctrack proctrack/cgroup \
  --cgroup-conf CgroupPlugin=cgroup/v2 --cgroup-conf IgnoreSystemd=yes \
  --plugstack "required $SPANK ledger=/tmp/ledger socket=/tmp/dm/d.sock report=/tmp/reports report_interval=1" \
  '. /tmp/nk.sh; . /tmp/plain.sh'
echo "plain_rc $? $(now)"
"#;

/// Check c, part of configuration 1's script.
const NONE: &str = r#"
mkdir -p /tmp/dm
printf '%s\n' 'interval_min_s = 1' 'interval_max_s = 1' 'state_dir = "/tmp/dm/state"' \
  'log = "/tmp/dm/decisions.jsonl"' 'socket = "/tmp/dm/d.sock"' 'autonuma = "disable"' '[decide]' \
  'min_cpu = 0.3' 'min_rss_bytes = 40000000' 'min_age_s = 2' 'cooldown_s = 6' 'settle_s = 6' \
  'pages_per_s = 1000000' 'harm_threshold = 0.9' > /tmp/dm/c.toml
NUMAKIT_DAEMON_DIR=/tmp/dm setsid $NK daemon --config /tmp/dm/c.toml > /tmp/dm/out 2> /tmp/dm/err < /dev/null &
echo $! > /tmp/dm/pid
for i in $(seq 300); do [ -S /tmp/dm/d.sock ] && break; sleep 0.1; done
st() { $NK ctl --socket /tmp/dm/d.sock status --json | tr -d '\n'; }
scans() { st | grep -o '"scans": *[0-9]*' | grep -o '[0-9]*$'; }
# Neither the job nor its twin may run on node 0, where their memory is:
# Slurm's steps (system.slice) and the twin's cgroup get CPUs 1-3,5-7.
echo 1-3,5-7 > /sys/fs/cgroup/system.slice/cpuset.cpus
mkdir /sys/fs/cgroup/twin; echo 1-3,5-7 > /sys/fs/cgroup/twin/cpuset.cpus
# The job: sh (the task, excluded by pid) and nk-hold, its child (excluded through the cgroup only).
srun --numa=none sh -c "$H --mib 64 --first-touch-node 0 --loop; echo job_end" > /tmp/c_job.out 2>&1 &
SP=$!
sh -c "echo \$\$ > /sys/fs/cgroup/twin/cgroup.procs; exec $H --mib 64 --first-touch-node 0 --loop" > /tmp/c_twin.out 2>&1 &
TP=$!
set -- $(ready /tmp/c_job.out); J=$1; JA=$2; T=$(ready /tmp/c_twin.out | cut -d' ' -f1)
# own J: the pages per node of the job's held memory (its shared files' pages are
# the twin's too: the same nk-hold and libc, which the twin's migration may move).
own() { mapping $J $JA | grep -o 'N[0-9]*=[0-9]*' | tr '\n' ' '; }
echo "c_pids job=$J task=$(ps -o ppid= -p $J | tr -d ' ') twin=$T"
cg=$(sed -n 's|^0::||p' /proc/$J/cgroup)
echo "c_cgroup $cg"
echo "c_cpuset $(cat /sys/fs/cgroup$cg/cpuset.cpus.effective 2>&1) $(cat /sys/fs/cgroup$cg/../cgroup.subtree_control)"
echo "c_before job=$(cpus $J) $(own) twin=$(cpus $T) $(nodemem $T)"
s0=$(scans); echo "c_start $(now) scans=$s0"
for i in $(seq 300); do
  n=$(scans); l=$(loc $T); echo "c_t $(now) scans=$n job=$(loc $J) twin=$l"
  [ $n -ge $((s0 + 3)) ] && awk "BEGIN { exit !($l >= 0.9) }" && break; sleep 1
done
echo "c_during $(st)"
echo "c_after job=$(cpus $J) $(own) twin=$(cpus $T) $(nodemem $T)"
kill $J $T; wait $SP $TP
sed 's/^/c_job_out /' /tmp/c_job.out
s1=$(scans); for i in $(seq 200); do [ $(scans) -ge $((s1 + 2)) ] && break; sleep 0.5; done
echo "c_ended $(st)"
kill $(cat /tmp/dm/pid); for i in $(seq 100); do kill -0 $(cat /tmp/dm/pid) 2>/dev/null || break; sleep 0.1; done
echo 0-7 > /sys/fs/cgroup/system.slice/cpuset.cpus
sed 's/^/c_log /' /tmp/dm/decisions.jsonl; sed 's/^/c_err /' /tmp/dm/err
echo "c_done $(now)"
"#;

/// Configuration 3 (task/cgroup alone, ConstrainCores=yes): check i.
const CGROUP: &str = r#"
cat > /tmp/cgroup.sh <<'NKEND'
echo "slurm_up $(now)"
# sc PID: its cgroup's cpuset.cpus.effective and the cpuset.cpus Slurm wrote for its job.
sc() { c=$(sed -n 's|^0::||p' /proc/$1/cgroup); echo "task_cg=$(cat /sys/fs/cgroup$c/cpuset.cpus.effective) job_cg=$(cat /sys/fs/cgroup${c%%/step_*}/cpuset.cpus)"; }
timeout 600 srun --numa=auto -n2 -c2 $H --mib 32 > /tmp/i2.out 2>&1 &
ready_all /tmp/i2.out 2 $! > /tmp/i2.ready
grep -v '^ready' /tmp/i2.out | sed 's/^/i2_out /'
while read p a; do echo "two cpus=$(cpus $p) $(sc $p) map=$(mapping $p $a)"; kill $p; done < /tmp/i2.ready
wait
echo "not_constrained $(grep -c 'cpuset cgroup controller is not available' $NK_SLURM_DIR/log/slurmd.log)"
grep -h 'numakit: slurm job' $NK_SLURM_DIR/log/slurmd.log | sed 's/.*numakit: /placed /'
echo "i_done $(now)"
NKEND
# The controllers for the cgroups below system.slice, where Slurm makes its
# scope: cpuset and memory (with cpuset alone, Slurm 22.05 logs "Controller
# cpuset is not enabled!" and every step fails: "Slurmd could not execve job").
echo '+cpuset +memory' > /sys/fs/cgroup/system.slice/cgroup.subtree_control
echo "start $(now)"
timeout 900 $SL --ready-timeout 180 --node nkvm --task-plugin task/cgroup --proctrack proctrack/cgroup \
  --cgroup-conf CgroupPlugin=cgroup/v2 --cgroup-conf IgnoreSystemd=yes --cgroup-conf ConstrainCores=yes \
  --plugstack "required $SPANK ledger=/tmp/ledger3 socket=/tmp/none.sock" '. /tmp/nk.sh; . /tmp/cgroup.sh'
echo "cgroup_rc $? $(now)"
"#;

/// Configuration 2 (task/affinity): check b.
const AFFINITY: &str = r#"
cat > /tmp/affinity.sh <<'NKEND'
echo "slurm_up $(now)"
# One task of two CPUs: Slurm binds, the plugin chooses memory inside.
timeout 600 srun --numa=auto -n1 -c2 --cpu-bind=verbose,cores $H --mib 32 > /tmp/b1.out 2>&1 &
set -- $(ready /tmp/b1.out)
echo "one cpus=$(cpus $1) map=$(mapping $1 $2)"; kill $1; wait
sed -n 's/^cpu-bind=/one_bind /p' /tmp/b1.out
# Two tasks of two CPUs, each bound by Slurm to the CPUs of nodes 0 and 1 (0x33: 0,1,4,5).
timeout 600 srun --numa=auto -n2 -c2 --exclusive --cpu-bind=verbose,mask_cpu:0x33,0x33 $H --mib 32 > /tmp/b2.out 2>&1 &
ready_all /tmp/b2.out 2 $! > /tmp/b2.ready
grep -v '^ready\|^cpu-bind=' /tmp/b2.out | sed 's/^/b2_out /'
while read p a; do echo "two cpus=$(cpus $p) map=$(mapping $p $a)"; kill $p; done < /tmp/b2.ready
wait
sed -n 's/^cpu-bind=/two_bind /p' /tmp/b2.out
timeout 600 srun --numa=nodes:2 -n1 --exclusive --cpu-bind=map_cpu:0 true 2> /tmp/b3; echo "outside_rc $?"
sed 's/^/outside_err /' /tmp/b3
grep -h 'numakit: slurm job' $NK_SLURM_DIR/log/slurmd.log | sed 's/.*numakit: /placed /'
echo "b_done $(now)"
NKEND
echo "start $(now)"
timeout 900 $SL --ready-timeout 180 --node nkvm --task-plugin task/affinity \
  --plugstack "required $SPANK ledger=/tmp/ledger2 socket=/tmp/none.sock" '. /tmp/nk.sh; . /tmp/affinity.sh'
echo "affinity_rc $? $(now)"
"#;

fn script(part: &str) -> String {
    HEAD.replace("@LIB@", LIB)
        .replace("@REPO@", &numakit_testbed::vm::repo_root().display().to_string())
        .replace("@HOLD@", &beside("nk-hold").display().to_string())
        .replace("@NKSLURM@", &beside("nk-slurm").display().to_string())
        .replace("@SPANK@", &beside("libnumakit_spank.so").display().to_string())
        .replace("@NK@", NK)
        + &part.replace("@NONE@", NONE)
}

fn checks() -> Vec<(&'static str, String)> {
    vec![("setup", script(SETUP)), ("plain", script(PLAIN)), ("affinity", script(AFFINITY)), ("cgroup", script(CGROUP))]
}

/// The first line of `o` that starts with `key ` (without it).
fn field<'a>(o: &'a str, key: &str) -> &'a str {
    lines(o, key).first().copied().unwrap_or_else(|| panic!("no {key:?} line in:\n{o}"))
}

/// Every line of `o` that starts with `key ` (without it).
fn lines<'a>(o: &'a str, key: &str) -> Vec<&'a str> {
    let k = format!("{key} ");
    o.lines().filter_map(|l| l.strip_prefix(&k)).collect()
}

/// `key=value` in a line of words.
fn word<'a>(line: &'a str, key: &str) -> &'a str {
    let k = format!("{key}=");
    line.split_whitespace().find_map(|w| w.strip_prefix(&k)).unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

/// Pages per node in numa_maps words (`N2=16384` ...).
fn pages(text: &str) -> BTreeMap<u32, u64> {
    text.split_whitespace()
        .filter_map(|t| {
            let (k, v) = t.split_once('=')?;
            Some((k.strip_prefix('N')?.parse().ok()?, v.parse().ok()?))
        })
        .collect()
}

/// A CPU list (`1-3,5-7`).
fn cpu_list(s: &str) -> BTreeSet<u32> {
    numakit_testbed::parse_cpulist(s).unwrap_or_else(|e| panic!("CPU list {s:?}: {e}")).into_iter().collect()
}

/// The CPUs of a `--cpu-bind=verbose` line (`... mask 0x88 set`).
fn bind_mask(line: &str) -> BTreeSet<u32> {
    let hex = line.split_whitespace().skip_while(|w| *w != "mask").nth(1).unwrap_or_else(|| panic!("{line:?}"));
    let m = u64::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("{line:?}"));
    (0..64).filter(|c| m >> c & 1 == 1).collect()
}

/// 4n-rr: CPU c is on node c % 4.
fn nodes_of(cpus: &BTreeSet<u32>) -> BTreeSet<u32> {
    cpus.iter().map(|c| c % 4).collect()
}

/// At least 99% of `p`'s pages on `nodes`.
fn mostly_on(p: &BTreeMap<u32, u64>, nodes: &BTreeSet<u32>) -> bool {
    let total: u64 = p.values().sum();
    let on: u64 = p.iter().filter(|(n, _)| nodes.contains(n)).map(|(_, v)| v).sum();
    total > 0 && on as f64 >= 0.99 * total as f64
}

fn elapsed(o: &str, from: &str, to: &str) -> f64 {
    let t = |k: &str| -> f64 {
        field(o, k).split_whitespace().last().and_then(|x| x.parse().ok()).unwrap_or_else(|| panic!("{k}: {o}"))
    };
    t(to) - t(from)
}

fn status(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("status JSON: {e}: {line}"))
}

fn has(v: &Value, key: &str, item: Value) -> bool {
    v["excluded"][key].as_array().is_some_and(|a| a.contains(&item))
}

#[test]
fn spank_plugin_in_four_nodes() {
    if std::env::var_os("NUMAKIT_PRINT_SCRIPT").is_some() {
        for (name, s) in checks() {
            println!("# --- {name}\n( {s} )");
        }
        return;
    }
    require_vm!();
    for p in ["nk-hold", "nk-slurm", "libnumakit_spank.so"] {
        assert!(
            beside(p).exists(),
            "{} is missing: build it (`cargo build -p numakit-testprogs -p numakit-spank`; cargo test --workspace does)",
            beside(p).display()
        );
    }
    let topo = Topology::named("4n-rr").expect("topology");
    let spec =
        RunSpec { kernel_args: Some("clearcpuid=erms".into()), ..RunSpec::default() }.timeout(Duration::from_secs(600));
    let started = std::time::Instant::now();
    let out = Vm::run_checks(&topo, &checks(), spec).unwrap_or_else(|e| panic!("guest: {e}"));
    eprintln!("vm_slurm: guest run {:.1} s", started.elapsed().as_secs_f64());

    // The guest's CPUs as slurmd sees them, and the node line the harness made of them.
    let setup = &out["setup"].stdout;
    let hw = setup.lines().next().unwrap_or_default();
    let n = |k: &str| -> u32 { word(hw, k).parse().unwrap_or_else(|_| panic!("{k} in {hw:?}")) };
    assert_eq!(n("CPUs"), 8, "{hw}");
    assert_eq!(n("Boards") * n("SocketsPerBoard"), topo.smp.sockets, "one package per CPU: {hw}");
    assert_eq!((n("CoresPerSocket"), n("ThreadsPerCore")), (topo.smp.cores, topo.smp.threads), "{hw}");

    let p = &out["plain"];
    let o = p.stdout.as_str();
    let ctx = || format!("{o}\n--- stderr\n{}", p.stderr);
    assert_eq!(field(o, "plain_rc").split_whitespace().next(), Some("0"), "{}\n--- setup\n{setup}", ctx());
    let conf = o.lines().find(|l| l.starts_with("NodeName=nkvm ")).unwrap_or_else(|| panic!("{}", ctx()));
    assert!(conf.contains(hw.trim_start_matches("NodeName=nkvm ")), "slurm.conf's node line: {conf}");

    // a. Two auto jobs started together: disjoint nodes, CPUs and pages there.
    let mut got = BTreeSet::new();
    for i in [1, 2] {
        let l = field(o, &format!("auto{i}"));
        let cpus = cpu_list(word(l, "cpus"));
        let nodes = nodes_of(&cpus);
        assert_eq!(nodes.len(), 1, "a. the job's CPUs on one node: {l}: {}", ctx());
        let node = *nodes.iter().next().unwrap_or(&9);
        assert_eq!(cpus, BTreeSet::from([node, node + 4]), "a. both CPUs of node {node}: {l}");
        let map = pages(l.split_once("map=").map_or("", |x| x.1));
        assert_eq!(map.values().sum::<u64>(), 64 * 256, "a. {l}");
        assert!(mostly_on(&map, &nodes), "a. >= 99% of the pages on node {node}: {l}: {}", ctx());
        let told = format!("auto: cpus {node},{}, memory bind {node} ", node + 4);
        assert!(lines(o, "placed").iter().any(|x| x.contains(&told)), "a. the plugin said {told:?}: {}", ctx());
        got.insert(node);
    }
    assert_eq!(got.len(), 2, "a. two jobs started together got disjoint nodes: {}", ctx());

    // e. The step's report against its processes' numa_maps read while it ran.
    let reports: Vec<Value> = lines(o, "report").iter().map(|l| status(l)).collect();
    for i in [1, 2] {
        let cg = field(o, &format!("cg{i}"));
        let mut seen: BTreeMap<u32, u64> = BTreeMap::new();
        for l in lines(o, &format!("step{i}")) {
            for (node, n) in pages(l) {
                *seen.entry(node).or_default() += n;
            }
        }
        let r = reports.iter().find(|r| r["cgroup"] == cg).unwrap_or_else(|| panic!("e. no report of {cg}: {}", ctx()));
        let said: BTreeMap<u32, u64> = r["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| (n["id"].as_u64().unwrap_or(99) as u32, n["bytes"].as_u64().unwrap_or(0) / 4096))
            .collect();
        assert_eq!(said.keys().collect::<Vec<_>>(), [&0, &1, &2, &3], "e. every node in the report: {r}");
        // The tasks' folder only (slurmstepd is in the step's slurm/): the one
        // process, whose pages stay put once touched.
        assert_eq!(r["processes"], 1, "e. {r}");
        for (node, n) in &said {
            let want = seen.get(node).copied().unwrap_or(0);
            assert_eq!(*n, want, "e. node {node}: report {n} pages, numa_maps {want}: {r}\n{}", ctx());
        }
        let node = nodes_of(&cpu_list(word(field(o, &format!("auto{i}")), "cpus")));
        let ran: BTreeSet<u32> =
            r["cpus_nodes"].as_array().into_iter().flatten().filter_map(|n| n.as_u64()).map(|n| n as u32).collect();
        assert_eq!(ran, node, "e. the report's nodes of the job's CPUs: {r}");
        assert!(said.values().sum::<u64>() >= 64 * 256, "e. the job's 64 MiB in the report: {r}");
        // The step's folders have no cpuset file: the CPUs of system.slice, where Slurm's scope is.
        let l = field(o, &format!("cpuset{i}"));
        assert!(l.starts_with("own=0 "), "e. set-up: the task's folder has no cpuset file: {l}");
        assert_eq!(r["allowed_cpus"].as_str(), l.split_once("slice=").map(|x| x.1), "e. the nearest cpuset: {r}");
        assert_eq!(r["allowed_nodes"], serde_json::json!([0, 1, 2, 3]), "e. {r}");
    }

    // f. sbatch --numa=auto (as nkuser): the batch step and its srun step on one node, the same.
    let job = field(o, "f_job");
    let (b, st) = (field(o, "f_batch"), field(o, "f_step"));
    assert!(word(b, "uid") == "4242" && word(st, "uid") == "4242", "f. the job ran as nkuser: {}", ctx());
    let cpus = cpu_list(word(b, "cpus"));
    let node = nodes_of(&cpus);
    assert_eq!(node.len(), 1, "f. the batch step's CPUs on one node: {b}: {}", ctx());
    let x = *node.iter().next().unwrap_or(&9);
    assert_eq!(cpus, BTreeSet::from([x, x + 4]), "f. both CPUs of node {x}: {b}");
    assert_eq!(cpu_list(word(st, "cpus")), cpus, "f. the srun step where its batch step is: {b} / {st}: {}", ctx());
    for l in [b, st] {
        let map = pages(l.split_once("map=").map_or("", |m| m.1));
        assert_eq!(map.values().sum::<u64>(), 32 * 256, "f. {l}");
        assert!(mostly_on(&map, &node), "f. >= 99% of the pages on node {x}: {l}: {}", ctx());
    }
    let logs = lines(o, "f_log");
    let told = format!("auto: cpus {x},{}, memory bind {x} ", x + 4);
    assert!(
        logs.iter().any(|l| l.starts_with(&format!("slurm job {job}.batch task 0: {told}"))),
        "f. the batch step placed by the plugin: {}",
        ctx()
    );
    assert!(
        logs.iter().any(|l| l.starts_with(&format!("slurm job {job}.0 task 0: {told}"))
            && l.contains("where its job's other steps are placed here")),
        "f. the step placed inside its job's placement: {}",
        ctx()
    );

    // g. salloc --numa=nodes:2, a step in the allocation.
    let g = field(o, "g");
    assert_eq!(cpu_list(word(g, "cpus")), BTreeSet::from([2, 6]), "g. {g}: {}", ctx());
    assert!(mostly_on(&pages(g.split_once("map=").map_or("", |m| m.1)), &BTreeSet::from([2])), "g. {g}: {}", ctx());

    // h. nkuser's job: its --numa-report files, as the user; step 0's against numa_maps.
    let cg = field(o, "h_cg");
    let mut seen: BTreeMap<u32, u64> = BTreeMap::new();
    for l in lines(o, "h_step") {
        for (node, n) in pages(l) {
            *seen.entry(node).or_default() += n;
        }
    }
    assert!(seen.values().sum::<u64>() >= 32 * 256, "h. the task's 32 MiB in numa_maps: {}", ctx());
    let r = status(field(o, "h_json"));
    assert_eq!(r["job_id"].as_u64().map(|j| j.to_string()).as_deref(), Some(job), "h. {r}");
    let files = lines(o, "h_file");
    let want = [format!("numa-{job}.0.txt 4242:4242 644"), format!("numa-{job}.batch.txt 4242:4242 644")];
    assert_eq!(files, want, "h. a file per step, owned by nkuser, in its folder: {}", ctx());
    let text = lines(o, "h_report");
    assert_eq!(text.first().copied(), Some(format!("cgroup {cg} (Slurm job {job}, step 0)").as_str()), "h. {}", ctx());
    // Its table of memory per node: "  node  processes" rows, as people read them.
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let table: BTreeMap<String, String> = text
        .iter()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let key = t.first().filter(|k| **k == "all" || k.parse::<u32>().is_ok())?;
            (t.len() >= 3 && units.contains(&t[2])).then(|| (key.to_string(), format!("{} {}", t[1], t[2])))
        })
        .collect();
    let mut want: BTreeMap<String, String> =
        (0..4).map(|n| (n.to_string(), human_bytes(seen.get(&n).copied().unwrap_or(0) * 4096))).collect();
    want.insert("all".into(), human_bytes(seen.values().sum::<u64>() * 4096));
    assert_eq!(table, want, "h. the report's memory per node against numa_maps: {}", ctx());
    for n in r["nodes"].as_array().into_iter().flatten() {
        let id = n["id"].as_u64().unwrap_or(99) as u32;
        let got = n["bytes"].as_u64().unwrap_or(0) / 4096;
        assert_eq!(got, seen.get(&id).copied().unwrap_or(0), "h. node {id} exactly, in the site's line: {r}");
    }
    let slice = field(o, "cpuset1").split_once("slice=").map_or("?", |x| x.1);
    assert!(
        text.iter().any(|l| l.contains(&format!("allowed CPUs {slice} (node 0-3, cpuset.cpus.effective)"))),
        "h. the CPUs the step's cgroup may use: {}",
        ctx()
    );

    // d. Bad values fail the job, naming them.
    assert_ne!(field(o, "bogus_rc"), "0", "{}", ctx());
    assert!(
        lines(o, "bogus_err").iter().any(|l| l.contains("numakit: invalid --numa value \"bogus\"")),
        "d. {}",
        ctx()
    );
    assert_ne!(field(o, "nodes7_rc"), "0", "{}", ctx());
    assert!(
        lines(o, "nodes7_err").iter().any(|l| l.contains("numakit: ") && l.contains("--numa=nodes:7: node 7 ")),
        "d. {}",
        ctx()
    );

    // c. --numa=none beside a running daemon.
    let pids = field(o, "c_pids");
    let (job, task, twin): (i64, i64, i64) = (
        word(pids, "job").parse().expect("pid"),
        word(pids, "task").parse().expect("pid"),
        word(pids, "twin").parse().expect("pid"),
    );
    let job_cg = field(o, "c_cgroup");
    let job_root = &job_cg[..job_cg.find("/step_").unwrap_or(job_cg.len())];
    assert!(job_root.contains("/job_"), "c. the job's cgroup: {job_cg}");
    let (before, after) = (field(o, "c_before"), field(o, "c_after"));
    let job_part = |l: &str| l.split(" twin=").next().unwrap_or_default().to_string();
    let job_cpus = cpu_list(word(before, "job"));
    assert!(!job_cpus.contains(&0) && !job_cpus.contains(&4), "c. set-up: the job cannot run on node 0: {before}");
    assert!(
        pages(&job_part(before)).get(&0).copied().unwrap_or(0) >= 16384,
        "c. set-up: its memory on node 0: {before}"
    );
    assert_eq!(job_part(before), job_part(after), "c. the none job's CPUs and pages changed: {}", ctx());
    assert!(!lines(o, "c_job_out").iter().any(|l| l.contains("numakit")), "c. the job was not excluded: {}", ctx());
    let log: Vec<Value> = lines(o, "c_log").iter().map(|l| status(l)).collect();
    let of = |pid: i64| log.iter().filter(move |d| d["pid"] == pid);
    assert!(of(job).count() >= 3, "c. the daemon saw the job in at least 3 scans: {}", ctx());
    assert!(
        of(job).all(|d| d["action"] == "keep" && d["reason"]["why"] == "excluded"),
        "c. every decision on the none job: kept, excluded: {}",
        ctx()
    );
    assert!(
        of(job).all(|d| d["locality"].as_f64().is_some_and(|l| l < 0.1)),
        "c. the daemon saw the job's memory remote (a move would pay, as for the twin): {}",
        ctx()
    );
    assert!(of(task).all(|d| d["action"] == "keep"), "c. {}", ctx());
    assert!(
        of(twin).any(|d| d["action"] == "migrate" && d["outcome"] == "applied" && d["from"] == 0),
        "c. the twin outside Slurm had its memory moved from node 0: {}",
        ctx()
    );
    let last = lines(o, "c_t").last().copied().unwrap_or_default();
    let twin_loc: f64 = word(last, "twin").parse().unwrap_or(0.0);
    assert!(twin_loc >= 0.9, "c. the twin ends >= 90% local: {last}: {}", ctx());
    let during = status(field(o, "c_during"));
    assert!(has(&during, "pids", task.into()), "c. the task's pid excluded during the job: {during}");
    assert!(!has(&during, "pids", job.into()), "c. nk-hold is covered by the cgroup, not its pid: {during}");
    assert!(has(&during, "cgroups", job_root.into()), "c. the job's cgroup {job_root} excluded: {during}");
    let ended = status(field(o, "c_ended"));
    assert!(!has(&ended, "pids", task.into()) && !has(&ended, "cgroups", job_root.into()), "c. after: {ended}");

    // b. task/affinity: Slurm's binding kept, memory on its CPUs' nodes, one node per task.
    let a = &out["affinity"];
    let o = a.stdout.as_str();
    let ctx = || format!("{o}\n--- stderr\n{}", a.stderr);
    assert_eq!(field(o, "affinity_rc").split_whitespace().next(), Some("0"), "{}", ctx());
    let one = field(o, "one");
    let slurms = bind_mask(field(o, "one_bind"));
    let cpus = cpu_list(word(one, "cpus"));
    assert!(cpus.is_subset(&slurms), "b. {cpus:?} within Slurm's binding {slurms:?}: {}", ctx());
    assert!(mostly_on(&pages(one.split_once("map=").map_or("", |x| x.1)), &nodes_of(&cpus)), "b. {}", ctx());
    let binds = lines(o, "two_bind");
    assert_eq!(binds.len(), 2, "b. {}", ctx());
    let step: BTreeSet<u32> = [0, 1, 4, 5].into();
    assert!(binds.iter().all(|b| bind_mask(b) == step), "b. Slurm bound each task to 0,1,4,5: {}", ctx());
    let two = lines(o, "two");
    assert_eq!(two.len(), 2, "b. {}", ctx());
    let mut nodes = BTreeSet::new();
    for t in &two {
        let cpus = cpu_list(word(t, "cpus"));
        let on = nodes_of(&cpus);
        assert!(cpus.is_subset(&step) && on.len() == 1, "b. one node inside Slurm's binding: {t}: {}", ctx());
        assert!(mostly_on(&pages(t.split_once("map=").map_or("", |x| x.1)), &on), "b. {t}: {}", ctx());
        nodes.extend(on);
    }
    assert_eq!(nodes, BTreeSet::from([0, 1]), "b. the two tasks on nodes 0 and 1, one each: {}", ctx());
    assert_ne!(field(o, "outside_rc"), "0", "{}", ctx());
    assert!(
        lines(o, "outside_err").iter().any(|l| l.contains("--numa=nodes:2: node 2 is outside this task's allocation")),
        "b. {}",
        ctx()
    );

    let affinity = o;

    // i. task/cgroup, ConstrainCores=yes: the cpuset Slurm wrote is never widened.
    let c = &out["cgroup"];
    let o = c.stdout.as_str();
    let ctx = || format!("{o}\n--- stderr\n{}", c.stderr);
    assert_eq!(field(o, "cgroup_rc").split_whitespace().next(), Some("0"), "{}", ctx());
    assert_eq!(field(o, "not_constrained"), "0", "i. slurmd constrained the cores: {}", ctx());
    let set = |l: &str, k: &str| cpu_list(word(l, k));
    let two = lines(o, "two");
    assert_eq!(two.len(), 2, "i. {}", ctx());
    let slurms = set(two[0], "job_cg");
    assert_eq!(slurms.len(), 4, "i. Slurm's cpuset for two tasks of 2 CPUs: {}", ctx());
    let mut taken = BTreeSet::new();
    for t in &two {
        let cpus = set(t, "cpus");
        assert_eq!(set(t, "job_cg"), slurms, "i. one job: {}", ctx());
        assert!(cpus.is_subset(&slurms) && set(t, "task_cg").is_subset(&slurms), "i. inside Slurm's: {t}: {}", ctx());
        assert_eq!(cpus.len(), 2, "i. {t}");
        assert!(taken.is_disjoint(&cpus), "i. the two tasks' CPUs apart: {}", ctx());
        taken.extend(cpus.iter().copied());
        assert!(mostly_on(&pages(t.split_once("map=").map_or("", |m| m.1)), &nodes_of(&cpus)), "i. {t}: {}", ctx());
    }
    let placed = lines(o, "placed");
    assert!(
        placed.len() == 2 && placed.iter().all(|l| l.contains(": auto: ") && l.contains("(within its CPUs ")),
        "i. the plugin saw Slurm's cpuset as the tasks' binding: {}",
        ctx()
    );

    // Timings, past libtest's capture.
    let plain = &out["plain"].stdout;
    eprintln!(
        "vm_slurm: task/none Slurm ready {:.1} s, a {:.1} s, e {:.1} s, f+g+h {:.1} s, d {:.1} s, \
         f and g ending {:.1} s, c {:.1} s, torn down {:.1} s; task/affinity Slurm ready {:.1} s, b {:.1} s; \
         task/cgroup Slurm ready {:.1} s, i {:.1} s",
        elapsed(plain, "start", "slurm_up"),
        elapsed(plain, "slurm_up", "a_done"),
        elapsed(plain, "a_done", "e_done"),
        elapsed(plain, "e_done", "fgh_done"),
        elapsed(plain, "fgh_done", "d_done"),
        elapsed(plain, "d_done", "fg_end"),
        elapsed(plain, "fg_end", "c_done"),
        elapsed(plain, "c_done", "plain_rc"),
        elapsed(affinity, "start", "slurm_up"),
        elapsed(affinity, "slurm_up", "b_done"),
        elapsed(o, "start", "slurm_up"),
        elapsed(o, "slurm_up", "i_done"),
    );
}
