//! Slurm's `gres.conf`, as far as numakit needs it: which device file is
//! GPU index N of this node. Slurm hands a job its GPUs as indices
//! (`SLURM_JOB_GPUS`, `SLURM_STEP_GPUS`): the positions of the devices in
//! the node's GRES list, which is `gres.conf`'s `File=` entries of
//! `Name=gpu` for this node in the order they are written
//! (`File=/dev/nvidia[0-3]` is four of them). With `AutoDetect=nvml` Slurm
//! takes the list from NVML instead, whose order is the GPUs' PCI bus
//! order ([`GresGpus::Nvml`]); with another `AutoDetect`, the order is not
//! known here ([`GresGpus::Unknown`]). Pure: parsing text only.

/// How this node's GPU indices map to devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GresGpus {
    /// Index N is the Nth of these device files.
    Files(Vec<String>),
    /// `AutoDetect=nvml`: index N is the Nth NVIDIA GPU in PCI bus order.
    Nvml,
    /// Not known (why, one clause).
    Unknown(String),
}

/// Expands Slurm's host list syntax (`node[01-03,7]`, `/dev/nvidia[0-1]`,
/// several items separated by commas outside brackets). Bounded: at most
/// 4096 names; a malformed range is kept as written.
pub fn expand_hostlist(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                expand_one(&text[start..i], &mut out);
                start = i + 1;
            }
            _ => {}
        }
    }
    expand_one(&text[start..], &mut out);
    out
}

const MAX_NAMES: usize = 4096;

fn expand_one(item: &str, out: &mut Vec<String>) {
    let item = item.trim();
    if item.is_empty() || out.len() >= MAX_NAMES {
        return;
    }
    let (Some(open), Some(close)) = (item.find('['), item.find(']')) else {
        out.push(item.to_string());
        return;
    };
    if close < open {
        out.push(item.to_string());
        return;
    }
    let (head, ranges, tail) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let mut tails = Vec::new();
    expand_one(tail, &mut tails);
    if tails.is_empty() {
        tails.push(String::new());
    }
    for r in ranges.split(',') {
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        let (Ok(lo), Ok(hi)) = (a.trim().parse::<u64>(), b.trim().parse::<u64>()) else {
            out.push(item.to_string());
            return;
        };
        let width = a.trim().len();
        for n in lo..=hi.min(lo + MAX_NAMES as u64) {
            for t in &tails {
                if out.len() >= MAX_NAMES {
                    return;
                }
                out.push(format!("{head}{n:0width$}{t}"));
            }
        }
    }
}

/// This node's GPU devices from `gres.conf`'s text: lines of `Key=Value`
/// words (keys in any case, `#` comments); a line with `NodeName=` counts
/// only when its host list holds `host` (the short host name).
pub fn gpus_from_gres_conf(text: &str, host: &str) -> GresGpus {
    let mut files = Vec::new();
    let mut autodetect: Option<String> = None;
    let mut gpu_without_file = false;
    for raw in text.lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<(String, &str)> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let get = |k: &str| words.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        if let Some(nodes) = get("nodename") {
            if !expand_hostlist(nodes).iter().any(|n| n == host) {
                continue;
            }
        }
        if let Some(a) = get("autodetect") {
            autodetect = Some(a.to_ascii_lowercase());
        }
        if get("name") != Some("gpu") {
            continue;
        }
        match get("file").or_else(|| get("files")) {
            Some(f) => files.extend(expand_hostlist(f)),
            None => gpu_without_file = true,
        }
    }
    match autodetect.as_deref() {
        Some("nvml") => return GresGpus::Nvml,
        Some("off") | None => {}
        Some(other) => {
            return GresGpus::Unknown(format!(
                "gres.conf has AutoDetect={other}, whose GPU order numakit does not know"
            ))
        }
    }
    if files.is_empty() {
        return GresGpus::Unknown(if gpu_without_file {
            "gres.conf's gpu lines name no File= for this host".into()
        } else {
            format!("gres.conf has no gpu line for host {host}")
        });
    }
    GresGpus::Files(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists() {
        assert_eq!(expand_hostlist("/dev/nvidia[0-2]"), ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2"]);
        assert_eq!(expand_hostlist("n[01-02,7],gpu1"), ["n01", "n02", "n7", "gpu1"]);
        assert_eq!(expand_hostlist("/dev/dri/renderD[128-129]"), ["/dev/dri/renderD128", "/dev/dri/renderD129"]);
        assert_eq!(expand_hostlist("a[x-y]"), ["a[x-y]"]);
        assert_eq!(expand_hostlist("a[0-99999999]").len(), MAX_NAMES);
    }

    #[test]
    fn files_of_this_host_in_order() {
        let conf = "# a site's file\nAutoDetect=off\nNodeName=gpu[1-2] Name=gpu Type=h100 File=/dev/nvidia[2-3]\n\
                    NodeName=gpu[1-2] Name=gpu Type=a100 File=/dev/nvidia0,/dev/nvidia1 Cores=0-7\n\
                    NodeName=other Name=gpu File=/dev/nvidia9\nName=nic File=/dev/infiniband/uverbs0\n";
        let want: Vec<String> =
            ["/dev/nvidia2", "/dev/nvidia3", "/dev/nvidia0", "/dev/nvidia1"].map(String::from).into();
        assert_eq!(gpus_from_gres_conf(conf, "gpu1"), GresGpus::Files(want));
        assert!(matches!(gpus_from_gres_conf(conf, "cpu7"), GresGpus::Unknown(_)));
        assert_eq!(gpus_from_gres_conf("AutoDetect=nvml\nName=gpu Type=h100 Count=8\n", "x"), GresGpus::Nvml);
        let GresGpus::Unknown(why) = gpus_from_gres_conf("AutoDetect=rsmi\n", "x") else { panic!() };
        assert!(why.contains("AutoDetect=rsmi"), "{why}");
        let GresGpus::Unknown(why) = gpus_from_gres_conf("Name=gpu Count=2\n", "x") else { panic!() };
        assert!(why.contains("no File="), "{why}");
    }
}
