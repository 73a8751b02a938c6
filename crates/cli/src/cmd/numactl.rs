//! numactl compatibility: `numakit numactl ARGS`, or numakit invoked as
//! `numactl` (a symlink), takes numactl's options with getopt_long's rules
//! (unique prefixes of long options, `--opt=v` and `--opt v`, `-N0` and
//! `-N 0`, clustered flags, options end at the first non-option or `--`)
//! and numactl's exit codes (1 on any error), and prints `--show` and
//! `--hardware` in numactl's exact format.
//!
//! Left out: the SysV shared-memory and file policy options (`--shm`,
//! `--file`, `--offset`, `--length`, `--strict`, `--shmmode`, `--shmid`,
//! `--huge`, `--touch`, `--dump`, `--dump-nodes`, `--verify`): they set
//! policies on shared segments rather than on a process, which numakit
//! does not manage yet; they fail with a clear message.

use std::ffi::OsString;

use numakit::place::{Context, OptKind, PolicyOpt, Request};
use numakit::present;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::{exec, kernel_version, self_policy};
use crate::Failure;

/// numactl's exit code for every error.
const EXIT: u8 = 1;

const LONG: &[(&str, char, bool)] = &[
    ("interleave", 'i', true),
    ("weighted-interleave", 'w', true),
    ("preferred", 'p', true),
    ("preferred-many", 'P', true),
    ("cpubind", 'c', true),
    ("cpunodebind", 'N', true),
    ("physcpubind", 'C', true),
    ("membind", 'm', true),
    ("show", 's', false),
    ("localalloc", 'l', false),
    ("hardware", 'H', false),
    ("balancing", 'b', false),
    ("all", 'a', false),
    ("shm", 'S', true),
    ("file", 'f', true),
    ("offset", 'o', true),
    ("length", 'L', true),
    ("strict", 't', false),
    ("shmmode", 'M', true),
    ("dump", 'd', false),
    ("dump-nodes", 'D', false),
    ("shmid", 'I', true),
    ("huge", 'u', false),
    ("touch", 'T', false),
    ("verify", 'V', false),
];

fn fail(msg: impl Into<String>) -> Failure {
    Failure { code: EXIT, message: msg.into() }
}

/// Options as (short letter, value) pairs, in order.
type Opts = Vec<(char, Option<String>)>;

/// Splits numactl's argument list into (option, value) pairs and the
/// command, by getopt_long's rules.
pub fn parse(args: &[String]) -> Result<(Opts, Vec<String>), Failure> {
    let mut opts = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let exact = LONG.iter().find(|(n, _, _)| *n == name);
            let matches: Vec<_> = LONG.iter().filter(|(n, _, _)| n.starts_with(name)).collect();
            let (_, c, has_arg) = match (exact, matches.as_slice()) {
                (Some(e), _) => *e,
                (None, [one]) => **one,
                (None, []) => return Err(fail(format!("unrecognized option '--{name}'"))),
                (None, _) => return Err(fail(format!("option '--{name}' is ambiguous"))),
            };
            let value = if has_arg {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        Some(
                            args.get(i)
                                .cloned()
                                .ok_or_else(|| fail(format!("option '--{name}' requires an argument")))?,
                        )
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(fail(format!("option '--{name}' doesn't allow an argument")));
                }
                None
            };
            opts.push((c, value));
            i += 1;
            if matches!(c, 'H' | 's') {
                // numactl acts on these at once: what follows is never read.
                return Ok((opts, Vec::new()));
            }
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                let Some((_, _, has_arg)) = LONG.iter().find(|(_, s, _)| *s == c) else {
                    return Err(fail(format!("invalid option -- '{c}'")));
                };
                if *has_arg {
                    let rest: String = chars[j + 1..].iter().collect();
                    let v = if !rest.is_empty() {
                        rest
                    } else {
                        i += 1;
                        args.get(i).cloned().ok_or_else(|| fail(format!("option requires an argument -- '{c}'")))?
                    };
                    opts.push((c, Some(v)));
                    break;
                }
                opts.push((c, None));
                if matches!(c, 'H' | 's') {
                    return Ok((opts, Vec::new()));
                }
                j += 1;
            }
            i += 1;
            continue;
        }
        break; // first non-option: the command starts here
    }
    Ok((opts, args[i..].to_vec()))
}

fn opt_kind(c: char) -> Option<OptKind> {
    Some(match c {
        'i' => OptKind::Interleave,
        'w' => OptKind::WeightedInterleave,
        'p' => OptKind::Preferred,
        'P' => OptKind::PreferredMany,
        'c' | 'N' => OptKind::CpuNodeBind,
        'C' => OptKind::PhysCpuBind,
        'm' => OptKind::MemBind,
        'l' => OptKind::LocalAlloc,
        _ => return None,
    })
}

const USAGE: &str = "usage: numactl [--all | -a] [--balancing | -b] [--interleave= | -i <nodes>]
               [--preferred= | -p <node>] [--preferred-many= | -P <nodes>]
               [--physcpubind= | -C <cpus>] [--cpunodebind= | -N <nodes>]
               [--membind= | -m <nodes>] [--localalloc | -l] command args ...
       numactl [--show | -s]
       numactl [--hardware | -H]
(numakit's numactl mode; the --shm/--file options are not supported)";

/// Runs numactl's command line.
pub fn run(sys: &SysRoot, raw: &[OsString]) -> anyhow::Result<u8> {
    match run_inner(sys, raw) {
        Ok((code, text)) => {
            crate::output::print(&text)?;
            Ok(code)
        }
        Err(f) if f.code == EXIT => {
            // The names it quotes as numactl prints them: byte for byte to
            // a pipe or file, escaped on a terminal.
            use std::io::IsTerminal;
            eprintln!("numactl: {}", numakit::text::for_stream(&f.message, std::io::stderr().is_terminal()));
            eprintln!("{USAGE}");
            Ok(EXIT)
        }
        Err(f) => Err(f.into()),
    }
}

/// The exit code and what to print (printed by [`run`], through the one
/// output writer).
fn run_inner(sys: &SysRoot, raw: &[OsString]) -> Result<(u8, String), Failure> {
    let args: Vec<String> = raw.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let (opts, command) = parse(&args)?;
    // numactl 2.0.16 acts on each option in turn, so: the last CPU binding
    // (-N, -c, -C) is the one in effect, though each is checked; -b makes a
    // later -m balance; -H and -b refuse an earlier memory policy, and -a an
    // earlier node or CPU list; -H and -s act at once; `same` repeats the
    // last node list as typed.
    let mut req = Request::default();
    let mut cpu: Option<PolicyOpt> = None;
    let mut balancing = false;
    let mut last_nodes: Option<String> = None;
    // The node model, read once (the launch path) when first needed.
    let model = std::cell::OnceCell::new();
    let load = || -> Result<&Topology, Failure> {
        if model.get().is_none() {
            let _ = model.set(Topology::read_nodes_only(sys).map_err(|e| fail(e.to_string()))?);
        }
        model.get().ok_or_else(|| fail("the node model could not be kept"))
    };
    let with_cpu = |req: &Request, cpu: &Option<PolicyOpt>| {
        let mut r = req.clone();
        r.opts.extend(cpu.clone());
        r
    };
    for (c, v) in opts {
        let mem_policy = req.opts.iter().any(|o| o.kind != OptKind::CpuNodeBind && o.kind != OptKind::PhysCpuBind);
        match c {
            's' => {
                // Like numactl: options before --show apply to numactl itself.
                let topo = load()?;
                apply(sys, topo, &with_cpu(&req, &cpu))?;
                return Ok((0, present::show::numactl_show(&self_policy(topo).map_err(|e| fail(e.message))?)));
            }
            'H' | 'b' if mem_policy => return Err(fail("specify policy after --shm/--file")),
            'H' => {
                let topo = load()?;
                apply(sys, topo, &with_cpu(&req, &cpu))?;
                return Ok((0, present::hardware::render(topo)));
            }
            'b' => balancing = true,
            // -l takes no list: -l -a is fine.
            'a' if req.opts.iter().any(|o| o.kind != OptKind::LocalAlloc) || cpu.is_some() => {
                return Err(fail("--all/-a option must be before all cpu/node specifications"))
            }
            'a' => req.all = true,
            c => match opt_kind(c) {
                Some(kind) => {
                    // `same` is the text of the last node list (numactl
                    // keeps the string, whatever option took it); a CPU
                    // list has no `same`.
                    let v = match v {
                        Some(v) if kind == OptKind::PhysCpuBind && v == "same" => {
                            return Err(fail("<same> is invalid"));
                        }
                        Some(v) if kind == OptKind::PhysCpuBind => Some(v),
                        Some(v) if v == "same" => {
                            Some(last_nodes.clone().ok_or_else(|| fail("same needs previous node specification"))?)
                        }
                        Some(v) => {
                            last_nodes = Some(v.clone());
                            Some(v)
                        }
                        None => None,
                    };
                    let value = v.map(|v| libnuma_list(&v)).transpose()?;
                    let opt = PolicyOpt { kind, value };
                    if matches!(kind, OptKind::CpuNodeBind | OptKind::PhysCpuBind) {
                        // Checked on its own, then replaced by a later one.
                        let alone = Request { opts: vec![opt.clone()], balancing: false, all: req.all };
                        alone
                            .resolve(&Context { topo: load()?, sys, kernel: None })
                            .map_err(|e| fail(e.to_string()))?;
                        cpu = Some(opt);
                    } else {
                        if kind == OptKind::MemBind && balancing {
                            req.balancing = true;
                        }
                        req.opts.push(opt);
                    }
                }
                None => {
                    let name = LONG.iter().find(|(_, s, _)| *s == c).map_or("?", |(n, _, _)| *n);
                    return Err(fail(format!(
                        "--{name} (SysV shared memory and file policies) is not supported by numakit's numactl mode"
                    )));
                }
            },
        }
    }
    let req = with_cpu(&req, &cpu);
    if command.is_empty() {
        return Err(fail("no command given"));
    }
    apply(sys, load()?, &req)?;
    let cmd: Vec<OsString> = command.into_iter().map(OsString::from).collect();
    match exec(&cmd) {
        Ok(c) => Ok((c, String::new())),
        Err(e) => Err(fail(format!("execution of `{}': {e}", cmd[0].to_string_lossy()))),
    }
}

/// A list as libnuma 2.0.16 reads it ([`numakit::sets::libnuma::as_list`]);
/// I/O specifiers (`netdev:eth0`, `pci:0000:00:1f.0`) pass unchanged.
fn libnuma_list(value: &str) -> Result<String, Failure> {
    if numakit::place::iospec::is_iospec(value) {
        return Ok(value.to_string());
    }
    numakit::sets::libnuma::as_list(value).ok_or_else(|| fail(format!("<{value}> is invalid")))
}

fn apply(sys: &SysRoot, topo: &Topology, req: &Request) -> Result<(), Failure> {
    if req.opts.is_empty() && !req.balancing {
        return Ok(());
    }
    let plan = req.resolve(&Context { topo, sys, kernel: kernel_version(sys) }).map_err(|e| fail(e.to_string()))?;
    plan.apply().map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[&str]) -> (Opts, Vec<String>) {
        parse(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>()).unwrap_or_else(|e| panic!("{}", e.message))
    }

    #[test]
    fn getopt_rules() {
        let (o, c) = p(&["--interleave=all", "-N0", "-m", "1", "--cpun", "2", "-lb", "cmd", "-x", "--y"]);
        assert_eq!(
            o,
            vec![
                ('i', Some("all".into())),
                ('N', Some("0".into())),
                ('m', Some("1".into())),
                ('N', Some("2".into())),
                ('l', None),
                ('b', None)
            ]
        );
        assert_eq!(c, vec!["cmd", "-x", "--y"]);
        let (o, c) = p(&["-s"]);
        assert_eq!((o, c.len()), (vec![('s', None)], 0));
        let (_, c) = p(&["-i", "0", "--", "-weird-cmd"]);
        assert_eq!(c, vec!["-weird-cmd"]);
    }

    #[test]
    fn libnuma_lists() {
        let l = |v: &str| libnuma_list(v).map_err(|e| e.message);
        assert_eq!(l("1-0"), Ok("1".into()));
        assert_eq!(l("0-7:2"), Err("<0-7:2> is invalid".into()));
        assert_eq!(l("pci:0000:00:1f.0"), Ok("pci:0000:00:1f.0".into()));
    }

    #[test]
    fn hardware_and_show_end_the_options() {
        let (o, c) = p(&["-H", "-Z", "--bogus"]);
        assert_eq!((o, c.len()), (vec![('H', None)], 0));
        let (o, _) = p(&["-m", "0", "-s", "--foo"]);
        assert_eq!(o, vec![('m', Some("0".into())), ('s', None)]);
        let (o, _) = p(&["-bH", "-Z"]);
        assert_eq!(o, vec![('b', None), ('H', None)]);
    }

    #[test]
    fn getopt_errors() {
        let e = |s: &[&str]| parse(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>()).unwrap_err().message;
        assert_eq!(e(&["--foo"]), "unrecognized option '--foo'");
        assert_eq!(e(&["--p", "0"]), "option '--p' is ambiguous");
        assert_eq!(e(&["-m"]), "option requires an argument -- 'm'");
        assert_eq!(e(&["-z"]), "invalid option -- 'z'");
        assert_eq!(e(&["--show=1"]), "option '--show' doesn't allow an argument");
    }
}
