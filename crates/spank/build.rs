//! Reads SLURM_VERSION_NUMBER from Slurm's `slurm_version.h` (Debian's
//! libslurm-dev, EL's slurm-devel): Slurm loads the plugin only when its
//! `plugin_version` has the same major and minor number as its own. The header is
//! `$SLURM_INCLUDE_DIR/slurm/slurm_version.h`, by default under `/usr/include`.
//!
//! Without it the crate still builds, so that `cargo build` and `cargo test` at
//! the top of a clone need no Slurm: one cargo warning says the plugin was built
//! for no Slurm and why, `plugin_version` is 0 (no Slurm loads it) and the
//! plugin records the reason (`numakit_spank::BUILT_FOR`, and the line
//! `strings` shows). The packaging scripts refuse such a plugin.

use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "src/version.rs"]
mod version;

fn main() {
    println!("cargo:rerun-if-env-changed=SLURM_INCLUDE_DIR");
    let include = std::env::var_os("SLURM_INCLUDE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/include".into());
    let header = include.join("slurm").join("slurm_version.h");
    let built_for: Result<u32, String> = match std::fs::read_to_string(&header) {
        Ok(text) => {
            version::parse_header(&text).ok_or_else(|| format!("{} defines no SLURM_VERSION_NUMBER", header.display()))
        }
        Err(e) => Err(format!("cannot read {}: {}", header.display(), io_reason(&e))),
    };
    // Watch the header, or where it would appear (a missing path would rerun
    // this script, and rebuild the crate, at every build).
    println!("cargo:rerun-if-changed={}", nearest_existing(&header).display());
    if let Err(why) = &built_for {
        println!(
            "cargo:warning=the Slurm plugin is built for no Slurm: {why} (install Slurm's headers, \
             Debian libslurm-dev or EL slurm-devel, or set SLURM_INCLUDE_DIR)"
        );
    }
    let ours = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let line = match &built_for {
        Ok(n) => format!("numakit-spank {ours} built for Slurm {} (SLURM_VERSION_NUMBER {n:#x})", version::dotted(*n)),
        Err(why) => format!("numakit-spank {ours} built for no Slurm ({why})"),
    };
    let built_for_code = match &built_for {
        Ok(n) => format!("Ok({n:#x})"),
        Err(why) => format!("Err({why:?})"),
    };
    let code = format!(
        "/// The Slurm this plugin is built for: `SLURM_VERSION_NUMBER` of the\n\
         /// `slurm_version.h` read at build time, or why none was read.\n\
         pub const BUILT_FOR: Result<u32, &str> = {built_for_code};\n\
         /// The header `BUILT_FOR` comes from.\n\
         pub const HEADER: &str = {header:?};\n\
         /// What the plugin was built for, in one line (`strings libnumakit_spank.so`).\n\
         pub const BUILT_FOR_LINE: &str = {line:?};\n",
        header = header.display().to_string(),
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("slurm_version.rs");
    if let Err(e) = std::fs::write(&out, code) {
        eprintln!("numakit-spank: cannot write {}: {e}", out.display());
        std::process::exit(1);
    }
}

/// The error without Rust's " (os error 2)".
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// `path`, or its nearest ancestor that exists.
fn nearest_existing(path: &Path) -> &Path {
    path.ancestors().find(|p| p.exists()).unwrap_or(path)
}
