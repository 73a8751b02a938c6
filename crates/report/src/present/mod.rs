//! Renderers of [`crate::result::Report`]: text for people, SVG and HTML
//! pictures. They format; they compute nothing but positions. Text that
//! comes from the records or from outside is shown through [`name`] (or
//! `numakit::text::one_line`), and in SVG and HTML written through
//! `numakit::text::xml`: never raw.

pub mod html;
pub mod svg;
pub mod text;

/// The most characters of a name from the records (a group, an arm, a
/// hardware key, a host) the renderers show; a longer one is cut with its
/// length said.
pub const NAME_CHARS: usize = 200;

/// A name from the records as every renderer shows it: one line, control
/// characters escaped, at most [`NAME_CHARS`] ([`numakit::text::one_line`],
/// the one routine outside text is made safe with; SVG and HTML then
/// write it through [`numakit::text::xml`]).
pub fn name(s: &str) -> String {
    numakit::text::one_line(s, NAME_CHARS)
}
