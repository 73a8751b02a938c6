//! Text from outside (kernel files, dumps, requests) made safe to put in a
//! message: one line, bounded, control characters escaped, so a crafted
//! file can neither flood a terminal nor send it escape sequences.

/// How many characters of an outside value a message quotes at most.
pub const QUOTE_MAX_CHARS: usize = 120;

/// `s` as one line of at most `max` characters (escapes counted as
/// written): control characters (newlines, escapes, NULs) written as
/// `\n`, `\u{1b}` and so on, and the rest cut with `…` and the full
/// length of `s`.
///
/// ```
/// use numakit::text::one_line;
/// assert_eq!(one_line("a\nb\x1b]0;x\x07", 80), "a\\nb\\u{1b}]0;x\\u{7}");
/// assert_eq!(one_line(&"x".repeat(10), 4), "xxxx… (10 characters)");
/// ```
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in s.chars() {
        let piece: String = if c.is_control() { c.escape_debug().collect() } else { c.to_string() };
        let n = piece.chars().count();
        if count + n > max {
            out.push_str(&format!("… ({} characters)", s.chars().count()));
            return out;
        }
        out.push_str(&piece);
        count += n;
    }
    out
}

/// `s` quoted for a message: `"…"` around [`one_line`] of
/// [`QUOTE_MAX_CHARS`].
pub fn quote(s: &str) -> String {
    format!("\"{}\"", one_line(s, QUOTE_MAX_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escapes_and_bounds() {
        assert_eq!(quote("0-3"), "\"0-3\"");
        assert_eq!(one_line("tab\there", 80), "tab\\there");
        assert_eq!(one_line("ünïcödé", 80), "ünïcödé");
        assert_eq!(one_line("abcdef", 6), "abcdef");
        assert_eq!(one_line("abcdefg", 6), "abcdef… (7 characters)");
    }

    proptest! {
        #[test]
        fn always_one_bounded_line(s in "\\PC{0,300}|[\\x00-\\x1f\\x7f]{0,300}") {
            let l = one_line(&s, 50);
            prop_assert!(!l.contains('\n') && !l.contains('\r') && !l.contains('\x1b'));
            prop_assert!(l.chars().filter(|c| c.is_control()).count() == 0);
            prop_assert!(l.chars().count() <= 50 + 30, "{}", l);
        }
    }
}
