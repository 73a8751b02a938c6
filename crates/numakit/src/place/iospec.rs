//! numactl's I/O specifiers: a node list may instead name a device, and
//! means the node(s) that device is attached to:
//!
//! * `netdev:DEV` (a network interface), `block:DEV` (`sda`, `/dev/nvme0n1`),
//! * `file:PATH` (the block device holding PATH),
//! * `pci:[DOMAIN:]BUS:DEV.FN`, and `ip:HOST` (the interface the route to
//!   HOST leaves through).
//!
//! A device's node is its PCI `numa_node`, or, where the firmware gives -1,
//! the nodes of its `local_cpulist`.

use std::net::IpAddr;

use crate::sets::NodeSet;
use crate::sys::SysRoot;
use crate::topo::{is_pci_address, pci_parent, Topology};

const PREFIXES: [&str; 5] = ["netdev:", "block:", "file:", "pci:", "ip:"];

/// Whether a node argument is an I/O specifier.
pub fn is_iospec(v: &str) -> bool {
    PREFIXES.iter().any(|p| v.starts_with(p))
}

/// Resolves an I/O specifier to the node(s) of its device. Errors are
/// one-line reasons (the caller adds the option and value).
pub fn resolve(sys: &SysRoot, topo: &Topology, v: &str) -> Result<NodeSet, String> {
    let (kind, arg) = v.split_once(':').ok_or_else(|| "not an I/O specifier".to_string())?;
    if arg.is_empty() {
        return Err(format!("{kind}: needs a device"));
    }
    let addr = match kind {
        "netdev" => netdev_pci(sys, arg)?,
        "block" => {
            let name = arg.strip_prefix("/dev/").unwrap_or(arg);
            if !sys.exists(format!("sys/class/block/{name}")) {
                return Err(format!("no block device {name}"));
            }
            pci_parent(sys, &format!("sys/class/block/{name}"))
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("block device {name} is not on a PCI device"))?
        }
        "file" => file_pci(sys, arg)?,
        "pci" => normalize_pci(arg).ok_or_else(|| format!("\"{arg}\" is not a PCI address ([DOMAIN:]BUS:DEV.FN)"))?,
        "ip" => {
            let dev = route_device(sys, arg)?;
            netdev_pci(sys, &dev).map_err(|e| format!("route to {arg} leaves through {dev}: {e}"))?
        }
        _ => return Err(format!("unknown I/O specifier {kind}:")),
    };
    pci_nodes(sys, topo, &addr)
}

fn netdev_pci(sys: &SysRoot, dev: &str) -> Result<String, String> {
    if !sys.exists(format!("sys/class/net/{dev}")) {
        return Err(format!("no network device {dev}"));
    }
    pci_parent(sys, &format!("sys/class/net/{dev}"))
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("network device {dev} is not on a PCI device (a virtual interface?)"))
}

fn file_pci(sys: &SysRoot, path: &str) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path).map_err(|e| format!("cannot stat {path}: {e}"))?;
    let dev = md.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let rel = format!("sys/dev/block/{major}:{minor}");
    if !sys.exists(&rel) {
        return Err(format!("{path} is not on a block device (device {major}:{minor}, e.g. tmpfs or overlay)"));
    }
    pci_parent(sys, &rel)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the block device {major}:{minor} holding {path} is not on a PCI device"))
}

/// `00:1f.2` → `0000:00:1f.2`; full addresses pass through (lower-cased).
pub fn normalize_pci(arg: &str) -> Option<String> {
    let a = arg.to_ascii_lowercase();
    let full = if a.matches(':').count() == 1 { format!("0000:{a}") } else { a };
    is_pci_address(&full).then_some(full)
}

fn pci_nodes(sys: &SysRoot, topo: &Topology, addr: &str) -> Result<NodeSet, String> {
    let d = format!("sys/bus/pci/devices/{addr}");
    if !sys.exists(&d) {
        return Err(format!("no PCI device {addr}"));
    }
    let node = sys.read_i64(format!("{d}/numa_node")).map_err(|e| e.to_string())?;
    if let Some(n) = node.and_then(|n| u32::try_from(n).ok()) {
        return Ok(std::iter::once(n).collect());
    }
    let cpus = sys
        .read_list_or_mask::<crate::sets::Cpu>(format!("{d}/local_cpulist"), format!("{d}/local_cpus"))
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let nodes = topo.nodes_of_cpus(&cpus);
    if nodes.is_empty() {
        return Err(format!("PCI device {addr} reports no NUMA node and no local CPUs"));
    }
    Ok(nodes)
}

/// The interface the kernel's routing table sends `host` through
/// (longest prefix, then lowest metric), from `/proc/net/route` or
/// `/proc/net/ipv6_route`.
pub fn route_device(sys: &SysRoot, host: &str) -> Result<String, String> {
    let ip: IpAddr = match host.parse() {
        Ok(ip) => ip,
        Err(_) => {
            use std::net::ToSocketAddrs;
            (host, 0)
                .to_socket_addrs()
                .map_err(|e| format!("cannot resolve {host}: {e}"))?
                .next()
                .map(|s| s.ip())
                .ok_or_else(|| format!("cannot resolve {host}"))?
        }
    };
    let best = match ip {
        IpAddr::V4(v4) => {
            // The kernel looks in its local table first: the machine's own
            // addresses (127.0.0.0/8 and those of its interfaces) go
            // through `lo`. /proc/net/route shows only the main table.
            let trie = sys.read("proc/net/fib_trie").map_err(|e| e.to_string())?.unwrap_or_default();
            if is_local_v4(&trie, u32::from(v4)) {
                return Ok("lo".into());
            }
            let table = sys.read("proc/net/route").map_err(|e| e.to_string())?.unwrap_or_default();
            best_route_v4(&table, u32::from(v4))
        }
        IpAddr::V6(v6) => {
            let table = sys.read("proc/net/ipv6_route").map_err(|e| e.to_string())?.unwrap_or_default();
            best_route_v6(&table, u128::from(v6))
        }
    };
    best.ok_or_else(|| format!("no route to {ip}"))
}

/// Whether `/proc/net/fib_trie` text has a `LOCAL` route (the kernel's
/// local table: the machine's own addresses) covering `ip`: a leaf
/// `|-- ADDR` followed by `/LEN host LOCAL`.
pub fn is_local_v4(trie: &str, ip: u32) -> bool {
    let mut leaf: Option<u32> = None;
    for line in trie.lines() {
        let t = line.trim();
        if let Some(addr) = t.strip_prefix("|-- ") {
            leaf = addr.trim().parse::<std::net::Ipv4Addr>().ok().map(u32::from);
            continue;
        }
        let Some(rest) = t.strip_prefix('/') else { continue };
        let mut f = rest.split_whitespace();
        let (Some(len), Some(_scope), Some(kind)) = (f.next().and_then(|l| l.parse::<u32>().ok()), f.next(), f.next())
        else {
            continue;
        };
        if kind != "LOCAL" || len > 32 {
            continue;
        }
        let Some(addr) = leaf else { continue };
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        if ip & mask == addr & mask {
            return true;
        }
    }
    false
}

/// Longest-prefix match in `/proc/net/route` text (addresses are
/// little-endian hex). Returns the interface.
pub fn best_route_v4(table: &str, ip: u32) -> Option<String> {
    let mut best: Option<(u32, u32, String)> = None; // (prefix bits, metric, iface)
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let (Ok(dest), Ok(mask), Ok(metric)) =
            (u32::from_str_radix(f[1], 16), u32::from_str_radix(f[7], 16), f[6].parse::<u32>())
        else {
            continue;
        };
        // The kernel prints the raw in-memory word: network-order bytes.
        let (dest, mask) = (u32::from_be_bytes(dest.to_ne_bytes()), u32::from_be_bytes(mask.to_ne_bytes()));
        if ip & mask != dest & mask {
            continue;
        }
        let bits = mask.count_ones();
        if best.as_ref().is_none_or(|(b, m, _)| bits > *b || (bits == *b && metric < *m)) {
            best = Some((bits, metric, f[0].to_string()));
        }
    }
    best.map(|b| b.2)
}

/// Longest-prefix match in `/proc/net/ipv6_route` text.
pub fn best_route_v6(table: &str, ip: u128) -> Option<String> {
    let mut best: Option<(u32, u32, String)> = None;
    for line in table.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let (Ok(dest), Ok(plen), Ok(metric)) =
            (u128::from_str_radix(f[0], 16), u32::from_str_radix(f[1], 16), u32::from_str_radix(f[5], 16))
        else {
            continue;
        };
        let mask = if plen == 0 { 0 } else { u128::MAX << (128 - plen.min(128)) };
        if ip & mask != dest & mask || f[9] == "lo" && plen == 0 {
            continue;
        }
        if best.as_ref().is_none_or(|(b, m, _)| plen > *b || (plen == *b && metric < *m)) {
            best = Some((plen, metric, f[9].to_string()));
        }
    }
    best.map(|b| b.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0002A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
ib0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0
";

    #[test]
    fn ipv4_longest_prefix() {
        let ip = |s: &str| u32::from(s.parse::<std::net::Ipv4Addr>().expect("ip"));
        assert_eq!(best_route_v4(ROUTE, ip("192.168.2.7")).as_deref(), Some("eth0"));
        assert_eq!(best_route_v4(ROUTE, ip("10.1.2.3")).as_deref(), Some("ib0"));
        assert_eq!(best_route_v4(ROUTE, ip("8.8.8.8")).as_deref(), Some("eth0"));
        assert_eq!(best_route_v4("Iface\n", ip("8.8.8.8")), None);
    }

    const TRIE: &str = "Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
Local:
  +-- 0.0.0.0/0 3 0 5
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     |-- 192.168.2.9
        /32 host LOCAL
";

    #[test]
    fn the_machines_own_addresses_are_local() {
        let ip = |s: &str| u32::from(s.parse::<std::net::Ipv4Addr>().unwrap());
        assert!(is_local_v4(TRIE, ip("127.0.0.1")) && is_local_v4(TRIE, ip("127.3.4.5")));
        assert!(is_local_v4(TRIE, ip("192.168.2.9")));
        // Other hosts of the LAN, and beyond, are not ours.
        assert!(!is_local_v4(TRIE, ip("192.168.2.7")) && !is_local_v4(TRIE, ip("8.8.8.8")));
        assert!(!is_local_v4("", ip("127.0.0.1")));
    }

    #[test]
    fn ipv6_longest_prefix() {
        let t = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 eth0
fd000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 ib0
";
        let ip = |s: &str| u128::from(s.parse::<std::net::Ipv6Addr>().expect("ip"));
        assert_eq!(best_route_v6(t, ip("fd00::5")).as_deref(), Some("ib0"));
        assert_eq!(best_route_v6(t, ip("2001:db8::1")).as_deref(), Some("eth0"));
    }

    #[test]
    fn pci_normalisation() {
        assert_eq!(normalize_pci("00:1F.2").as_deref(), Some("0000:00:1f.2"));
        assert_eq!(normalize_pci("0000:3b:00.0").as_deref(), Some("0000:3b:00.0"));
        assert_eq!(normalize_pci("zz"), None);
    }

    #[test]
    fn specifiers_recognised() {
        assert!(is_iospec("netdev:eth0") && is_iospec("ip:10.0.0.1") && !is_iospec("0-1"));
    }

    mod props {
        use super::*;
        use crate::sys::proptests::{cfg, kernelish, lossy};
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(cfg())]

            #[test]
            fn route_files_never_panic(t in prop_oneof![kernelish(), lossy(), any::<String>()], ip in any::<u32>(), ip6 in any::<u128>()) {
                let _ = is_local_v4(&t, ip);
                let _ = best_route_v4(&t, ip);
                let _ = best_route_v6(&t, ip6);
            }

            /// A generated `fib_trie` says an address is local exactly when
            /// one of its `LOCAL` leaves covers it.
            #[test]
            fn fib_trie_local_model(
                leaves in prop::collection::vec((any::<u32>(), 0u32..=32, prop::sample::select(vec!["LOCAL", "BROADCAST", "UNICAST"])), 0..8),
                probe in any::<u32>(),
                pick in any::<prop::sample::Index>(),
            ) {
                let mut t = String::from("Main:\n  +-- 0.0.0.0/0 3 0 5\nLocal:\n  +-- 0.0.0.0/0 3 0 5\n");
                for (a, len, kind) in &leaves {
                    t.push_str(&format!("     |-- {}\n        /{len} host {kind}\n", std::net::Ipv4Addr::from(*a)));
                }
                let mask = |len: u32| if len == 0 { 0 } else { u32::MAX << (32 - len) };
                let covered = |ip: u32| leaves.iter().any(|(a, len, k)| *k == "LOCAL" && ip & mask(*len) == a & mask(*len));
                prop_assert_eq!(is_local_v4(&t, probe), covered(probe));
                if !leaves.is_empty() {
                    let ip = leaves[pick.index(leaves.len())].0;
                    prop_assert_eq!(is_local_v4(&t, ip), covered(ip));
                }
            }
        }
    }
}
