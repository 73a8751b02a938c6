//! `numakit stat --json`: the counters, an interval's deltas and rates,
//! per-node memory and per-process memory as JSON values (docs/stat.md).

use serde_json::{json, Map, Value};

use crate::stats::meminfo::is_page_count;
use crate::stats::{CounterRates, CounterSample, NodeMeminfo, ProcessReport};

/// JSON of the counters: `nodes[]` of `id` and each counter, and
/// `autonuma` with each counter and `hint_faults_local_ratio`.
pub fn counters_json(sample: &CounterSample) -> Value {
    let nodes: Vec<Value> = sample
        .nodes
        .iter()
        .map(|n| {
            let mut o = Map::new();
            o.insert("id".into(), json!(n.id));
            for (k, v) in &n.lines {
                o.insert(k.clone(), json!(v));
            }
            Value::Object(o)
        })
        .collect();
    let mut vm = Map::new();
    for (k, v) in &sample.vm.lines {
        vm.insert(k.clone(), json!(v));
    }
    vm.insert("hint_faults_local_ratio".into(), json!(sample.vm.hint_local_ratio()));
    json!({ "nodes": nodes, "autonuma": vm })
}

/// JSON of one interval: like [`counters_json`] with `{delta, per_sec}`
/// for each counter, and `interval_secs`.
pub fn rates_json(r: &CounterRates) -> Value {
    let nodes: Vec<Value> = r
        .nodes
        .iter()
        .map(|n| {
            let mut o = Map::new();
            o.insert("id".into(), json!(n.id));
            for (k, x) in &n.rates {
                o.insert(k.clone(), json!({ "delta": x.delta, "per_sec": x.per_sec }));
            }
            Value::Object(o)
        })
        .collect();
    let mut vm = Map::new();
    for (k, x) in &r.vm.rates {
        vm.insert(k.clone(), json!({ "delta": x.delta, "per_sec": x.per_sec }));
    }
    vm.insert("hint_faults_local_ratio".into(), json!(r.vm.hint_local_ratio));
    json!({ "interval_secs": r.interval_secs, "nodes": nodes, "autonuma": vm })
}

/// JSON of `-m`: `nodes[]` with `id`, `meminfo_bytes` (every `kB` line in
/// bytes), `hugepages[]` per size, and the huge page totals in bytes.
pub fn meminfo_json(nodes: &[NodeMeminfo]) -> Value {
    let nodes: Vec<Value> = nodes
        .iter()
        .map(|n| {
            let mut m = Map::new();
            for (k, v) in &n.lines {
                if !is_page_count(k) {
                    m.insert(k.clone(), json!(v));
                }
            }
            json!({
                "id": n.id,
                "meminfo_bytes": m,
                "hugepages": n.hugepages,
                "hugepages_total_bytes": n.huge_total_bytes(),
                "hugepages_free_bytes": n.huge_free_bytes(),
                "hugepages_surplus_bytes": n.huge_surplus_bytes(),
            })
        })
        .collect();
    json!({ "nodes": nodes })
}

/// JSON of `-p`: `processes[]` (see docs/stat.md), `exited[]`,
/// `unreadable[]`.
pub fn processes_json(r: &ProcessReport) -> Value {
    json!({ "processes": r.processes, "exited": r.exited, "unreadable": r.unreadable })
}
