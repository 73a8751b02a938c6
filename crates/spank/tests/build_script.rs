//! The crate's build script (`build.rs`), run as cargo runs it, on the Slurm
//! headers it may meet: none (a fresh clone on a machine without Slurm's
//! development package), a header of another Slurm, a header without the
//! version. Without a header the build must go on, with one warning saying why
//! the plugin is built for no Slurm. Needs nothing but the build script cargo
//! compiled for this test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The newest `build-script-build` of this crate in the target folder of this
/// test (`target/debug/build/numakit-spank-HASH/`).
fn build_script() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let build = exe.parent().and_then(Path::parent).expect("the profile folder").join("build");
    let scripts = std::fs::read_dir(&build).expect("target/PROFILE/build").flatten().filter_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let script = e.path().join("build-script-build");
        let modified = script.metadata().and_then(|m| m.modified()).ok()?;
        name.starts_with("numakit-spank-").then_some((modified, script))
    });
    scripts.max().map(|(_, s)| s).unwrap_or_else(|| panic!("no numakit-spank build script in {}", build.display()))
}

struct Run {
    status: i32,
    warnings: Vec<String>,
    generated: String,
}

/// Runs the build script with `SLURM_INCLUDE_DIR=include`, as cargo would.
fn run(include: &Path) -> Run {
    let out_dir = tempfile::tempdir().expect("OUT_DIR");
    let out = Command::new(build_script())
        .env("SLURM_INCLUDE_DIR", include)
        .env("OUT_DIR", out_dir.path())
        .env("CARGO_PKG_VERSION", "9.8.7")
        .output()
        .expect("the build script runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    Run {
        status: out.status.code().unwrap_or(-1),
        warnings: stdout.lines().filter_map(|l| l.strip_prefix("cargo:warning=")).map(String::from).collect(),
        generated: std::fs::read_to_string(out_dir.path().join("slurm_version.rs")).unwrap_or_default(),
    }
}

fn header(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir.join("slurm")).expect("slurm/");
    std::fs::write(dir.join("slurm/slurm_version.h"), text).expect("the header");
}

#[test]
fn without_slurms_headers_the_build_goes_on_and_says_why() {
    let empty = tempfile::tempdir().expect("an empty folder");
    let r = run(empty.path());
    let h = empty.path().join("slurm/slurm_version.h");
    assert_eq!(r.status, 0, "the build goes on");
    assert_eq!(
        r.warnings,
        [format!(
            "the Slurm plugin is built for no Slurm: cannot read {}: No such file or directory (install Slurm's \
             headers, Debian libslurm-dev or EL slurm-devel, or set SLURM_INCLUDE_DIR)",
            h.display()
        )]
    );
    let why = format!("cannot read {}: No such file or directory", h.display());
    assert!(
        r.generated.contains(&format!("pub const BUILT_FOR: Result<u32, &str> = Err({why:?});")),
        "{}",
        r.generated
    );
    assert!(
        r.generated.contains(&format!(
            "pub const BUILT_FOR_LINE: &str = {:?};",
            format!("numakit-spank 9.8.7 built for no Slurm ({why})")
        )),
        "{}",
        r.generated
    );

    // A header that defines no version: the same, saying so.
    header(empty.path(), "#define SLURM_VERSION_STRING \"22.05.8\"\n");
    let r = run(empty.path());
    assert_eq!(r.status, 0);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(r.warnings[0].contains(&format!("{} defines no SLURM_VERSION_NUMBER", h.display())), "{:?}", r.warnings);
}

#[test]
fn another_slurms_header_gives_its_version_quietly() {
    let dir = tempfile::tempdir().expect("a folder");
    header(dir.path(), "#ifndef _SLURM_VERSION_H_\n#define SLURM_VERSION_NUMBER 0x180b02\n#endif\n");
    let r = run(dir.path());
    assert_eq!((r.status, r.warnings.len()), (0, 0), "{:?}", r.warnings);
    assert!(r.generated.contains("pub const BUILT_FOR: Result<u32, &str> = Ok(0x180b02);"), "{}", r.generated);
    assert!(
        r.generated.contains(
            "pub const BUILT_FOR_LINE: &str = \"numakit-spank 9.8.7 built for Slurm 24.11.2 (SLURM_VERSION_NUMBER 0x180b02)\";"
        ),
        "{}",
        r.generated
    );
}
