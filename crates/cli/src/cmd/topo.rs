//! `numakit topo`.

use std::io::Write;

use numakit::present;
use numakit::sys::SysError;
use numakit::topo::Topology;

use crate::cli::TopoArgs;
use crate::Failure;

/// Maps a read error to an exit code: a bad `--sysroot` is a usage error.
pub fn read_error(e: SysError) -> Failure {
    match e {
        SysError::NotARoot { .. } => Failure::usage(e.to_string()),
        _ => Failure::system(e.to_string()),
    }
}

/// Runs `numakit topo`.
pub fn run(sys: &numakit::sys::SysRoot, args: &TopoArgs) -> anyhow::Result<u8> {
    let topo = if args.hardware { Topology::read_nodes_only(sys) } else { Topology::read(sys) }.map_err(read_error)?;
    let text = if args.hardware {
        present::hardware::render(&topo)
    } else if args.json {
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
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(0)
}
