//! The Slurm version the plugin is built for: reading it from `slurm_version.h`
//! (also compiled into `build.rs`, which does the reading), writing it as Slurm
//! does (`22.05.8`), and checking it against the Slurm that loaded the plugin.
//!
//! Slurm 22.05 (tried in tests/slurm.rs) refuses, before any of the plugin's
//! code runs, a SPANK plugin whose `plugin_version` differs from its own in
//! major or minor number (slurmd's log: `plugin_load_from_file: Incompatible
//! Slurm plugin PATH version (21.08.8)`); a different micro number loads.
//! [`check`] is the plugin's own line for a Slurm that loads it anyway (older
//! releases' plugin.c skipped the test for SPANK plugins) and for a plugin
//! built without Slurm's headers. Pure: no file read
//! at run time, no call into Slurm.

/// `SLURM_VERSION_NUMBER` as `slurm_version.h` defines it (`0x160508`, or a
/// decimal number), from the header's text; `None` when it defines none.
/// (`build.rs` reads the header; the crate itself only tests this.)
#[cfg_attr(not(test), allow(dead_code))]
pub fn parse_header(text: &str) -> Option<u32> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix('#'))
        .filter_map(|l| l.trim_start().strip_prefix("define"))
        .filter(|l| l.starts_with([' ', '\t']))
        .filter_map(|l| l.trim_start().strip_prefix("SLURM_VERSION_NUMBER"))
        .filter(|l| l.starts_with([' ', '\t']))
        .find_map(|l| parse_number(l.trim()))
}

#[cfg_attr(not(test), allow(dead_code))]
fn parse_number(text: &str) -> Option<u32> {
    let text = text.split_whitespace().next()?;
    let n = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => text.parse().ok()?,
    };
    // major, minor and micro are a byte each (SLURM_VERSION_NUM)
    (n > 0 && n <= 0xff_ffff).then_some(n)
}

/// A `SLURM_VERSION_NUMBER` as Slurm writes versions: `0x160508` is `22.05.8`.
pub fn dotted(number: u32) -> String {
    format!("{}.{:02}.{}", (number >> 16) & 0xff, (number >> 8) & 0xff, number & 0xff)
}

/// Checks the Slurm this plugin was built for (`built`: a version number, or
/// why there is none) against the one that loaded it (`running`, as
/// `S_SLURM_VERSION` gives it, `None` when it cannot be asked). `Ok` is the
/// line to log at init; `Err` the one error line that fails the init.
pub fn check(built: Result<u32, &str>, running: Option<&str>, ours: &str) -> Result<String, String> {
    const REBUILD: &str = "rebuild it against this Slurm's headers (docs/batch.md, \"Another Slurm version\")";
    let number = match built {
        Ok(n) => n,
        Err(why) => {
            return match running {
                Some(r) => {
                    Err(format!("numakit: this plugin was built for no Slurm ({why}); this is Slurm {r}: {REBUILD}"))
                }
                None => Ok(format!("numakit: SPANK plugin {ours}, built for no Slurm ({why})")),
            };
        }
    };
    let Some(running) = running else {
        return Ok(format!("numakit: SPANK plugin {ours}, built for Slurm {}", dotted(number)));
    };
    let series = |v: &str| -> Option<(u32, u32)> {
        let mut parts = v.trim().split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    if series(running) != Some(((number >> 16) & 0xff, (number >> 8) & 0xff)) {
        return Err(format!(
            "numakit: this plugin was built for Slurm {} and this is Slurm {running}: {REBUILD}",
            dotted(number)
        ));
    }
    Ok(format!("numakit: SPANK plugin {ours}, built for Slurm {}, in Slurm {running}", dotted(number)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_number_is_read_as_slurm_writes_it() {
        let debian = "/* slurm/slurm_version.h. */\n#ifndef _SLURM_VERSION_H_\n#define _SLURM_VERSION_H_\n\n\
                      #define SLURM_VERSION_NUMBER 0x160508\n\n#define SLURM_VERSION_MAJOR(a) (((a) >> 16) & 0xff)\n#endif\n";
        assert_eq!(parse_header(debian), Some(0x160508));
        assert_eq!(parse_header("#  define\tSLURM_VERSION_NUMBER\t1443072 /* 22.05.0 */"), Some(0x160500));
        assert_eq!(parse_header("#define SLURM_VERSION_NUMBER 0X180B02\n"), Some(0x180b02));
        for bad in [
            "",
            "#define SLURM_VERSION_NUMBERS 0x160508",
            "#define SLURM_VERSION_NUMBER",
            "#define SLURM_VERSION_NUMBER SLURM_VERSION_NUM(22,5,8)",
            "#define SLURM_VERSION_NUMBER 0x1000000",
            "#define SLURM_VERSION_NUMBER 0",
            "// #define SLURM_VERSION_NUMBER 0x160508",
        ] {
            assert_eq!(parse_header(bad), None, "{bad:?}");
        }
        assert_eq!(dotted(0x160508), "22.05.8");
        assert_eq!(dotted(0x180b02), "24.11.2");
        assert_eq!(dotted(0x150808), "21.08.8");
    }

    #[test]
    fn only_the_same_major_and_minor_pass() {
        let ok = check(Ok(0x160508), Some("22.05.8"), "0.1.0");
        assert_eq!(ok.as_deref(), Ok("numakit: SPANK plugin 0.1.0, built for Slurm 22.05.8, in Slurm 22.05.8"));
        // A micro release is Slurm's own rule too: it loads.
        assert!(check(Ok(0x160502), Some("22.05.11"), "0.1.0").is_ok_and(|l| l.contains("22.05.2, in Slurm 22.05.11")));
        for other in ["21.08.8", "23.02.1", "22.06.0", "garbage", ""] {
            let err = check(Ok(0x160508), Some(other), "0.1.0").expect_err(other);
            assert_eq!(
                err,
                format!(
                    "numakit: this plugin was built for Slurm 22.05.8 and this is Slurm {other}: rebuild it against \
                     this Slurm's headers (docs/batch.md, \"Another Slurm version\")"
                )
            );
        }
        let none = check(Err("cannot read /x/slurm/slurm_version.h"), Some("22.05.8"), "0.1.0");
        assert!(none.is_err_and(|e| e.contains("built for no Slurm (cannot read /x/slurm/slurm_version.h)")));
        // Outside Slurm (unit tests) nothing can be compared: the line only says what was built.
        assert!(check(Err("why"), None, "0.1.0").is_ok_and(|l| l.ends_with("built for no Slurm (why)")));
        assert!(check(Ok(0x160508), None, "0.1.0").is_ok_and(|l| l.ends_with("built for Slurm 22.05.8")));
    }
}
