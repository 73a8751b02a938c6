//! Links the numakit binary with GCC's unwinder built in (`libgcc_eh.a`)
//! instead of loading `libgcc_s.so.1` at every start, as `gcc
//! -static-libgcc` does for C++ programs. rustc asks for `-lgcc_s` on
//! linux-gnu whatever the flags; a linker script named `libgcc_s.so`, found
//! first on the library path, answers that request with the archive. It
//! saves the dynamic loader one library (docs/benchmarks.md, "Launch
//! cost"). Where the C compiler does not know `libgcc_eh.a`, nothing
//! changes.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let target = std::env::var("TARGET").unwrap_or_default();
    if !target.ends_with("-linux-gnu") {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let Ok(out) = Command::new(&cc).arg("-print-file-name=libgcc_eh.a").output() else { return };
    let archive = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    // An unknown file is printed back as its bare name.
    if !out.status.success() || !archive.is_absolute() || !archive.is_file() {
        return;
    }
    let Some(dir) = std::env::var_os("OUT_DIR").map(|d| PathBuf::from(d).join("static-libgcc")) else { return };
    let script = format!("INPUT({})\n", archive.display());
    if std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join("libgcc_s.so"), script)).is_ok() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
}
