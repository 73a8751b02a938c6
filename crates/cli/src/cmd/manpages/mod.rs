//! `numakit manpages DIR` (hidden, for packagers and scripts/build-deb):
//! a man page for `numakit` and one for every subcommand, nested ones
//! included (`numakit-tune-set.1`), rendered by clap_mangen from the one
//! clap definition (`crate::cli`). clap does not know what a command exits
//! with or which files it reads and writes; [`notes`] says that for every
//! page, with the default paths taken from the library's constants, and
//! the pages get EXIT STATUS, FILES and SEE ALSO sections from it. A
//! subcommand without notes fails the tests below.

use std::path::PathBuf;

use clap::{Args, Command, CommandFactory};
use clap_mangen::roff::{bold, italic, roman, Roff};
use clap_mangen::Man;

use crate::cli::Cli;
use crate::Failure;

/// `numakit manpages`.
#[derive(Debug, Args)]
pub struct ManpagesArgs {
    /// Folder to write the pages into (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// One rendered page.
#[derive(Debug)]
pub struct Page {
    /// The file name: `numakit-tune-set.1`.
    pub file: String,
    /// The page in roff.
    pub roff: String,
}

mod notes;

use notes::{notes, Notes};

/// Every page: numakit's and each visible subcommand's, depth first.
pub fn pages() -> Vec<Page> {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let version = root.get_version().unwrap_or_default().to_string();
    let mut out = Vec::new();
    walk(&root, &mut Vec::new(), &version, &mut out);
    out
}

fn walk(cmd: &Command, path: &mut Vec<String>, version: &str, out: &mut Vec<Page>) {
    out.push(render(cmd, path, version));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        path.push(sub.get_name().to_string());
        walk(sub, path, version, out);
        path.pop();
    }
}

fn render(cmd: &Command, path: &[String], version: &str) -> Page {
    let man = Man::new(cmd.clone()).source(format!("numakit {version}")).manual("numakit manual");
    let mut roff = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = man.render_title(&mut roff);
    let _ = man.render_name_section(&mut roff);
    let _ = man.render_synopsis_section(&mut roff);
    let _ = man.render_description_section(&mut roff);
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        let _ = man.render_options_section(&mut roff);
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        let _ = man.render_subcommands_section(&mut roff);
    }
    if let Some(notes) = notes(&path.join(" ")) {
        roff.extend_from_slice(sections(&notes, path).render().as_bytes());
    }
    Page { file: format!("{}.1", man_name(path)), roff: once_preamble(&String::from_utf8_lossy(&roff)) }
}

/// The sections rendered one by one each start with roff's apostrophe
/// preamble (two lines); once, at the top, is enough.
fn once_preamble(roff: &str) -> String {
    let mut seen = false;
    let mut out = String::with_capacity(roff.len());
    let mut lines = roff.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with(".ie \\n(.g .ds Aq") && lines.peek().is_some_and(|l| l.starts_with(".el .ds Aq")) {
            let next = lines.next().unwrap_or_default();
            if seen {
                continue;
            }
            seen = true;
            out.push_str(line);
            out.push('\n');
            out.push_str(next);
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn man_name(path: &[String]) -> String {
    std::iter::once("numakit").chain(path.iter().map(String::as_str)).collect::<Vec<_>>().join("-")
}

fn sections(notes: &Notes, path: &[String]) -> Roff {
    let mut r = Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    for (c, what) in &notes.exit {
        r.control("TP", []).text([bold(c.as_str())]).text([roman(*what)]);
    }
    r.control("SH", ["FILES"]);
    if notes.files.is_empty() {
        r.text([roman("None besides those named on the command line.")]);
    }
    for (f, what) in &notes.files {
        r.control("TP", []).text([italic(f.as_str())]).text([roman(*what)]);
    }
    let mut see: Vec<String> = Vec::new();
    if !path.is_empty() {
        see.push(format!("{}(1)", man_name(&path[..path.len() - 1])));
    }
    see.extend(notes.see_also.iter().map(|s| s.to_string()));
    if !see.is_empty() {
        r.control("SH", ["SEE ALSO"]);
        let items: Vec<_> =
            see.iter().enumerate().map(|(i, s)| roman(if i == 0 { s.clone() } else { format!(", {s}") })).collect();
        r.text(items);
    }
    r
}

/// Runs `numakit manpages`.
pub fn run(args: &ManpagesArgs) -> anyhow::Result<u8> {
    let err = |e: std::io::Error| Failure::system(format!("{}: {e}", args.dir.display()));
    std::fs::create_dir_all(&args.dir).map_err(err)?;
    for page in pages() {
        let path = args.dir.join(&page.file);
        std::fs::write(&path, &page.roff)
            .map_err(|e| Failure::system(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::notes::DAEMON_CONFIG;
    use super::*;
    use numakit::daemon::settings::Settings;
    use numakit::place::auto::EX_TEMPFAIL;
    use numakit::tune;

    fn page<'a>(pages: &'a [Page], file: &str) -> &'a str {
        &pages.iter().find(|p| p.file == file).unwrap_or_else(|| panic!("no page {file}")).roff
    }

    #[test]
    fn every_subcommand_has_a_page_with_exit_status_and_files() {
        let pages = pages();
        let mut want = vec!["numakit.1".to_string()];
        fn names(cmd: &Command, prefix: &str, want: &mut Vec<String>) {
            for s in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
                let name = format!("{prefix}-{}", s.get_name());
                want.push(format!("{name}.1"));
                names(s, &name, want);
            }
        }
        names(&Cli::command(), "numakit", &mut want);
        let have: Vec<String> = pages.iter().map(|p| p.file.clone()).collect();
        assert_eq!(have, want);
        assert!(have.len() > 30 && have.contains(&"numakit-tune-set.1".to_string()), "{have:?}");
        for p in &pages {
            for s in ["NAME", "SYNOPSIS", "DESCRIPTION", "\"EXIT STATUS\"", "FILES"] {
                let why = "(a new subcommand? say its exit codes and files in notes())";
                assert!(p.roff.contains(&format!("\n.SH {s}\n")), "{}: no {s} section {why}", p.file);
            }
            assert!(p.roff.contains(&format!("\n.TH {} 1 ", p.file.trim_end_matches(".1"))), "{}", p.file);
            assert_eq!(p.roff.matches(".ds Aq").count(), 2, "{}: one preamble", p.file);
        }
        assert!(!have.iter().any(|f| f.contains("manpages") || f.contains("help")), "{have:?}");
    }

    #[test]
    fn pages_name_the_codes_and_paths_the_code_uses() {
        let pages = pages();
        let s = Settings::default();
        // Exit 75 where the job may not fit.
        for f in ["numakit-run.1", "numakit-advise.1", "numakit.1"] {
            assert!(page(&pages, f).contains(&format!("\\fB{EX_TEMPFAIL}\\fR")), "{f}");
        }
        assert!(!page(&pages, "numakit-topo.1").contains(&format!("\\fB{EX_TEMPFAIL}\\fR")));
        let daemon = page(&pages, "numakit-daemon.1");
        for p in [s.socket.clone(), s.state_dir.join("state.json"), s.state_dir.join("status.json"), s.log.clone()] {
            assert!(daemon.contains(&p.display().to_string().replace('-', "\\-")), "daemon page lacks {}", p.display());
        }
        assert!(daemon.contains(&DAEMON_CONFIG.replace('-', "\\-")));
        let set = page(&pages, "numakit-tune-set.1");
        assert!(set.contains(&format!("/{}", tune::DEFAULT_STATE).replace('-', "\\-")), "{set}");
        assert!(page(&pages, "numakit-tune-apply.1").contains(tune::DEFAULT_PROFILES_DIR));
        // The exporter's default --daemon-status is the daemon's status file.
        let cmd = Cli::command();
        let exporter = cmd.find_subcommand("exporter").expect("exporter");
        let arg = exporter.get_arguments().find(|a| a.get_id() == "daemon_status").expect("--daemon-status");
        assert_eq!(arg.get_default_values(), [s.state_dir.join("status.json").as_os_str()]);
        // Nested pages point to their parent; options come from clap.
        assert!(set.contains("numakit\\-tune(1)"), "{set}");
        assert!(page(&pages, "numakit-run.1").contains("\\-\\-cpunodebind"));
    }
}
