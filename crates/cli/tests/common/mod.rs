//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// `../shared/fixtures/hwloc` beside the repository (or `NUMAKIT_FIXTURES`).
pub fn fixtures_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("NUMAKIT_FIXTURES") {
        return Some(PathBuf::from(d));
    }
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/hwloc");
    d.join("refs").is_dir().then_some(d)
}

/// With `CI=true` a missing prerequisite fails the test; elsewhere it is
/// skipped with the reason printed.
pub fn skip_or_fail(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("required in CI: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// Asserts the fields docs/topo-json.md promises.
pub fn assert_topo_json_shape(v: &Value) {
    assert_eq!(v["schema_version"], 1);
    for n in v["nodes"].as_array().expect("nodes[]") {
        assert!(n["id"].is_u64(), "node id");
        assert!(n["cpus"].as_array().expect("cpus").iter().all(Value::is_u64));
        if !n["memory"].is_null() {
            assert!(n["memory"]["total_bytes"].is_u64());
            assert!(n["memory"]["free_bytes"].is_u64() || n["memory"]["free_bytes"].is_null());
        }
        assert!(n["has_cpu"].is_boolean() && n["has_memory"].is_boolean());
        assert!(n["hugepages"].is_array());
    }
    assert!(v["distances"].as_array().expect("distances").iter().all(Value::is_array));
    for c in v["cpus"].as_array().expect("cpus[]") {
        assert!(c["id"].is_u64() && c["online"].is_boolean());
        for k in ["node", "package", "core"] {
            assert!(c[k].is_u64() || c[k].is_null(), "cpu {k}");
        }
        assert!(c["siblings"].is_array() || c["siblings"].is_null());
    }
    assert!(v["packages"].is_array() && v["caches"].is_array());
    for d in v["pci_devices"].as_array().expect("pci_devices[]") {
        assert!(d["address"].is_string());
        assert!(d["numa_node"].is_u64() || d["numa_node"].is_null());
        assert!(d["netdevs"].is_array() && d["blockdevs"].is_array());
        assert!(d["class"].is_string() || d["class"].is_null());
    }
    assert!(v["allowed"]["cpus"].is_array() && v["allowed"]["nodes"].is_array());
}
