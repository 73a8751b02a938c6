//! `numakit topo`.

use std::io::Write;

use numakit::present;
use numakit::topo::Topology;

use super::common::read_error;
use crate::cli::TopoArgs;
use crate::Failure;

/// Runs `numakit topo`.
pub fn run(sys: &numakit::sys::SysRoot, args: &TopoArgs) -> anyhow::Result<u8> {
    let topo = if args.hardware { Topology::read_nodes_only(sys) } else { Topology::read(sys) }.map_err(read_error)?;
    let text = if args.hardware {
        present::hardware::render(&topo)
    } else if args.format.json {
        present::json::render(&topo) + "\n"
    } else if let Some(path) = &args.svg {
        let svg = present::svg::render(&topo);
        if path.as_os_str() == "-" {
            svg
        } else {
            std::fs::write(path, svg).map_err(|e| Failure::system(format!("cannot write {}: {e}", path.display())))?;
            return Ok(0);
        }
    } else {
        present::text::render(&topo)
    };
    crate::output::stdout().write_all(text.as_bytes())?;
    Ok(0)
}
