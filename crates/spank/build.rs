//! Reads SLURM_VERSION_NUMBER from the installed Slurm's `slurm_version.h`:
//! Slurm loads a plugin only when its `plugin_version` equals that number.
//! The header is `$SLURM_INCLUDE_DIR/slurm/slurm_version.h`, by default
//! `/usr/include/slurm/slurm_version.h` (Debian's libslurm-dev).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=SLURM_INCLUDE_DIR");
    let include = std::env::var_os("SLURM_INCLUDE_DIR").map(PathBuf::from).unwrap_or_else(|| "/usr/include".into());
    let header = include.join("slurm").join("slurm_version.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let text = match std::fs::read_to_string(&header) {
        Ok(t) => t,
        Err(e) => fail(&format!(
            "cannot read {}: {e} (install libslurm-dev, e.g. scripts/install-deps, or set SLURM_INCLUDE_DIR)",
            header.display()
        )),
    };
    let version = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define"))
        .filter_map(|l| l.trim().strip_prefix("SLURM_VERSION_NUMBER"))
        .map(str::trim)
        .find_map(parse_number)
        .unwrap_or_else(|| fail(&format!("{} defines no numeric SLURM_VERSION_NUMBER", header.display())));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("slurm_version.rs");
    let code = format!(
        "/// `SLURM_VERSION_NUMBER` of the Slurm this plugin was built against ({}).\n\
         pub const SLURM_VERSION_NUMBER: u32 = {version:#x};\n",
        header.display()
    );
    if let Err(e) = std::fs::write(&out, code) {
        fail(&format!("cannot write {}: {e}", out.display()));
    }
}

fn parse_number(text: &str) -> Option<u32> {
    let text = text.split_whitespace().next()?;
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("numakit-spank: {msg}");
    std::process::exit(1);
}
