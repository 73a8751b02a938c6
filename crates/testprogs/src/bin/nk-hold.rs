//! `nk-hold`: allocates anonymous memory, touches every page (so the
//! calling thread's memory policy places it), prints one line
//! `ready pid=PID addr=HEX len=BYTES` and holds it.
//!
//! ```text
//! nk-hold --mib N [--threads T] [--secs S] [--nohuge] [--loop]
//! ```
//!
//! `--threads T` starts T extra threads that sleep (for `pin` tests);
//! `--loop` keeps re-touching the memory until the time is up (for
//! AutoNUMA tests); `--nohuge` asks for base pages (MADV_NOHUGEPAGE) so
//! interleaving is page by page. Exit 3 when the mapping fails; a
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
    let touch = |round: u8| {
        for off in (0..len).step_by(4096) {
            // SAFETY: `off < len`, inside the mapping, which lives until exit.
            unsafe { std::ptr::write_volatile((base + off) as *mut u8, round) };
        }
    };
    touch(1);
    for _ in 0..threads {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_secs(3600));
        });
    }
    println!("ready pid={} addr={base:x} len={len}", std::process::id());
    let _ = std::io::stdout().flush();
    let end = Instant::now() + Duration::from_secs(secs);
    let mut round = 1u8;
    while Instant::now() < end {
        if looping {
            round = round.wrapping_add(1);
            touch(round);
        } else {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
