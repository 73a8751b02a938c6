//! Cgroup reports on synthetic roots: finding the cgroup, its folders and
//! processes, `memory.numa_stat` and `memory.stat` parsing, the report.

use super::*;
use crate::procs::cgroup;
use crate::text::quote;
use proptest::prelude::*;

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

fn stat_line(pid: i32, comm: &str, cpu: u32) -> String {
    let mut f: Vec<String> = vec!["0".into(); 37];
    f[0] = "S".into();
    f[1] = "1".into();
    f[17] = "1".into();
    f[36] = cpu.to_string();
    format!("{pid} ({comm}) {}\n", f.join(" "))
}

const JOB: &str = "sys/fs/cgroup/system.slice/slurmstepd.scope/job_42";

/// Two nodes (CPUs 0-1, 2-3); a v2 Slurm job with two steps, a task
/// cgroup, a member that has exited and one listed twice.
fn fake(root: &std::path::Path) {
    let m = crate::topo::synth::SynthMachine::two_by_two(1024);
    m.write(root).expect("synth");
    write(root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n");
    write(root, "sys/fs/cgroup/cgroup.procs", "1\n");
    write(root, &format!("{JOB}/cgroup.procs"), "");
    write(root, &format!("{JOB}/cpuset.cpus.effective"), "0-3\n");
    write(
        root,
        &format!("{JOB}/memory.stat"),
        "anon 819200\nfile 204800\nnuma_pages_migrated 7\nnuma_pte_updates 100\nnuma_hint_faults 40\n\
         pgdemote_kswapd 0\npgpromote_success 2\nworkingset_refault_anon 3\n",
    );
    write(root, &format!("{JOB}/memory.numa_stat"), "anon N0=409600 N1=409600\nfile N0=0 N1=204800\nshmem N0=0 N1=0\n");
    write(root, &format!("{JOB}/step_0/cgroup.procs"), "10\n");
    write(root, &format!("{JOB}/step_0/user/task_0/cgroup.procs"), "20\n30\n");
    write(root, &format!("{JOB}/step_batch/cgroup.procs"), "10\n");
    write(root, "proc/10/stat", &stat_line(10, "lead", 0));
    write(
        root,
        "proc/10/numa_maps",
        "1000 default anon=100 dirty=100 N0=100 kernelpagesize_kB=4\n\
         2000 default file=/usr/lib/libc.so.6 mapped=50 N1=50 kernelpagesize_kB=4\n",
    );
    write(root, "proc/20/stat", &stat_line(20, "rank", 2));
    write(root, "proc/20/numa_maps", "1000 interleave:0-1 anon=200 dirty=200 N0=100 N1=100 kernelpagesize_kB=4\n");
}

#[test]
fn slurm_job_and_step_from_paths() {
    let ids = |p: &str| slurm_ids(p).map(|s| (s.job_id, s.step));
    assert_eq!(ids("/system.slice/slurmstepd.scope/job_42/step_0/user/task_0"), Some((42, Some("0".into()))));
    assert_eq!(ids("/slurm/uid_1000/job_42/step_batch"), Some((42, Some("batch".into()))));
    assert_eq!(ids("/sys/fs/cgroup/memory/slurm/uid_1000/job_7"), Some((7, None)));
    assert_eq!(ids("/a/job_9/x/step_1"), Some((9, None)));
    assert_eq!(ids("/job_1/job_2/step_extern"), Some((2, Some("extern".into()))));
    for none in ["/", "/user.slice", "/job_", "/job_x1", "/job_1x", "/myjob_1", "/job_99999999999999999999", ""] {
        assert_eq!(slurm_ids(none), None, "{none}");
    }
    assert_eq!(ids("/job_3/step_"), Some((3, None)));
}

#[test]
fn numa_stat_v2_bytes_and_v1_pages() {
    let s = parse_numa_stat("anon N0=4096 N1=8192\nfile N1=0 N0=12288\n\nshmem\n", 4096).expect("v2");
    assert_eq!(s.anon(), Some(&[(0, 4096), (1, 8192)][..]));
    assert_eq!(s.file(), Some(&[(0, 12288), (1, 0)][..]));
    assert_eq!((s.bytes("file", 0), s.bytes("file", 7), s.get("shmem")), (Some(12288), None, Some(&[][..])));
    let v1 = parse_numa_stat("total=3 N0=3\nanon=1 N0=1\nhierarchical_total=5 N0=5\nhierarchical_anon=2 N0=2\n", 4096)
        .expect("v1");
    assert_eq!(v1.anon(), Some(&[(0, 2 * 4096)][..]));
    assert_eq!(v1.file(), None);
    for bad in ["anon N0=x", "anon 5", "anon N-1=3", "anon=x N0=1", "anon N0=1 N0=2", "anon N0=18446744073709551616"] {
        let e = parse_numa_stat(bad, 4096).unwrap_err();
        assert!(e.starts_with(&quote(bad)) && !e.contains('\n'), "{e}");
    }
    assert!(parse_numa_stat("total=18446744073709551615 N0=18446744073709551615\n", 4096)
        .unwrap_err()
        .contains("does not fit"));
}

proptest! {
    #[test]
    fn numa_stat_parser_never_panics(s in "\\PC{0,200}|([a-z_=0-9N ]{0,30}\n){0,8}") {
        let _ = parse_numa_stat(&s, 4096);
        let _ = parse_memory_stat(&s);
        let _ = slurm_ids(&s);
    }
}

#[test]
fn counters_and_their_delta() {
    let start =
        parse_memory_stat("anon 1\nnuma_pages_migrated 7\nnuma_hint_faults 40\npgdemote_direct 9\n").expect("parse");
    assert_eq!(start.lines.len(), 3);
    let end = parse_memory_stat("numa_pages_migrated 10\nnuma_hint_faults 40\npgdemote_direct 2\nnuma_new 1\n")
        .expect("parse");
    // pgdemote_direct went backwards, numa_new was not there at start.
    assert_eq!(end.delta(&start), vec![("numa_pages_migrated".to_string(), 3), ("numa_hint_faults".to_string(), 0)]);
    let named = end.named();
    assert_eq!(named[0], ("numa_pages_migrated".to_string(), Some(10)));
    assert_eq!(named[1], ("numa_pte_updates".to_string(), None));
    assert_eq!(named.last(), Some(&("numa_new".to_string(), Some(1))));
    assert!(parse_memory_stat("numa_pages_migrated lots\n").unwrap_err().contains("\"numa_pages_migrated lots\""));
    assert!(parse_memory_stat("numa_pages_migrated 1 2\n").is_err());
    assert!(parse_memory_stat("anon lots\n").is_ok());
}

#[test]
fn paths_as_typed_resolve_or_fail_naming_them() {
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path());
    let sys = SysRoot::at(d.path());
    let job = "/system.slice/slurmstepd.scope/job_42";
    for typed in [job.to_string(), format!("{job}/"), format!("0::{job}"), format!("/{JOB}")] {
        let dir = CgroupDir::resolve(&sys, &typed).expect("resolve");
        assert_eq!(dir.folder, JOB, "{typed}");
    }
    assert_eq!(CgroupDir::resolve(&sys, "/").expect("root").folder, "sys/fs/cgroup");
    assert_eq!(CgroupDir::resolve(&sys, "0::/").expect("root").path, "/");
    let e = CgroupDir::resolve(&sys, "/no/such").unwrap_err();
    assert!(matches!(e, CgroupError::NotFound { .. }));
    assert_eq!(e.to_string(), "no such cgroup \"/no/such\": no /sys/fs/cgroup/no/such/cgroup.procs");
    for bad in ["", "job_42", "/a/../b", "/a//b", "/a/./b"] {
        let e = CgroupDir::resolve(&sys, bad).unwrap_err();
        assert!(matches!(e, CgroupError::Invalid { .. }), "{bad}: {e}");
        assert!(e.to_string().contains(&quote(bad)), "{e}");
    }
    let e = CgroupDir::resolve(&sys, "/x\n\x1b[31m").unwrap_err().to_string();
    assert!(!e.contains('\n') && !e.contains('\x1b'), "{e}");
    // A path no file system holds: refused as typed, cut like any value.
    for long in [format!("/{}", "a".repeat(5000)), format!("/{}/b", "a".repeat(256)), "/a".repeat(2048)] {
        let e = CgroupDir::resolve(&sys, &long).unwrap_err();
        assert!(matches!(e, CgroupError::Invalid { .. }), "{e}");
        assert!(e.to_string().len() < 300 && e.to_string().contains("characters)"), "{e}");
    }
}

#[test]
fn hybrid_hosts_and_v1_memory_folders() {
    let d = tempfile::tempdir().expect("tmp");
    write(d.path(), "sys/fs/cgroup/unified/cgroup.controllers", "");
    write(d.path(), "sys/fs/cgroup/unified/a/cgroup.procs", "5\n");
    write(d.path(), "sys/fs/cgroup/memory/cgroup.procs", "1\n");
    write(d.path(), "sys/fs/cgroup/memory/tasks", "1\n");
    write(d.path(), "sys/fs/cgroup/memory/slurm/uid_1/job_8/step_batch/cgroup.procs", "6\n");
    let sys = SysRoot::at(d.path());
    assert_eq!(CgroupDir::resolve(&sys, "/a").expect("v2").folder, "sys/fs/cgroup/unified/a");
    let dir = CgroupDir::resolve(&sys, "/slurm/uid_1/job_8/step_batch").expect("v1");
    assert_eq!(dir.folder, "sys/fs/cgroup/memory/slurm/uid_1/job_8/step_batch");
    assert_eq!(dir.slurm(), Some(SlurmIds { job_id: 8, step: Some("batch".into()) }));
    let e = CgroupDir::resolve(&sys, "/b").unwrap_err().to_string();
    assert!(e.ends_with("no /sys/fs/cgroup/unified/b/cgroup.procs nor /sys/fs/cgroup/memory/b/cgroup.procs"), "{e}");
}

#[test]
fn a_job_with_steps_and_tasks() {
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path());
    let sys = SysRoot::at(d.path());
    let r = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42").expect("collect");
    assert_eq!(r.slurm, Some(SlurmIds { job_id: 42, step: None }));
    assert_eq!(r.folders, 5);
    assert_eq!(r.processes.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![10, 20]);
    assert_eq!((r.exited.clone(), r.unreadable.clone()), (vec![30], vec![]));
    let page = 4096;
    // numa_maps: 10 has 100 anon pages on node 0 and 50 libc pages on
    // node 1; 20 has 100 + 100 interleaved.
    assert_eq!(r.nodes.iter().map(|n| (n.id, n.bytes)).collect::<Vec<_>>(), vec![(0, 200 * page), (1, 150 * page)]);
    assert_eq!(r.total_bytes, 350 * page);
    // Own memory: 10's 100 pages, all on node 0 where it runs; 20's 200
    // pages, 100 on node 1 where it runs. libc's pages are not own.
    assert_eq!((r.own_bytes, r.own_local_bytes), (300 * page, 200 * page));
    assert_eq!(r.locality, Some(2.0 / 3.0));
    assert_eq!(r.cpus_nodes.to_list(), "0-1");
    assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("0-3"));
    assert_eq!(r.allowed_nodes.as_ref().map(|c| c.to_list()).as_deref(), Some("0-1"));
    assert_eq!(r.nodes[1].charged_anon_bytes, Some(409600));
    assert_eq!(r.nodes[1].charged_file_bytes, Some(204800));
    assert_eq!(r.counters.get("numa_pages_migrated"), Some(7));
    assert_eq!(r.counters.get("workingset_refault_anon"), None);
    assert!(NOT_PER_CGROUP.iter().all(|n| r.counters.get(n).is_none()));
    // A step alone: its own processes only, no memory files of its own.
    let s = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42/step_0").expect("step");
    assert_eq!(s.slurm, Some(SlurmIds { job_id: 42, step: Some("0".into()) }));
    assert_eq!(s.processes.len(), 2);
    assert_eq!((s.numa_stat.clone(), s.counters.memory_stat), (None, false));
    assert_eq!(s.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("0-3"), "the job's, above it");
    assert_eq!(s.nodes.iter().map(|n| n.charged_anon_bytes).collect::<Vec<_>>(), vec![None, None]);
}

#[test]
fn a_cgroup_without_cpuset_files_has_its_nearest_ancestors_cpus() {
    // cgroup v2 without the cpuset controller below the job (Slurm's
    // step and task folders with proctrack/cgroup alone): the CPUs its
    // tasks may use are the nearest ancestor's, as the daemon reads them.
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path());
    write(d.path(), "sys/fs/cgroup/cpuset.cpus.effective", "0-3\n");
    write(d.path(), &format!("{JOB}/cpuset.cpus.effective"), "2-3\n");
    let sys = SysRoot::at(d.path());
    let task = "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0";
    for path in [task, "/system.slice/slurmstepd.scope/job_42/step_0"] {
        let r = JobReport::collect(&sys, path).expect("collect");
        assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("2-3"), "{path}");
        assert_eq!(r.allowed_nodes.as_ref().map(|n| n.to_list()).as_deref(), Some("1"), "{path}");
    }
    // No job file: the root's.
    std::fs::remove_file(d.path().join(JOB).join("cpuset.cpus.effective")).expect("rm");
    let r = JobReport::collect(&sys, task).expect("collect");
    assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("0-3"));
    // None up to the root: unknown, as before.
    std::fs::remove_file(d.path().join("sys/fs/cgroup/cpuset.cpus.effective")).expect("rm");
    let r = JobReport::collect(&sys, task).expect("collect");
    assert_eq!((r.allowed_cpus, r.allowed_nodes), (None, None));
}

#[test]
fn a_v1_step_reads_each_controller_in_its_own_hierarchy() {
    // EL8 (cgroup v1): Slurm's step in the memory, cpuset, cpu,cpuacct
    // and freezer hierarchies, on a machine of two nodes (CPUs 0-1, 2-3).
    let d = tempfile::tempdir().expect("tmp");
    crate::topo::synth::SynthMachine::two_by_two(1024).write(d.path()).expect("synth");
    cgroup::tests::v1_host(d.path());
    let step = "slurm/uid_1000/job_5/step_0";
    write(
        d.path(),
        &format!("sys/fs/cgroup/memory/{step}/memory.numa_stat"),
        "hierarchical_anon=3 N0=1 N1=2
",
    );
    write(
        d.path(),
        &format!("sys/fs/cgroup/memory/{step}/memory.stat"),
        "cache 0
rss 4096
",
    );
    let sys = SysRoot::at(d.path());
    let path = format!("/{step}");
    let r = JobReport::collect(&sys, &path).expect("v1");
    assert_eq!(r.cgroup.folder, format!("sys/fs/cgroup/memory/{step}"));
    assert_eq!(r.slurm, Some(SlurmIds { job_id: 5, step: Some("0".into()) }));
    assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("2-3"));
    assert_eq!(r.allowed_nodes.as_ref().map(|n| n.to_list()).as_deref(), Some("1"));
    assert_eq!(r.allowed_cpus_file, "cpuset.effective_cpus");
    assert_eq!(r.nodes.iter().map(|n| n.charged_anon_bytes).collect::<Vec<_>>(), [Some(4096), Some(8192)]);
    assert!(r.counters.memory_stat, "v1's memory.stat, without NUMA counters");
    let text = crate::present::cgroup::text(&r, None);
    assert!(text.contains("allowed CPUs 2-3 (node 1, cpuset.effective_cpus)"), "{text}");
    // Without a memory cgroup (no ConstrainRAMSpace): found in another
    // hierarchy, its CPUs still the cpuset hierarchy's, no memory files.
    std::fs::remove_dir_all(d.path().join("sys/fs/cgroup/memory/slurm")).expect("rm");
    let r = JobReport::collect(&sys, &path).expect("v1 without memory");
    assert_eq!(r.cgroup.folder, format!("sys/fs/cgroup/cpu,cpuacct/{step}"));
    assert_eq!(r.processes.len() + r.exited.len(), 1, "the task in task_0/");
    assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("2-3"));
    assert_eq!((r.numa_stat.is_none(), r.counters.memory_stat), (true, false));
    // No cpuset hierarchy at all: unknown, naming v1's file.
    std::fs::remove_dir_all(d.path().join("sys/fs/cgroup/cpuset")).expect("rm");
    let r = JobReport::collect(&sys, &path).expect("v1 without cpuset");
    assert_eq!(r.allowed_cpus, None);
    let text = crate::present::cgroup::text(&r, None);
    assert!(text.contains("allowed CPUs unknown (no cpuset.effective_cpus)"), "{text}");
    let e = CgroupDir::resolve(&sys, "/b").unwrap_err().to_string();
    assert!(e.ends_with("nor the same in 3 other v1 hierarchies"), "{e}");
}

#[test]
fn hostile_cgroup_files_are_one_line_errors() {
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path());
    write(d.path(), &format!("{JOB}/memory.numa_stat"), "anon N0=1\x1b]0;x\x07\n");
    let sys = SysRoot::at(d.path());
    let e = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42").unwrap_err().to_string();
    assert!(e.contains("memory.numa_stat") && !e.contains('\x1b') && !e.contains('\n'), "{e}");
    fake(d.path());
    write(d.path(), &format!("{JOB}/memory.stat"), "numa_pages_migrated -1\n");
    let e = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42").unwrap_err().to_string();
    assert!(e.contains("memory.stat") && e.contains("\"numa_pages_migrated -1\""), "{e}");
}

#[test]
fn job_cgroups_found_and_capped() {
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path());
    write(d.path(), "sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/cgroup.procs", "");
    write(d.path(), "sys/fs/cgroup/user.slice/job_x/cgroup.procs", "");
    write(d.path(), "sys/fs/cgroup/a/b/c/d/e/f/job_9/cgroup.procs", "");
    let sys = SysRoot::at(d.path());
    let found: Vec<String> = find_job_cgroups(&sys).expect("find").into_iter().map(|c| c.path).collect();
    // job_9 is 7 levels deep; steps below job_42 are part of it.
    assert_eq!(found, ["/system.slice/slurmstepd.scope/job_42", "/system.slice/slurmstepd.scope/job_7"]);
    let topo = Topology::read_nodes_only(&sys).expect("topo");
    let asked = vec!["/user.slice/job_x".to_string(), "/gone".to_string(), "relative".to_string()];
    let s = CgroupSample::read(&sys, &topo, &asked, true, 2).expect("sample");
    let paths: Vec<&str> = s.reports.iter().map(|r| r.cgroup.path.as_str()).collect();
    assert_eq!((paths, s.dropped), (vec!["/user.slice/job_x", "/system.slice/slurmstepd.scope/job_42"], 1));
    assert_eq!(s.reports[1].processes.len(), 2);
    assert_eq!(CgroupSample::read(&sys, &topo, &asked, true, 0).expect("off"), CgroupSample::default());
    // One garbage cgroup file: that cgroup is left out, named.
    write(d.path(), "sys/fs/cgroup/user.slice/job_x/memory.stat", "numa_pages_migrated x\n");
    let s = CgroupSample::read(&sys, &topo, &asked, true, 2).expect("sample");
    assert_eq!((s.reports.len(), s.failed.len()), (1, 1));
    assert!(s.failed[0].0 == "/user.slice/job_x" && s.failed[0].1.contains("memory.stat"), "{:?}", s.failed);
    assert_eq!(CgroupSample::read(&sys, &topo, &[], false, 5).expect("none").reports.len(), 0);
}

#[test]
fn deep_trees_are_bounded() {
    let d = tempfile::tempdir().expect("tmp");
    let deep: String = (0..MAX_DEPTH + 5).map(|i| format!("/d{i}")).collect();
    write(d.path(), &format!("sys/fs/cgroup/j{deep}/cgroup.procs"), "");
    write(d.path(), "sys/fs/cgroup/j/cgroup.procs", "");
    let sys = SysRoot::at(d.path());
    let dir = CgroupDir::resolve(&sys, "/j").expect("resolve");
    assert_eq!(folders(&sys, &dir).expect("walk").len(), MAX_DEPTH + 1);
}

#[test]
fn live_own_cgroup_holds_this_process() {
    let sys = SysRoot::live();
    let me = std::process::id() as i32;
    let Some(path) = cgroup::read_path(&sys, me).expect("read") else { return };
    let dir = match CgroupDir::resolve(&sys, &path) {
        Ok(d) => d,
        Err(CgroupError::NotFound { .. }) => return, // no cgroup2 mounted here
        Err(e) => panic!("{e}"),
    };
    // Only this cgroup's own folder: the host's root holds every process.
    let pids = member_pids(&sys, std::slice::from_ref(&dir.folder)).expect("members");
    assert!(pids.contains(&me), "{me} not in {pids:?} of {}", dir.folder);
}
