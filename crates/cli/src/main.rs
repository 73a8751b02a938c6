//! The `numakit` binary: parses arguments, calls the library, prints, and
//! maps the outcome to an exit code (0 ok, 1 system error, 2 usage error).
//! All logic lives in the `numakit` library crate; this is the only place
//! `anyhow` appears. It enters through C's `main` (`start`), not Rust's.

#![cfg_attr(not(test), no_main)]

#[macro_use]
mod output;
mod cli;
mod cmd;
#[cfg(not(test))]
mod start;

use std::io::Write;

use clap::{CommandFactory, FromArgMatches};

/// An error with the exit code it must produce.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: u8,
    /// One-line message.
    pub message: String,
}

impl Failure {
    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self { code: 2, message: message.into() }
    }
    /// A system error (exit 1).
    pub fn system(message: impl Into<String>) -> Self {
        Self { code: 1, message: message.into() }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
impl std::error::Error for Failure {}

/// clap's answer: `--help` and `--version` as clap prints them; a usage
/// error as one line, like numakit's other errors (exit 2).
fn usage_error(e: clap::Error) -> anyhow::Result<u8> {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.print().map_err(output::OutputError)?;
        return Ok(0);
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return Ok(2);
    }
    Err(Failure::usage(one_line(&e.to_string())).into())
}

/// clap's message in one line: its first line without the `error: `
/// prefix, the lines it continues with (the missing arguments), and the
/// tip it gives further down.
fn one_line(clap_text: &str) -> String {
    let mut lines = clap_text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).trim_end().to_string();
    for more in lines.by_ref().take_while(|l| l.starts_with([' ', '\t'])) {
        msg.push(' ');
        msg.push_str(more.trim());
    }
    let tip = clap_text.lines().find_map(|l| l.trim().strip_prefix("tip: ")).map(str::trim);
    match tip {
        Some(tip) => format!("{msg} ({tip}; see --help)"),
        None => format!("{msg} (see --help)"),
    }
}

/// Parses the command line: through the narrow tree of the launch paths
/// (`run`, `stat`, ...) when it accepts the line, else through the full tree
/// (its help, version and error messages).
fn parse(argv: Vec<std::ffi::OsString>) -> Result<(cli::Cli, clap::ArgMatches), clap::Error> {
    let name = argv.get(1).and_then(|a| a.to_str());
    if let Some(narrow) = name.and_then(cli::Cli::narrow_command) {
        if let Ok(m) = narrow.try_get_matches_from(&argv) {
            if let Ok(args) = cli::Cli::from_arg_matches(&m) {
                return Ok((args, m));
            }
        }
    }
    let m = cli::Cli::command().try_get_matches_from(argv)?;
    Ok((cli::Cli::from_arg_matches(&m)?, m))
}

/// The test harness has its own `main`: `run` is the program there too.
#[cfg(test)]
const _: fn(Vec<std::ffi::OsString>) -> u8 = run;

/// The program on its arguments (`argv[0]` first): its exit code (`start`
/// is the entry point).
fn run(argv: Vec<std::ffi::OsString>) -> u8 {
    // `NUMAKIT_SYSROOT=` (set, empty) names no root: the live system, as
    // the numactl and numastat modes read it (`SysRoot::from_env`), not a
    // missing value of the `--sysroot` the user never typed. Removed while
    // the process has its one thread.
    if std::env::var_os(numakit::sys::SYSROOT_ENV).is_some_and(|v| v.is_empty()) {
        std::env::remove_var(numakit::sys::SYSROOT_ENV);
    }
    let invoked_as = argv.first().and_then(|a| std::path::Path::new(a).file_name()).map(|n| n.to_os_string());
    let name = invoked_as.as_deref().and_then(|n| n.to_str());
    let result = if name == Some("numactl") {
        // A `numactl` symlink: numactl's options and exit codes.
        cmd::numactl::run(&numakit::sys::SysRoot::from_env(), &argv[1..])
    } else if name == Some("numastat") {
        // numastat's options, output and exit codes.
        cmd::numastat::run(&numakit::sys::SysRoot::from_env(), &argv)
    } else if name == Some("migratepages") {
        // `migratepages PID FROM TO` with its messages and exit codes.
        cmd::migratepages::run(&numakit::sys::SysRoot::from_env(), &argv)
    } else if argv.get(1).is_some_and(|a| a == "numactl") {
        // `numakit numactl ARGS`: every argument is numactl's (`-V`, `--help`
        // too), as through the symlink.
        cmd::numactl::run(&numakit::sys::SysRoot::from_env(), &argv[2..])
    } else if let Some(args) = cli::Cli::stat_compat_flags(&argv) {
        // `stat --compat` with numastat's flags only: parsed without clap.
        cmd::dispatch(args, &clap::ArgMatches::default())
    } else {
        match parse(argv) {
            Ok((args, matches)) => cmd::dispatch(args, &matches),
            Err(e) => usage_error(e),
        }
    };
    let result = result.and_then(|code| {
        output::finish()?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            // A reader that stopped reading (`| head`) is not an error.
            let Some(line) = output::describe(&e) else { return 0 };
            let code = e.downcast_ref::<Failure>().map_or(1, |f| f.code);
            // One line whatever it quotes: control characters escaped
            // (values are quoted and cut where the message is made).
            let _ = writeln!(std::io::stderr(), "numakit: {}", numakit::text::one_line(&line, usize::MAX));
            code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;
    use clap::{CommandFactory, FromArgMatches};

    /// The narrow tree of a launch path parses what the full tree parses,
    /// to the same values, and refuses what the full tree refuses (help
    /// and version included), so that the full tree answers those.
    #[test]
    fn narrow_tree_parses_as_the_full_tree() {
        let lines: &[&str] = &[
            "run -N 0 -m 0 -- true",
            "run -N0 -m0 true",
            "run --cpunodebind=1 --membind 1 -- sh -c x",
            "run -C !0 -b -a -- true",
            "run -i all -l --dry-run -- true",
            "run --sysroot /tmp/x -N 0 -- true",
            "run --auto --cpus 2 --mem 1G -- true",
            "run --auto --if-no-fit run -- true",
            "run --exclude-from-daemon -- true",
            "run --exclude-from-daemon cgroup -- true",
            "run -N 0",
            "run --cpus 2 -- true",
            "run --bogus -- true",
            "run --help",
            "run -h",
            "run --version",
            "run -V",
            "run",
            "stat --compat",
            "stat --compat -c -m -n -z -s",
            "stat -p 1 --json",
            "stat --interval 1 --count 2",
            "stat --help",
            "stat --bogus",
            "topo",
            "topo -H",
            "topo --json --svg x",
            "topo --hardware --json",
            "show",
            "show 1 --json",
            "show x",
            "pin 1 --cpus 0",
            "pin 1 -c 0-10:2",
            "pin --mask 0x3 1",
            "pin 1",
            "pin 1 --cpus 0 --nodes 0",
        ];
        for line in lines {
            let mut argv: Vec<String> = vec!["numakit".into()];
            argv.extend(line.split(' ').map(str::to_string));
            let full = crate::cli::Cli::command()
                .try_get_matches_from(&argv)
                .and_then(|m| crate::cli::Cli::from_arg_matches(&m).map(|c| format!("{c:?}")));
            let narrow = crate::cli::Cli::narrow_command(&argv[1])
                .expect("a launch path")
                .try_get_matches_from(&argv)
                .and_then(|m| crate::cli::Cli::from_arg_matches(&m).map(|c| format!("{c:?}")));
            match (&full, &narrow) {
                (Ok(f), Ok(n)) => assert_eq!(f, n, "{line}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{line}: full tree {full:?}, narrow tree {narrow:?}"),
            }
        }
        assert!(crate::cli::Cli::narrow_command("tune").is_none());
    }

    /// `stat --compat` with numastat's flags parses without clap to what
    /// clap parses: every order of every subset of the five flags, short or
    /// long; any other line is left to clap.
    #[test]
    fn stat_compat_flags_parse_as_clap() {
        let flags = [
            ["-c", "--compress"],
            ["-m", "--meminfo"],
            ["-n", "--numastat"],
            ["-v", "--verbose"],
            ["-z", "--skip-zero"],
        ];
        let mut lines: Vec<Vec<String>> = Vec::new();
        // Every ordered selection, by index sequences without repeats.
        fn extend(prefix: Vec<usize>, n: usize, out: &mut Vec<Vec<usize>>) {
            out.push(prefix.clone());
            for i in 0..n {
                if !prefix.contains(&i) {
                    let mut p = prefix.clone();
                    p.push(i);
                    extend(p, n, out);
                }
            }
        }
        let mut orders = Vec::new();
        extend(Vec::new(), flags.len(), &mut orders);
        assert_eq!(orders.len(), 326);
        for (k, order) in orders.iter().enumerate() {
            // Short and long names mixed, differently from line to line.
            lines.push(order.iter().enumerate().map(|(j, &i)| flags[i][(k + j) % 2].to_string()).collect());
        }
        let mut fast = 0;
        let others: &[&[&str]] = &[
            &["-c", "-c"],
            &["-cm"],
            &["-s"],
            &["-s=1"],
            &["-p", "1"],
            &["--json"],
            &["--interval", "1"],
            &["--sysroot", "/x"],
            &["-m", "--", "x"],
            &["1234"],
            &["-h"],
            &["--help"],
            &["-V"],
            &["-x"],
        ];
        for line in lines
            .iter()
            .map(|l| l.iter().map(String::as_str).collect::<Vec<_>>())
            .chain(others.iter().map(|o| o.to_vec()))
        {
            let mut argv: Vec<std::ffi::OsString> = vec!["numakit".into(), "stat".into(), "--compat".into()];
            argv.extend(line.iter().map(Into::into));
            let Some(ours) = crate::cli::Cli::stat_compat_flags(&argv) else {
                assert!(others.contains(&line.as_slice()), "{line:?} left to clap");
                continue;
            };
            fast += 1;
            let clap = crate::cli::Cli::command()
                .try_get_matches_from(&argv)
                .and_then(|m| crate::cli::Cli::from_arg_matches(&m))
                .unwrap_or_else(|e| panic!("{line:?}: clap refuses what the fast path takes: {e}"));
            assert_eq!(format!("{ours:?}"), format!("{clap:?}"), "{line:?}");
        }
        assert_eq!(fast, 326);
        let other =
            |a: &[&str]| crate::cli::Cli::stat_compat_flags(&a.iter().map(Into::into).collect::<Vec<_>>()).is_none();
        assert!(other(&["numakit", "stat"]));
        assert!(other(&["numakit", "stat", "-m", "--compat"]));
        assert!(other(&["numakit", "--sysroot", "/x", "stat", "--compat"]));
    }

    #[test]
    fn clap_errors_in_one_line() {
        let t = "error: the following required arguments were not provided:\n  <PID>\n  --to <NODES>\n\nUsage: numakit migrate <PID>\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(t), "the following required arguments were not provided: <PID> --to <NODES> (see --help)");
        let t = "error: unexpected argument '-X' found\n\n  tip: to pass '-X' as a value, use '-- -X'\n\nUsage: x\n";
        assert_eq!(one_line(t), "unexpected argument '-X' found (to pass '-X' as a value, use '-- -X'; see --help)");
    }
}
