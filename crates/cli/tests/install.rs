//! What the package installs beside the binary, as the binary generates it:
//! a man page for every command `numakit help` lists (walked level by
//! level, as a user would), each with EXIT STATUS and FILES and clean for
//! groff; and completion scripts a shell accepts. scripts/test-package
//! checks the built .deb itself.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn nk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numakit")).args(args).output().expect("run numakit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The subcommands `numakit help PATH` lists (clap's `help` left out).
fn listed(path: &[String]) -> Vec<String> {
    let mut args = vec!["help"];
    args.extend(path.iter().map(String::as_str));
    let o = nk(&args);
    assert!(o.status.success(), "numakit {args:?}: {}", text(&o.stderr));
    let out = text(&o.stdout);
    let Some(list) = out.split_once("\nCommands:\n").map(|(_, rest)| rest) else { return Vec::new() };
    list.lines()
        .take_while(|l| !l.is_empty())
        // a command's line is indented by two; wrapped descriptions by more
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect()
}

fn walk(path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(path.clone());
    for sub in listed(path) {
        path.push(sub);
        walk(path, out);
        path.pop();
    }
}

#[test]
fn every_command_in_help_has_a_man_page_with_exit_status_and_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let man = dir.path().join("man1");
    let o = nk(&["manpages", man.to_str().expect("utf-8")]);
    assert!(o.status.success() && o.stdout.is_empty(), "{}", text(&o.stderr));

    let mut commands = Vec::new();
    walk(&mut Vec::new(), &mut commands);
    let mut want: Vec<String> = commands
        .iter()
        .map(|p| std::iter::once("numakit").chain(p.iter().map(String::as_str)).collect::<Vec<_>>().join("-") + ".1")
        .collect();
    want.sort();
    let mut have: Vec<String> = std::fs::read_dir(&man)
        .expect("man dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    have.sort();
    assert_eq!(have, want, "a page per command in `numakit help`, no more");
    for nested in ["numakit-tune-set.1", "numakit-bench-latency.1", "numakit-ctl-status.1", "numakit-completions.1"] {
        assert!(have.iter().any(|f| f == nested), "{nested}");
    }
    for f in &have {
        let roff = std::fs::read_to_string(man.join(f)).expect("read page");
        for s in ["NAME", "SYNOPSIS", "\"EXIT STATUS\"", "FILES"] {
            assert!(roff.contains(&format!("\n.SH {s}\n")), "{f}: no {s}");
        }
    }
    let run = std::fs::read_to_string(man.join("numakit-run.1")).expect("run page");
    assert!(run.contains("\\fB75\\fR") && run.contains("\\fB127\\fR"), "run: 75 and 127");

    // Every page renders without a single groff warning.
    let groff = Command::new("groff").arg("-v").output();
    if groff.is_err() {
        common::skip_or_fail("groff is not installed (scripts/install-deps installs man-db)");
        return;
    }
    for f in &have {
        let o =
            Command::new("groff").args(["-k", "-man", "-Tutf8", "-ww", "-z"]).arg(man.join(f)).output().expect("groff");
        assert!(o.status.success() && o.stderr.is_empty(), "{f}: {}", text(&o.stderr));
    }
}

fn completion(shell: &str, dir: &Path) -> std::path::PathBuf {
    let o = nk(&["completions", shell]);
    assert!(o.status.success(), "{shell}: {}", text(&o.stderr));
    assert!(!text(&o.stdout).contains("manpages"), "{shell}: the hidden subcommand is offered");
    let path = dir.join(format!("numakit.{shell}"));
    std::fs::write(&path, &o.stdout).expect("write");
    path
}

#[test]
fn bash_completion_loads_and_completes() {
    let dir = tempfile::tempdir().expect("tmp");
    let script = completion("bash", dir.path());
    let o = Command::new("bash").arg("-n").arg(&script).output().expect("bash -n");
    assert!(o.status.success(), "bash -n: {}", text(&o.stderr));
    // Sourced: it registers a function for numakit, and the function
    // completes subcommands, nested subcommands and SHELL's values.
    let probe = r#"source "$1" || exit 9
complete -p numakit
try() { COMP_WORDS=("${@:2}"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
        _numakit numakit "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; echo "$1: ${COMPREPLY[*]}"; }
try top numakit tu
try tune numakit tune s
try shells numakit completions ''
try run numakit run --membi
"#;
    let o =
        Command::new("bash").args(["--norc", "--noprofile", "-c", probe, "probe"]).arg(&script).output().expect("bash");
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("complete ") && lines[0].contains("-F _numakit") && lines[0].ends_with(" numakit"),
        "{out}"
    );
    assert_eq!(lines[1..3], ["top: tune", "tune: show set"]);
    assert!(lines[3].ends_with(" --version bash elvish fish powershell zsh"), "{}", lines[3]);
    assert_eq!(lines[4..], ["run: --membind"]);
}

#[test]
fn other_shells_accept_their_scripts() {
    let dir = tempfile::tempdir().expect("tmp");
    for (shell, check) in [("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])] {
        let script = completion(shell, dir.path());
        // zsh and fish are not test dependencies: checked where installed.
        let Ok(o) = Command::new(check[0]).arg(check[1]).arg(&script).output() else { continue };
        assert!(o.status.success(), "{shell}: {}", text(&o.stderr));
    }
    for shell in ["elvish", "powershell"] {
        completion(shell, dir.path());
    }
    let o = nk(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).starts_with("numakit: invalid value 'tcsh'") && text(&o.stderr).lines().count() == 1);
    let help = text(&nk(&["--help"]).stdout);
    assert!(help.contains("\n  completions ") && !help.contains("manpages"), "{help}");
}
