//! `nk-hold`: allocates anonymous memory, touches every page (so the
//! calling thread's memory policy places it), prints one line
//! `ready pid=PID addr=HEX len=BYTES` and holds it.
//!
//! ```text
//! nk-hold --mib N [--threads T] [--secs S] [--nohuge] [--loop [--workers W]]
//!         [--first-touch-node N]
//! ```
//!
//! `--threads T` starts T extra threads that sleep (for `pin` tests);
//! `--loop` keeps re-touching the memory until the time is up (for
//! AutoNUMA tests), with `--workers W` W threads (the main one included)
//! doing so, each over its own contiguous share; `--nohuge` asks for base
//! pages (MADV_NOHUGEPAGE) so interleaving is page by page.
//! `--first-touch-node N` binds the memory policy to node N
//! (`set_mempolicy(MPOL_BIND)`) for the first touch only and then resets
//! it to `MPOL_DEFAULT`: the pages sit on node N while numa_maps shows
//! `default` and nothing says the owner placed them (the placer tests).
//! Exit 3 when the mapping fails, 4 when `set_mempolicy` fails; a
//! `--membind` too small makes the kernel kill it (SIGKILL, the OOM
//! killer) while touching.

use std::io::Write;
use std::time::{Duration, Instant};

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mib: usize = arg(&args, "--mib", 64);
    let threads: usize = arg(&args, "--threads", 0);
    let secs: u64 = arg(&args, "--secs", 3600);
    let nohuge = args.iter().any(|a| a == "--nohuge");
    let looping = args.iter().any(|a| a == "--loop");
    let workers: usize = arg(&args, "--workers", 1).max(1);
    let first_touch_node: Option<usize> =
        args.iter().position(|a| a == "--first-touch-node").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok());
    let len = mib << 20;
    // SAFETY: an anonymous private mapping of `len` bytes; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        eprintln!("nk-hold: mmap of {mib} MiB failed: {}", std::io::Error::last_os_error());
        std::process::exit(3);
    }
    if nohuge {
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    }
    let base = p as usize;
    let touch = move |round: u8, from: usize, to: usize| {
        for off in (from..to).step_by(4096) {
            // SAFETY: `off < to <= len`, inside the mapping, which lives until exit.
            unsafe { std::ptr::write_volatile((base + off) as *mut u8, round) };
        }
    };
    if let Some(node) = first_touch_node {
        if let Err(e) = set_policy(MPOL_BIND, Some(node)) {
            eprintln!("nk-hold: set_mempolicy(MPOL_BIND, node {node}): {e}");
            std::process::exit(4);
        }
    }
    touch(1, 0, len);
    if first_touch_node.is_some() {
        if let Err(e) = set_policy(MPOL_DEFAULT, None) {
            eprintln!("nk-hold: set_mempolicy(MPOL_DEFAULT): {e}");
            std::process::exit(4);
        }
    }
    for _ in 0..threads {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_secs(3600));
        });
    }
    println!("ready pid={} addr={base:x} len={len}", std::process::id());
    let _ = std::io::stdout().flush();
    let end = Instant::now() + Duration::from_secs(secs);
    // With --loop, worker w re-touches its share [w*len/W, (w+1)*len/W),
    // page aligned; worker 0 is the main thread.
    let share = move |w: usize| {
        ((len / workers * w) & !4095, if w + 1 == workers { len } else { (len / workers * (w + 1)) & !4095 })
    };
    let work = move |w: usize| {
        let (from, to) = share(w);
        let mut round = 1u8;
        while Instant::now() < end {
            if looping {
                round = round.wrapping_add(1);
                touch(round, from, to);
            } else {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    if looping {
        for w in 1..workers {
            std::thread::spawn(move || work(w));
        }
    }
    work(0);
}

const MPOL_DEFAULT: libc::c_long = 0;
const MPOL_BIND: libc::c_long = 2;

/// `set_mempolicy(mode, {node})` for the calling thread (`None`: empty mask).
fn set_policy(mode: libc::c_long, node: Option<usize>) -> std::io::Result<()> {
    let bits = 8 * std::mem::size_of::<libc::c_ulong>();
    let mut mask: Vec<libc::c_ulong> = vec![0; node.map_or(1, |n| n / bits + 1)];
    if let Some(n) = node {
        mask[n / bits] |= 1 << (n % bits);
    }
    let maxnode = (mask.len() * bits + 1) as libc::c_ulong;
    let ptr = if node.is_some() { mask.as_ptr() } else { std::ptr::null() };
    // SAFETY: `ptr` is null or points to `mask`, `maxnode - 1` bits long, alive for the call.
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
