//! Units every layer shares: sizes as people type them ([`parse_size`]),
//! bytes as people read them ([`human_bytes`]) and wall-clock times as
//! RFC 3339 ([`utc_rfc3339`]).
//!
//! This is the lowest layer: it reads nothing and depends on nothing else
//! in the crate, so `sys`, `topo`, `bench`, `daemon` and `present` can all
//! use it without importing upwards.

use std::fmt;

/// A size that could not be read. Displays the text as it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeError {
    /// The text, as given.
    pub text: String,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid size {:?}: use bytes or a number with K, M, G or T", self.text)
    }
}

impl std::error::Error for SizeError {}

/// Parses a size in bytes: `4096`, `32K`, `512M`, `1.5G`, `2T` (binary
/// multiples, either case; an optional `B` or `iB` at the end, so `64KiB`
/// and `64KB` read as 65,536 and `512B` as 512). The kernel's own files use the same
/// form (a cache's `size` is `32K`).
///
/// Whole numbers are exact; a fraction is rounded down to a byte. Negative,
/// non-finite, empty and out-of-range values are errors.
///
/// ```
/// use numakit::units::parse_size;
/// assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
/// assert_eq!(parse_size("32K").unwrap(), 32 * 1024);
/// assert!(parse_size("-1G").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let err = || SizeError { text: text.to_string() };
    let t = text.trim();
    let t = t.strip_suffix("iB").or_else(|| t.strip_suffix('B')).unwrap_or(t).trim_end();
    let (num, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 40),
        Some('p' | 'P') => (&t[..t.len() - 1], 50),
        _ => (t, 0),
    };
    let num = num.trim();
    if num.is_empty() || num.starts_with(['+', '-']) {
        return Err(err());
    }
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(1u64 << shift).ok_or_else(err);
    }
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => {
            let bytes = v * (1u64 << shift) as f64;
            // u64::MAX as f64 rounds up to 2^64, which does not fit.
            if bytes < u64::MAX as f64 {
                Ok(bytes as u64)
            } else {
                Err(err())
            }
        }
        _ => Err(err()),
    }
}

/// Parses a duration as people type it: `90` or `90s` (seconds), `500ms`,
/// `10m`, `2h`, `1d`, fractions allowed (`1.5m`). The error names the
/// text as given.
///
/// ```
/// use numakit::units::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
/// assert!(parse_duration("soon").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    match parse_seconds(text) {
        Ok(v) if v < 1e10 => Ok(std::time::Duration::from_secs_f64(v)),
        Ok(_) => Err(duration_error(text)),
        Err(e) => Err(e),
    }
}

/// [`parse_duration`]'s reading as seconds, without its bound: any finite,
/// non-negative number (a plain number is read exactly as Rust reads an
/// `f64`, `+` and exponents included), or one with a unit (`ms`, `s`, `m`,
/// `h`, `d`). The one parser of every duration and interval numakit takes.
///
/// ```
/// use numakit::units::parse_seconds;
/// assert_eq!(parse_seconds("0.5").unwrap(), 0.5);
/// assert_eq!(parse_seconds("500ms").unwrap(), 0.5);
/// assert!(parse_seconds("-1").is_err());
/// ```
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, scale) = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0), ("d", 86400.0)]
        .iter()
        .find_map(|(suffix, scale)| t.strip_suffix(suffix).map(|n| (n.trim_end(), *scale)))
        .unwrap_or((t, 1.0));
    if num.is_empty() || num.starts_with('-') {
        return Err(duration_error(text));
    }
    match num.parse::<f64>() {
        Ok(v) if (v * scale).is_finite() => Ok(v * scale),
        _ => Err(duration_error(text)),
    }
}

fn duration_error(text: &str) -> String {
    format!("invalid duration {text:?}: use seconds or a number with ms, s, m, h or d")
}

/// Formats bytes in binary units with one decimal where it helps
/// (`512 MiB`, `1.5 GiB`, `63.9 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v, UNITS[u])
    } else {
        format!("{:.1} {}", v, UNITS[u])
    }
}

/// Seconds since the epoch as an RFC 3339 UTC time (`2026-11-25T00:00:00Z`).
pub fn utc_rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // civil_from_days (H. Hinnant)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Now as seconds since the epoch (0 if the clock is before it).
pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_as_typed() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 32K\n"), Ok(32 << 10));
        assert_eq!(parse_size("8192K"), Ok(8 << 20));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("64kB"), Ok(64 << 10));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert_eq!(parse_size("512B"), Ok(512));
        // Exact beyond f64's 53 bits.
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        for bad in
            ["", "x", "-1G", "+1G", "G", "1.5.5", "NaN", "inf", "1e400", "16384P", "18446744073709551616", "B", "KiB"]
        {
            assert_eq!(parse_size(bad), Err(SizeError { text: bad.into() }), "{bad:?}");
        }
        assert_eq!(
            parse_size("-1G").unwrap_err().to_string(),
            "invalid size \"-1G\": use bytes or a number with K, M, G or T"
        );
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(512 << 20), "512 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(u64::MAX), "16 EiB");
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(utc_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_rfc3339(1_735_689_599), "2024-12-31T23:59:59Z");
        assert_eq!(utc_rfc3339(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    proptest! {
        #[test]
        fn whole_sizes_round_trip(n in 0u64..(1 << 40), unit in 0usize..5) {
            let (suffix, shift) = [("", 0), ("K", 10), ("M", 20), ("G", 30), ("T", 40)][unit];
            let text = format!("{n}{suffix}");
            match n.checked_mul(1 << shift) {
                Some(b) => prop_assert_eq!(parse_size(&text), Ok(b)),
                None => prop_assert!(parse_size(&text).is_err()),
            }
        }

        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_size(&s);
        }
    }

    #[test]
    fn durations_as_typed() {
        use std::time::Duration;
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration(" 1d ").unwrap(), Duration::from_secs(86400));
        for bad in ["", "-1s", "1y", "ms", "NaN", "1e300s"] {
            assert!(parse_duration(bad).unwrap_err().contains(&format!("{bad:?}")), "{bad}");
        }
    }

    #[test]
    fn seconds_take_every_float_as_rust_reads_it() {
        // What interval flags took as a plain f64 reads the same.
        for t in ["0.5", "2", "+1", "1e3", "5.", ".5", "1E-1", "0", "1e300", "3600"] {
            assert_eq!(parse_seconds(t), Ok(t.parse::<f64>().expect("f64")), "{t}");
        }
        assert_eq!(parse_seconds("500ms"), Ok(0.5));
        assert_eq!(parse_seconds("1.5m"), Ok(90.0));
        for bad in ["-1", "-0", "+-1", "inf", "NaN", "", "x", "1e400", "1e306d"] {
            assert!(parse_seconds(bad).unwrap_err().contains(&format!("{bad:?}")), "{bad}");
        }
    }
}
