//! The memory-policy wrappers against this kernel (each test in a fresh
//! thread, the change log locked), and the policy types' text forms.

use super::*;
use crate::act::alloc::NodeBuffer;
use crate::act::pages::{query_pages, PageStatus};
use crate::act::testutil::{in_fresh_thread, log_lock};
use crate::act::Pid;

fn node0() -> NodeSet {
    NodeSet::parse_list("0").expect("set")
}

#[test]
fn raw_values_match_the_kernel() {
    let raws: Vec<i32> = Mode::ALL.iter().map(|m| m.as_raw()).collect();
    assert_eq!(raws, vec![0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(
        raws[..5],
        [libc::MPOL_DEFAULT, libc::MPOL_PREFERRED, libc::MPOL_BIND, libc::MPOL_INTERLEAVE, libc::MPOL_LOCAL]
    );
    for m in Mode::ALL {
        assert_eq!(Mode::from_raw(m.as_raw()), Some(m));
    }
    assert_eq!(Mode::from_raw(7), None);
    assert_eq!(ModeFlags { static_nodes: true, ..ModeFlags::NONE }.bits(), libc::MPOL_F_STATIC_NODES);
    assert_eq!(ModeFlags { relative_nodes: true, ..ModeFlags::NONE }.bits(), libc::MPOL_F_RELATIVE_NODES);
    assert_eq!(ModeFlags { numa_balancing: true, ..ModeFlags::NONE }.bits(), libc::MPOL_F_NUMA_BALANCING);
    let all = ModeFlags { static_nodes: true, relative_nodes: true, numa_balancing: true };
    assert_eq!(ModeFlags::from_bits(all.bits() | 2), all);
    assert_eq!(MbindFlags { strict: true, move_: true, move_all: true }.bits(), 7);
}

#[test]
fn names_parse_and_print() {
    for m in Mode::ALL {
        assert_eq!(m.name().parse::<Mode>(), Ok(m));
        assert_eq!(m.kernel_name().parse::<Mode>(), Ok(m));
        assert_eq!(m.constant_name().parse::<Mode>(), Ok(m));
        assert_eq!(m.to_string(), m.name());
    }
    assert_eq!(" MemBind\n".parse::<Mode>(), Ok(Mode::Bind));
    assert_eq!("preferred_many".parse::<Mode>(), Ok(Mode::PreferredMany));
    assert_eq!("localalloc".parse::<Mode>(), Ok(Mode::Local));
    assert!("fastest".parse::<Mode>().is_err());
    assert_eq!(serde_json::to_string(&Mode::PreferredMany).expect("json"), "\"preferred-many\"");
    assert_eq!(serde_json::from_str::<Mode>("\"bind\"").expect("json"), Mode::Bind);
}

#[test]
fn policy_text_round_trips() {
    for text in ["bind:0-1", "interleave=static:0-3,8", "local", "default", "preferred:2", "bind=static|balancing:1"] {
        let p: Policy = text.parse().expect(text);
        assert_eq!(p.to_string(), text);
    }
    let p: Policy = "membind=relative,static:0".parse().expect("parse");
    assert_eq!(p.mode, Mode::Bind);
    assert!(p.flags.static_nodes && p.flags.relative_nodes && !p.flags.numa_balancing);
    assert!("bind=sticky:0".parse::<Policy>().is_err());
    assert!("bind:0-".parse::<Policy>().is_err());
    assert!("nowhere:0".parse::<Policy>().is_err());
}

#[test]
fn get_returns_what_set_set() {
    in_fresh_thread(|| {
        let n0 = node0();
        assert_eq!(get_mempolicy().expect("get").mode, Mode::Default, "fresh thread has no policy");
        for mode in [Mode::Bind, Mode::Preferred, Mode::Interleave, Mode::PreferredMany, Mode::WeightedInterleave] {
            if !kernel_supports(mode, ModeFlags::NONE) {
                continue;
            }
            set_mempolicy(mode, ModeFlags::NONE, &n0).expect("set");
            assert_eq!(get_mempolicy().expect("get"), Policy::new(mode, n0.clone()), "{mode}");
        }
        set_mempolicy(Mode::Local, ModeFlags::NONE, &NodeSet::new()).expect("local");
        assert_eq!(get_mempolicy().expect("get"), Policy::new(Mode::Local, NodeSet::new()));
        // An empty preferred set is local allocation to the kernel.
        set_mempolicy(Mode::Preferred, ModeFlags::NONE, &NodeSet::new()).expect("preferred none");
        assert_eq!(get_mempolicy().expect("get").mode, Mode::Local);
        set_mempolicy(Mode::Default, ModeFlags::NONE, &NodeSet::new()).expect("default");
        assert_eq!(get_mempolicy().expect("get"), Policy::new(Mode::Default, NodeSet::new()));
    });
}

#[test]
fn flags_come_back() {
    in_fresh_thread(|| {
        let n0 = node0();
        for flags in [
            ModeFlags { static_nodes: true, ..ModeFlags::NONE },
            ModeFlags { relative_nodes: true, ..ModeFlags::NONE },
            ModeFlags { numa_balancing: true, ..ModeFlags::NONE },
        ] {
            if !kernel_supports(Mode::Bind, flags) {
                continue;
            }
            set_mempolicy(Mode::Bind, flags, &n0).expect("set");
            let p = get_mempolicy().expect("get");
            assert_eq!((p.mode, p.flags, p.nodes), (Mode::Bind, flags, n0.clone()));
        }
        // With static nodes the kernel reports the set as given, even a
        // node the thread may not use, as long as one given node is usable.
        let wide = NodeSet::parse_list("0,3").expect("set");
        set_mempolicy(Mode::Interleave, ModeFlags { static_nodes: true, ..ModeFlags::NONE }, &wide).expect("set");
        assert_eq!(get_mempolicy().expect("get").nodes, wide);
    });
}

#[test]
fn missing_node_is_einval_naming_the_call() {
    in_fresh_thread(|| {
        for list in ["63", "64", "1000", "40000"] {
            let e =
                set_mempolicy(Mode::Bind, ModeFlags::NONE, &NodeSet::parse_list(list).expect("set")).expect_err(list);
            assert!(e.is_errno(libc::EINVAL), "{list}: {e}");
            assert_eq!(e.to_string(), "set_mempolicy: Invalid argument (EINVAL)");
        }
        // Nothing changed.
        assert_eq!(get_mempolicy().expect("get").mode, Mode::Default);
    });
}

#[test]
fn sets_that_do_not_suit_the_mode_are_refused() {
    in_fresh_thread(|| {
        let empty = NodeSet::new();
        let e = set_mempolicy(Mode::Bind, ModeFlags::NONE, &empty).expect_err("bind to nothing");
        assert!(e.is_errno(libc::EINVAL), "{e}");
        let e = set_mempolicy(Mode::Default, ModeFlags::NONE, &node0()).expect_err("default with nodes");
        assert!(e.is_errno(libc::EINVAL), "{e}");
        let e = set_mempolicy(Mode::Local, ModeFlags::NONE, &node0()).expect_err("local with nodes");
        assert!(e.is_errno(libc::EINVAL), "{e}");
    });
}

#[test]
fn balancing_with_the_wrong_mode_is_unsupported() {
    if !kernel_supports(Mode::Bind, ModeFlags { numa_balancing: true, ..ModeFlags::NONE }) {
        return;
    }
    in_fresh_thread(|| {
        let flags = ModeFlags { numa_balancing: true, ..ModeFlags::NONE };
        match set_mempolicy(Mode::Interleave, flags, &node0()) {
            Err(ActError::Unsupported { what, .. }) => assert!(what.contains("interleave"), "{what}"),
            other => panic!("expected Unsupported, got {other:?}"),
        }
    });
}

#[test]
fn probing_knows_the_basics() {
    for m in [Mode::Default, Mode::Preferred, Mode::Bind, Mode::Interleave, Mode::Local] {
        assert!(kernel_supports(m, ModeFlags::NONE), "{m}");
    }
    assert!(!kernel_supports(Mode::Bind, ModeFlags { static_nodes: true, relative_nodes: true, ..ModeFlags::NONE }));
    assert!(!kernel_supports(Mode::Interleave, ModeFlags { numa_balancing: true, ..ModeFlags::NONE }));
}

#[test]
fn thread_bind_places_new_pages_on_node_0() {
    in_fresh_thread(|| {
        set_mempolicy(Mode::Bind, ModeFlags::NONE, &node0()).expect("bind");
        // No range policy: the pages follow the thread policy.
        let mut buf = NodeBuffer::unbound(64 * 4096).expect("buffer");
        buf.touch();
        let status = query_pages(Pid::SELF, &buf.page_addresses()).expect("query");
        assert_eq!(status.len(), buf.page_count());
        assert!(status.iter().all(|s| *s == PageStatus::Node(0)), "{status:?}");
        assert_eq!(node_of_address(buf.as_ptr() as usize).expect("node"), 0);
    });
}

#[test]
fn mbind_sets_the_range_policy() {
    let mut buf = NodeBuffer::unbound(16 * 4096).expect("buffer");
    assert_eq!(get_mempolicy_at(buf.as_ptr() as usize).expect("get").mode, Mode::Default);
    let flags = MbindFlags { strict: true, move_: true, move_all: false };
    // SAFETY: the buffer is ours.
    unsafe { mbind(buf.as_mut_ptr().cast(), buf.len(), Mode::Interleave, ModeFlags::NONE, &node0(), flags) }
        .expect("mbind");
    let p = get_mempolicy_at(buf.as_ptr() as usize + 4096).expect("get");
    assert_eq!(p, Policy::new(Mode::Interleave, node0()));
    buf.touch();
    let status = query_pages(Pid::SELF, &buf.page_addresses()).expect("query");
    assert!(status.iter().all(|s| *s == PageStatus::Node(0)), "{status:?}");
}

#[test]
fn mbind_errors() {
    let mut buf = NodeBuffer::unbound(4 * 4096).expect("buffer");
    // SAFETY: the buffer is ours; the calls are refused anyway.
    let e =
        unsafe { mbind(buf.as_mut_ptr().add(1).cast(), 4096, Mode::Bind, ModeFlags::NONE, &node0(), MbindFlags::NONE) }
            .expect_err("unaligned");
    assert!(e.is_errno(libc::EINVAL), "{e}");
    assert!(e.to_string().starts_with("mbind: "), "{e}");
    // SAFETY: as above.
    let e = unsafe {
        let nodes = NodeSet::parse_list("63").expect("set");
        mbind(buf.as_mut_ptr().cast(), 4096, Mode::Bind, ModeFlags::NONE, &nodes, MbindFlags::NONE)
    }
    .expect_err("missing node");
    assert!(e.is_errno(libc::EINVAL), "{e}");
}

#[test]
fn mems_allowed_holds_node_0() {
    let m = mems_allowed().expect("mems");
    assert!(m.contains(0), "{m}");
}

#[test]
fn node_of_unmapped_address_is_efault() {
    let e = node_of_address(8).expect_err("page 0 is never mapped");
    assert!(e.is_errno(libc::EFAULT), "{e}");
}

#[test]
fn changes_are_logged_and_queries_are_not() {
    let _g = log_lock();
    let _ = log::take();
    let me = in_fresh_thread(|| {
        set_mempolicy(Mode::Bind, ModeFlags { static_nodes: true, ..ModeFlags::NONE }, &node0()).expect("set");
        let _ = get_mempolicy().expect("get");
        let _ = mems_allowed().expect("mems");
        let _ = set_mempolicy(Mode::Bind, ModeFlags::NONE, &NodeSet::new()); // refused: not logged
        set_mempolicy(Mode::Default, ModeFlags::NONE, &NodeSet::new()).expect("reset");
        Pid::this_thread().as_raw()
    });
    let mine: Vec<_> = log::take().into_iter().filter(|r| r.tid == me).collect();
    let lines: Vec<String> = mine.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        lines,
        vec![
            "numakit: set_mempolicy self: mode bind nodes 0 flags static".to_string(),
            "numakit: set_mempolicy self: mode default".to_string(),
        ]
    );

    let mut buf = NodeBuffer::unbound(4096).expect("buffer");
    let _ = get_mempolicy_at(buf.as_ptr() as usize).expect("get");
    // SAFETY: the buffer is ours.
    unsafe { mbind(buf.as_mut_ptr().cast(), 4096, Mode::Bind, ModeFlags::NONE, &node0(), MbindFlags::NONE) }
        .expect("mbind");
    let me = Pid::this_thread().as_raw();
    let mine: Vec<_> = log::take().into_iter().filter(|r| r.tid == me).collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0].call, "mbind");
    assert_eq!(mine[0].target, format!("self addr {:p} len 4096", buf.as_ptr()));
    assert_eq!(mine[0].detail, "mode bind nodes 0");
}
