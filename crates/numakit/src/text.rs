//! Text from outside (kernel files, dumps, requests, names a user typed)
//! made safe to put in a message: one line, bounded, control characters
//! escaped, so a crafted file or name can neither flood a terminal nor
//! send it escape sequences. [`one_line`] is the one escaping routine;
//! [`quote`], [`path`] and [`for_stream`] are its uses, and [`xml`] is it
//! for XML and HTML text (SVG pictures, HTML pages): control characters
//! escaped the same way, markup's characters as entities, and nothing XML
//! 1.0 forbids left in.
//!
//! Where numakit stands in for numactl or numastat, whose messages carry a
//! name byte for byte, [`for_stream`] keeps those bytes when the message
//! goes to a pipe or a file (byte parity with the real tool) and escapes
//! them on a terminal (docs/hostile-input.md).

use std::borrow::Cow;
use std::path::Path;

/// How many characters of an outside value a message quotes at most.
pub const QUOTE_MAX_CHARS: usize = 120;

/// How many characters of a path a message shows at most (a path may be
/// longer than a value: `PATH_MAX` is 4096 bytes).
pub const PATH_MAX_CHARS: usize = 4 * QUOTE_MAX_CHARS;

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
    let mut count: usize = 0;
    for c in s.chars() {
        let piece: String = if shown_escaped(c) { c.escape_debug().collect() } else { c.to_string() };
        let n = piece.chars().count();
        if count.saturating_add(n) > max {
            out.push_str(&format!("… ({} characters)", s.chars().count()));
            return out;
        }
        out.push_str(&piece);
        count += n;
    }
    out
}

/// Whether `c` is shown as its escape (`\u{1b}`): control characters (C0,
/// DEL, C1), and the two noncharacters XML 1.0 forbids (U+FFFE, U+FFFF).
fn shown_escaped(c: char) -> bool {
    c.is_control() || c == '\u{fffe}' || c == '\u{ffff}'
}

/// `s` as XML 1.0 character data or an attribute's value (and HTML
/// text): [`one_line`]'s escapes for control characters and the
/// characters XML forbids (so no character a parser refuses, and none
/// that drives a terminal, is left), then `&`, `<`, `>`, `"` and `'` as
/// entities. Not cut: callers bound what they show.
///
/// ```
/// use numakit::text::xml;
/// assert_eq!(xml("a<b>&\"c\x1b[0m\u{fffe}"), "a&lt;b&gt;&amp;&quot;c\\u{1b}[0m\\u{fffe}");
/// ```
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if shown_escaped(c) => out.extend(c.escape_debug()),
            c => out.push(c),
        }
    }
    out
}

/// `s` quoted for a message: `"…"` around [`one_line`] of
/// [`QUOTE_MAX_CHARS`].
pub fn quote(s: &str) -> String {
    format!("\"{}\"", one_line(s, QUOTE_MAX_CHARS))
}

/// A path as typed (or as found in a dump), for a message: [`one_line`]
/// of [`PATH_MAX_CHARS`]; bytes that are not UTF-8 show as `�`.
///
/// ```
/// use numakit::text::path;
/// assert_eq!(path(std::path::Path::new("/tmp/a\nb")), "/tmp/a\\nb");
/// ```
pub fn path(p: &Path) -> String {
    one_line(&p.to_string_lossy(), PATH_MAX_CHARS)
}

/// `s` as a drop-in tool puts it in a message: unchanged when the message
/// goes to a pipe or a file (`terminal` false: the real numactl and
/// numastat print the bytes they were given), its control characters
/// escaped by [`one_line`] on a terminal, so a name holding escape
/// sequences cannot drive the terminal.
///
/// ```
/// use numakit::text::for_stream;
/// assert_eq!(for_stream("a\x1b[31m", false), "a\x1b[31m");
/// assert_eq!(for_stream("a\x1b[31m", true), "a\\u{1b}[31m");
/// ```
pub fn for_stream(s: &str, terminal: bool) -> Cow<'_, str> {
    if terminal && s.chars().any(char::is_control) {
        Cow::Owned(one_line(s, usize::MAX))
    } else {
        Cow::Borrowed(s)
    }
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
        assert_eq!(one_line("a\u{7}", usize::MAX), "a\\u{7}");
    }

    #[test]
    fn paths_and_streams() {
        let long = format!("/{}\n", "a".repeat(5000));
        let shown = path(Path::new(&long));
        assert!(shown.chars().count() < PATH_MAX_CHARS + 30 && shown.ends_with("(5002 characters)"), "{shown}");
        assert!(!shown.contains('\n'));
        assert_eq!(for_stream("plain", true), "plain");
        assert_eq!(for_stream("x\ny", true), "x\\ny");
        assert_eq!(for_stream("x\ny", false), "x\ny");
    }

    #[test]
    fn xml_text_by_hand() {
        assert_eq!(xml("plain ünïcödé"), "plain ünïcödé");
        assert_eq!(xml("</text><script>"), "&lt;/text&gt;&lt;script&gt;");
        assert_eq!(xml("a\u{0}b\u{85}c\u{ffff}\n"), "a\\0b\\u{85}c\\u{ffff}\\n");
        assert_eq!(one_line("x\u{fffe}", 80), "x\\u{fffe}");
    }

    /// Whether `c` is a character XML 1.0 allows (its `Char` production).
    fn xml_char(c: char) -> bool {
        matches!(c, '\u{9}' | '\u{a}' | '\u{d}' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
    }

    proptest! {
        #[test]
        fn xml_text_is_well_formed_for_any_text(s in any::<String>(), t in "[\\x00-\\x1f\\x7f-\\u{9f}<>&'\"\\u{fffe}\\u{ffff}a]{0,40}") {
            for s in [&s, &t] {
                let x = xml(s);
                prop_assert!(x.chars().all(|c| xml_char(c) && !c.is_control()), "{:?}", x);
                prop_assert!(!x.contains('<') && !x.contains('>') && !x.contains('"') && !x.contains('\''));
                let doc = format!("<t a=\"{x}\">{x}</t>");
                let parsed = roxmltree::Document::parse(&doc);
                prop_assert!(parsed.is_ok(), "{:?}: {:?}", doc, parsed.err());
                let root = parsed.map(|d| d.root_element().text().unwrap_or("").to_string()).unwrap_or_default();
                prop_assert_eq!(root, one_line(s, usize::MAX));
            }
        }

        #[test]
        fn always_one_bounded_line(s in "\\PC{0,300}|[\\x00-\\x1f\\x7f]{0,300}") {
            let l = one_line(&s, 50);
            prop_assert!(!l.contains('\n') && !l.contains('\r') && !l.contains('\x1b'));
            prop_assert!(l.chars().filter(|c| c.is_control()).count() == 0);
            prop_assert!(l.chars().count() <= 50 + 30, "{}", l);
        }
    }
}
