//! Renderers of [`crate::result::Report`]: text for people, SVG and HTML
//! pictures. They format; they compute nothing but positions.

pub mod html;
pub mod svg;
pub mod text;
