//! `numakit irq show` and `numakit tune irq-local` end to end: the real
//! binary on a real machine's dump (hwloc's `32intel64-2p8co2t+8ve`: two
//! nodes, an Intel NIC `enp96s0f0` on node 0 with 99 MSI-X vectors), as it
//! is (sysfs only: no `/proc/interrupts`, no `/proc/irq`) and with a
//! synthetic `/proc/interrupts` and `/proc/irq/N/` added so the IRQs have
//! counts and affinities and irq-local has files to write; plus `irq show`
//! on this machine.

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");
const DUMP: &str = "32intel64-2p8co2t+8ve";
const NIC: &str = "0000:60:00.0";
/// Node 0's and node 1's CPUs in the dump.
const NODE0: &str = "0-7,16-23";
const NODE1: &str = "8-15,24-31";

/// The dump extracted into a fresh folder (`tag` keeps tests apart).
fn dump(tag: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let Some(dir) = common::fixtures_dir() else {
        common::skip_or_fail("the hwloc fixtures (../shared/fixtures/hwloc) are not beside the repository");
        return None;
    };
    let tmp = tempfile::Builder::new().prefix(&format!("irq-{tag}-")).tempdir_in(env!("CARGO_TARGET_TMPDIR")).ok()?;
    let st = Command::new("tar")
        .arg("-xjf")
        .arg(dir.join("tarballs").join(format!("{DUMP}.tar.bz2")))
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar");
    assert!(st.success(), "tar failed");
    let root = tmp.path().join(DUMP);
    assert!(root.join("sys/bus/pci/devices").is_dir(), "{}", root.display());
    Some((tmp, root))
}

fn put(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, content).expect("write");
}

fn get(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).expect("read").trim().to_string()
}

/// Adds `/proc/interrupts` (32 CPUs) and `/proc/irq/N/` for the NIC's first
/// three vectors: 52 and 53 served on node 1 (CPU 8, the default affinity
/// 0-31), 54 pinned by hand to CPU 3 on node 0; and the timer (no device).
fn add_proc(root: &Path) {
    let cpus: Vec<String> = (0..32).map(|c| format!("CPU{c}")).collect();
    let mut text = format!("{}\n", cpus.join(" "));
    let row = |irq: u32, on: usize, n: u64, chip: &str, action: &str| {
        let counts: Vec<String> = (0..32).map(|c| if c == on { n.to_string() } else { "0".into() }).collect();
        format!("{irq:>4}: {} {chip} {action}\n", counts.join(" "))
    };
    text += &row(0, 0, 40, "IO-APIC   2-edge", "timer");
    text += &row(52, 8, 1000, "IR-PCI-MSI 31457280-edge", "i40e-enp96s0f0-TxRx-0");
    text += &row(53, 8, 500, "IR-PCI-MSI 31457281-edge", "i40e-enp96s0f0-TxRx-1");
    text += &row(54, 3, 70, "IR-PCI-MSI 31457282-edge", "i40e-enp96s0f0-TxRx-2");
    put(root, "proc/interrupts", &text);
    for (irq, aff, eff) in [(0, "0-31", "0"), (52, "0-31", "8"), (53, "0-31", "8"), (54, "3", "3")] {
        put(root, &format!("proc/irq/{irq}/smp_affinity_list"), &format!("{aff}\n"));
        put(root, &format!("proc/irq/{irq}/effective_affinity_list"), &format!("{eff}\n"));
        put(root, &format!("proc/irq/{irq}/node"), "0\n");
    }
    put(root, "proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n");
}

fn numakit(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--sysroot")
        .arg(root)
        .args(args)
        .env_remove("NUMAKIT_TUNE_STATE")
        .env_remove("NUMAKIT_TUNE_PAUSE_AFTER_WRITE")
        .output()
        .expect("run numakit")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn irq_of(j: &Value, n: u64) -> &Value {
    j["irqs"].as_array().expect("irqs").iter().find(|i| i["irq"] == n).unwrap_or_else(|| panic!("IRQ {n}: {j}"))
}

#[test]
fn show_on_the_dump_as_it_is() {
    let Some((_t, root)) = dump("plain") else { return };
    let o = numakit(&root, &["irq", "show", "--json"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(j["schema_version"], 1);
    assert_eq!((j["has_counts"].clone(), j["has_affinity"].clone()), (Value::Bool(false), Value::Bool(false)));
    // every MSI vector of the NIC, found in its msi_irqs/, on node 0
    let nic: Vec<&Value> =
        j["irqs"].as_array().expect("irqs").iter().filter(|i| i["devices"][0]["pci"] == NIC).collect();
    let msi = std::fs::read_dir(root.join(format!("sys/bus/pci/devices/{NIC}/msi_irqs"))).expect("ls").count();
    assert_eq!(nic.len(), msi);
    assert!(msi > 90, "{msi}");
    for i in &nic {
        assert_eq!(i["node"], 0);
        assert_eq!(i["matched"], "msi_irqs");
        assert_eq!(i["devices"][0]["netdevs"][0], "enp96s0f0");
        assert_eq!(i["locality"], "unknown");
        assert!(i["counts"].is_null());
    }
    let o = numakit(&root, &["irq", "show"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{:?}: {err}", o.status);
    assert!(out.contains("note: no /proc/interrupts in this root"), "{:?}: stdout {out:?}, stderr {err:?}", o.status);
    assert!(out.contains("device IRQs, none judged (no device node or no affinity known)"), "{out}");
    assert!(out.lines().any(|l| l.trim_start().starts_with("52  0000:60:00.0 (enp96s0f0)")), "{out}");
    // nothing irq-local could write: it says so and writes nothing
    let o = numakit(&root, &["tune", "irq-local", "enp96s0f0"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("IRQs 52-103,112-158: not moved: no /proc/irq/N/smp_affinity_list"), "{out}");
    assert!(!root.join("var/lib/numakit/tune-state.json").exists());
}

#[test]
fn show_counts_per_node_and_flags_off_node_irqs() {
    let Some((_t, root)) = dump("show") else { return };
    add_proc(&root);
    let o = numakit(&root, &["irq", "show", "--json"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).expect("json");
    let i52 = irq_of(&j, 52);
    assert_eq!(i52["matched"], "msi_irqs");
    assert_eq!(i52["by_node"], serde_json::json!({"0": 0, "1": 1000}));
    assert_eq!((i52["affinity"].as_str(), i52["effective"].as_str()), (Some("0-31"), Some("8")));
    assert_eq!(i52["locality"], "off-node");
    assert_eq!(irq_of(&j, 54)["locality"], "local");
    assert!(j["irqs"].as_array().expect("irqs").iter().all(|i| i["irq"] != 0), "the timer needs --all");
    let o = numakit(&root, &["irq", "show"]);
    let (out, _) = text(&o);
    let row52: Vec<&str> = out
        .lines()
        .find(|l| l.trim_start().starts_with("52 "))
        .unwrap_or_else(|| panic!("{out}"))
        .split_whitespace()
        .collect();
    assert_eq!(&row52[3..], &["0", "0-31", "8", "0", "1000", "OFF-NODE", "i40e-enp96s0f0-TxRx-0"], "{out}");
    let summary = out.lines().find(|l| l.contains("device IRQs served off")).unwrap_or_else(|| panic!("{out}"));
    assert!(summary.starts_with("2 of "), "52 and 53 only: {summary}");
    let all = text(&numakit(&root, &["irq", "show", "--all"])).0;
    assert!(all.lines().any(|l| l.trim_start().starts_with("0  -") && l.ends_with("timer")), "{all}");
}

#[test]
fn irq_local_then_revert_on_the_dump() {
    let Some((_t, root)) = dump("local") else { return };
    add_proc(&root);
    let state = root.join("var/lib/numakit/tune-state.json");
    // dry run: the plan, nothing written
    let o = numakit(&root, &["tune", "irq-local", "pci:60:00.0", "--dry-run"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.starts_with(&format!("{NIC} (enp96s0f0): node 0, CPUs {NODE0}; IRQs 52-103,112-158\n")), "{out}");
    assert!(out.contains("would write 0-7,16-23 to "), "{out}");
    assert!(out.contains("IRQs 54: already on node 0's CPUs; left alone"), "{out}");
    assert_eq!(get(&root, "proc/irq/52/smp_affinity_list"), "0-31");
    assert!(!state.exists());

    let o = numakit(&root, &["tune", "irq-local", "enp96s0f0"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("irq/52/smp_affinity_list: 0-31 -> 0-7,16-23"), "{out}");
    assert_eq!(get(&root, "proc/irq/52/smp_affinity_list"), NODE0);
    assert_eq!(get(&root, "proc/irq/53/smp_affinity_list"), NODE0);
    assert_eq!(get(&root, "proc/irq/54/smp_affinity_list"), "3", "a hand-picked local CPU stays");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).expect("state")).expect("json");
    let originals: Vec<(&str, &str)> = saved["originals"]
        .as_array()
        .expect("originals")
        .iter()
        .map(|o| (o["knob"].as_str().unwrap_or(""), o["value"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(originals, vec![("irq/52/smp_affinity_list", "0-31"), ("irq/53/smp_affinity_list", "0-31")]);
    let show = text(&numakit(&root, &["tune", "show"])).0;
    assert!(show.contains("irq/52/smp_affinity_list = 0-7,16-23  (default all CPUs"), "{show}");
    assert!(show.contains("accepts CPU list; changed by numakit, original 0-31)"), "{show}");
    let j: Value = serde_json::from_str(&text(&numakit(&root, &["tune", "show", "--json"])).0).expect("json");
    let k53 = j["knobs"].as_array().expect("knobs").iter().find(|k| k["name"] == "irq/53/smp_affinity_list");
    let k53 = k53.expect("irq/53 listed");
    assert_eq!((k53["value"].as_str(), k53["original"].as_str()), (Some(NODE0), Some("0-31")));
    assert_eq!(k53["accepts"]["type"], "cpu_list");

    let o = numakit(&root, &["tune", "revert"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(get(&root, "proc/irq/52/smp_affinity_list"), "0-31");
    assert_eq!(get(&root, "proc/irq/53/smp_affinity_list"), "0-31");
    assert!(!state.exists());
}

#[test]
fn kill_9_between_two_irq_writes_then_revert() {
    let Some((_t, root)) = dump("kill") else { return };
    add_proc(&root);
    // the NIC is on node 0; pretend its IRQs sit on node 1 so both writes happen
    for irq in [52, 53] {
        put(&root, &format!("proc/irq/{irq}/smp_affinity_list"), &format!("{NODE1}\n"));
    }
    let mut child = Command::new(BIN)
        .arg("--sysroot")
        .arg(&root)
        .args(["tune", "irq-local", "enp96s0f0"])
        .env("NUMAKIT_TUNE_PAUSE_AFTER_WRITE", "1")
        .env("NUMAKIT_TUNE_PAUSE_SECS", "60")
        .env_remove("NUMAKIT_TUNE_STATE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("read");
    assert!(line.contains("paused after write 1 (irq/52/smp_affinity_list="), "{line}");
    child.kill().expect("kill -9");
    child.wait().expect("wait");
    assert_eq!(get(&root, "proc/irq/52/smp_affinity_list"), NODE0);
    assert_eq!(get(&root, "proc/irq/53/smp_affinity_list"), NODE1, "the second write never happened");
    let o = numakit(&root, &["tune", "revert"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(get(&root, "proc/irq/52/smp_affinity_list"), NODE1);
    assert_eq!(get(&root, "proc/irq/53/smp_affinity_list"), NODE1);
}

#[test]
fn bad_devices_and_intervals_are_one_line_errors() {
    let Some((_t, root)) = dump("bad") else { return };
    for (args, code, want) in [
        (&["tune", "irq-local", "eth9"][..], 2, "numakit: unknown device \"eth9\": "),
        (&["tune", "irq-local", "pci:zz"][..], 2, "numakit: unknown device \"pci:zz\": "),
        (&["irq", "show", "--interval", "soon"][..], 2, "numakit: --interval soon: not a duration"),
        (&["irq", "show", "--interval", "0"][..], 2, "numakit: --interval 0: give a duration above 0"),
        (&["irq", "show", "--interval", "1"][..], 2, "numakit: --interval: no /proc/interrupts below "),
    ] {
        let o = numakit(&root, args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    // a device without a node: the kernel gives -1
    put(&root, &format!("sys/bus/pci/devices/{NIC}/numa_node"), "-1\n");
    let o = numakit(&root, &["tune", "irq-local", "enp96s0f0"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("numakit: device \"enp96s0f0\" (0000:60:00.0) has no NUMA node"), "{err}");
}

#[test]
fn show_on_this_machine() {
    let o = Command::new(BIN).args(["irq", "show", "--json", "--all", "--interval", "200ms"]).output().expect("run");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let j: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(j["live"], true);
    let interval = j["interval_s"].as_f64().expect("interval");
    assert!((0.19..5.0).contains(&interval), "{interval}");
    let live = std::fs::read_to_string("/proc/interrupts").expect("/proc/interrupts");
    let numbered =
        live.lines().filter(|l| l.split(':').next().is_some_and(|n| n.trim().parse::<u32>().is_ok())).count();
    let listed = j["irqs"].as_array().expect("irqs").iter().filter(|i| !i["counts"].is_null()).count();
    assert!(listed >= numbered.saturating_sub(2), "{listed} of {numbered}");
}

/// Makes a hostile file at a path.
type Maker = Box<dyn Fn(&Path)>;

/// `/proc/interrupts` and an affinity file made hostile one at a time:
/// every run ends (no hang on a FIFO, no endless read of /dev/zero), by
/// itself (no signal), with exit 0 or one error line naming the file.
#[test]
fn hostile_irq_files_end_in_one_line() {
    let Some((_t, root)) = dump("hostile") else { return };
    add_proc(&root);
    let targets = ["proc/interrupts", "proc/irq/52/smp_affinity_list", "proc/irq/52/effective_affinity_list"];
    for rel in targets {
        let path = root.join(rel);
        let original = std::fs::read(&path).expect("read");
        let huge = |p: &Path| {
            let f = std::fs::File::create(p).expect("create");
            f.set_len((64 << 20) + 1).expect("grow");
        };
        let cases: Vec<(&str, Maker)> = vec![
            ("garbage", Box::new(|p: &Path| std::fs::write(p, b"\x00\xff CPU0 CPU0\n:::\n\x1b[2J").expect("w"))),
            (
                "numbers too large",
                Box::new(|p: &Path| std::fs::write(p, "CPU0\n 52: 99999999999999999999999 x\n").expect("w")),
            ),
            ("empty", Box::new(|p: &Path| std::fs::write(p, "").expect("w"))),
            (
                "fifo",
                Box::new(|p: &Path| {
                    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("c");
                    // SAFETY: a valid NUL-terminated path
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
                }),
            ),
            ("/dev/zero", Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/zero", p).expect("ln"))),
            ("folder", Box::new(|p: &Path| std::fs::create_dir(p).expect("mkdir"))),
            ("huge", Box::new(huge)),
        ];
        for (what, make) in &cases {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_dir(&path);
            make(&path);
            for args in
                [&["irq", "show", "--all"][..], &["irq", "show", "--json"], &["tune", "irq-local", NIC, "--dry-run"]]
            {
                let mut child = Command::new(BIN)
                    .arg("--sysroot")
                    .arg(&root)
                    .args(args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn");
                let start = std::time::Instant::now();
                let status = loop {
                    if let Some(s) = child.try_wait().expect("wait") {
                        break s;
                    }
                    if start.elapsed() > std::time::Duration::from_secs(20) {
                        let _ = child.kill();
                        panic!("{rel} {what} {args:?}: still running after 20 s");
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                };
                let mut err = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err).expect("read");
                let code = status.code().unwrap_or_else(|| panic!("{rel} {what} {args:?}: killed by a signal"));
                assert!(code == 0 || code == 1, "{rel} {what} {args:?}: exit {code}: {err}");
                if code == 1 {
                    assert_eq!(err.lines().count(), 1, "{rel} {what} {args:?}: {err}");
                    assert!(err.contains(rel), "{rel} {what} {args:?}: the file is not named: {err}");
                    assert!(!err.contains('\x1b'), "{rel} {what}: an escape reached the terminal");
                }
            }
        }
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir(&path);
        std::fs::write(&path, original).expect("restore");
    }
}
