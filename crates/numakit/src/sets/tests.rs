use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn cs(s: &str) -> CpuSet {
    CpuSet::parse_list(s).expect("valid list")
}

#[test]
fn list_examples() {
    assert_eq!(cs("0-3,8,10-11").to_vec(), vec![0, 1, 2, 3, 8, 10, 11]);
    assert_eq!(cs("").len(), 0);
    assert_eq!(cs("5\n\0").to_vec(), vec![5]);
    assert_eq!(cs(" 1 , 3-4 ").to_vec(), vec![1, 3, 4]);
    assert_eq!(cs("0-11:2/4").to_vec(), vec![0, 1, 4, 5, 8, 9]);
    // util-linux's step (taskset -c 0-10:2).
    assert_eq!(cs("0-10:2").to_vec(), vec![0, 2, 4, 6, 8, 10]);
    assert_eq!(cs("1-7:3,9").to_vec(), vec![1, 4, 7, 9]);
    assert_eq!(cs("0-3,8,10-11").to_list(), "0-3,8,10-11");
    assert_eq!(CpuSet::new().to_list(), "");
}

#[test]
fn list_errors_name_input_and_reason() {
    let e = CpuSet::parse_list("3-1").unwrap_err().to_string();
    assert_eq!(e, "invalid cpu list \"3-1\": range 3-1 goes backwards");
    let e = NodeSet::parse_list("1,,2").unwrap_err().to_string();
    assert_eq!(e, "invalid node list \"1,,2\": empty element between commas");
    assert!(CpuSet::parse_list("a").is_err());
    assert!(CpuSet::parse_list("-1").is_err());
    assert!(CpuSet::parse_list("0-99999999999").is_err());
    assert!(CpuSet::parse_list("0-8:0/2").is_err());
    let e = CpuSet::parse_list("0-8:0").unwrap_err().to_string();
    assert_eq!(e, "invalid cpu list \"0-8:0\": stride \"0\" needs 0 < USED <= GROUP");
    let e = CpuSet::parse_list("0:1").unwrap_err().to_string();
    assert_eq!(e, "invalid cpu list \"0:1\": stride \"1\" needs a range A-B before it");
    assert!(CpuSet::parse_list("0-4:x").is_err());
}

#[test]
fn mask_examples() {
    assert_eq!(CpuSet::parse_mask("ff,00000001").expect("m").to_list(), "0,32-39");
    assert_eq!(CpuSet::parse_mask("00000000,00000003\n").expect("m").to_list(), "0-1");
    assert_eq!(CpuSet::parse_mask("0x10").expect("m").to_list(), "4");
    assert_eq!(CpuSet::parse_mask("100000000").expect("m").to_list(), "32");
    assert_eq!(cs("0,32-39").to_mask(64), "000000ff,00000001");
    assert_eq!(cs("0-1").to_mask(8), "00000003");
    assert_eq!(CpuSet::new().to_mask(0), "00000000");
    assert!(CpuSet::parse_mask("").is_err());
    assert!(CpuSet::parse_mask("fg").is_err());
    assert!(CpuSet::parse_mask("123456789,0").is_err());
}

#[test]
fn huge_ids_4096_cpus() {
    let s = cs("0-4095");
    assert_eq!(s.len(), 4096);
    assert_eq!(s.last(), Some(4095));
    let m = s.to_mask(4096);
    assert_eq!(m.split(',').count(), 128);
    assert_eq!(CpuSet::parse_mask(&m).expect("mask"), s);
    let sparse = cs("4095,0,2048");
    assert_eq!(sparse.to_list(), "0,2048,4095");
    assert_eq!(CpuSet::parse_mask(&sparse.to_mask(4096)).expect("m"), sparse);
}

#[test]
fn equality_ignores_capacity() {
    let mut a = cs("1,200");
    a.remove(200);
    assert_eq!(a, cs("1"));
    assert_eq!(a.last(), Some(1));
}

fn ids() -> impl Strategy<Value = BTreeSet<u32>> {
    prop::collection::btree_set(0u32..5000, 0..200)
}

proptest! {
    #[test]
    fn list_roundtrip(v in ids()) {
        let s: CpuSet = v.iter().copied().collect();
        let back = CpuSet::parse_list(&s.to_list()).expect("parse own output");
        prop_assert_eq!(&back, &s);
        prop_assert_eq!(back.to_vec(), v.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn mask_roundtrip(v in ids(), extra in 0u32..5000) {
        let s: NodeSet = v.iter().copied().collect();
        let back = NodeSet::parse_mask(&s.to_mask(extra)).expect("parse own mask");
        prop_assert_eq!(back, s);
    }

    #[test]
    fn algebra_matches_btreeset(a in ids(), b in ids()) {
        let sa: CpuSet = a.iter().copied().collect();
        let sb: CpuSet = b.iter().copied().collect();
        let u: Vec<u32> = a.union(&b).copied().collect();
        let i: Vec<u32> = a.intersection(&b).copied().collect();
        let d: Vec<u32> = a.difference(&b).copied().collect();
        prop_assert_eq!(sa.union(&sb).to_vec(), u);
        prop_assert_eq!(sa.intersection(&sb).to_vec(), i.clone());
        prop_assert_eq!(sa.difference(&sb).to_vec(), d);
        prop_assert_eq!(sa.intersects(&sb), !i.is_empty());
        prop_assert_eq!(sa.is_subset(&sb), a.is_subset(&b));
        prop_assert_eq!(sa.len(), a.len());
        prop_assert_eq!(sa.last(), a.iter().next_back().copied());
        prop_assert_eq!(sa.cmp(&sb), a.iter().cmp(b.iter()));
    }

    #[test]
    fn words_roundtrip(v in ids()) {
        let s: CpuSet = v.iter().copied().collect();
        prop_assert_eq!(CpuSet::from_words(&s.to_words(3)), s);
    }

    #[test]
    fn garbage_never_panics(t in "[0-9a-fx,:/! +-]{0,24}") {
        let _ = CpuSet::parse_list(&t);
        let _ = CpuSet::parse_mask(&t);
        let _ = numactl::SetSpec::<Cpu>::parse(&t);
    }

    /// A list and a mask of the same set parse to the same set, at any
    /// mask width.
    #[test]
    fn list_and_mask_agree(v in ids(), width in 0u32..5000) {
        let s: CpuSet = v.iter().copied().collect();
        prop_assert_eq!(CpuSet::parse_list(&s.to_list()).expect("list"), CpuSet::parse_mask(&s.to_mask(width)).expect("mask"));
    }

    /// Anything parses to a set within [`MAX_ID`] or is an error naming
    /// the input as typed.
    #[test]
    fn any_text_is_a_bounded_set_or_named(t in prop_oneof![any::<String>(), "[0-9a-fA-Fx,:/ \n\u{0}-]{0,40}"]) {
        for r in [CpuSet::parse_list(&t), CpuSet::parse_mask(&t)] {
            match r {
                Ok(s) => prop_assert!(s.last().is_none_or(|l| l < MAX_ID)),
                Err(SetError::Syntax { input, .. }) => prop_assert_eq!(&input, &t),
            }
        }
    }
}
