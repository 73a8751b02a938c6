//! What `numakit report` writes to close the loop (docs/policy.md, the
//! loop): guards (`--guard-file`) and a proposed policy
//! (`--propose-policy`). The decisions are the report crate's
//! (`numakit_report::guards`, `numakit_report::propose`); here the files
//! are read and written, through the library's one writer of each.

use std::path::{Path, PathBuf};

use numakit::experiment::guard::{self, Guard};
use numakit_report::guards::findings;
use numakit_report::propose::{self, Provenance};
use numakit_report::Report;

use crate::Failure;

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Adds a guard for each finding not guarded yet; the lines to print.
/// Without a finding the file is left as it is.
pub fn guards(file: &Path, r: &Report, margin: f64) -> Result<Vec<String>, Failure> {
    let found = findings(r, margin);
    let shown = numakit::text::path(file);
    if found.is_empty() {
        return Ok(vec![format!("guards: no arm worse than its control beyond doubt: {shown} left as it is")]);
    }
    let now = now();
    guard::update(file, |gs| {
        let mut said = Vec::new();
        for f in found {
            if gs.stopping(&f.class, f.experiment.as_deref(), &f.arm).is_some() {
                said.push(format!("guard kept: class={} arm={} (already guarded in {shown})", f.class, f.arm));
                continue;
            }
            said.push(format!("guard written to {shown}: class={} arm={}  # {}", f.class, f.arm, f.why));
            gs.0.push(Guard { class: f.class, experiment: None, arm: f.arm, since: Some(now), why: Some(f.why) });
        }
        said
    })
    .map_err(Failure::system)
}

/// Checks `--propose-policy OUT [--policy CURRENT]` before anything is
/// read: OUT is not CURRENT; CURRENT reads and parses. Returns CURRENT's
/// text.
pub fn current(out: &Path, current: Option<&Path>) -> Result<Option<String>, Failure> {
    let Some(cur) = current else { return Ok(None) };
    if numakit::files::same_file(out, cur) {
        return Err(Failure::usage(format!(
            "--propose-policy {}: the same file as --policy: the policy in force is never written; give another path",
            numakit::text::path(out)
        )));
    }
    let text = numakit::files::read_named_text(cur).map_err(|e| Failure::usage(format!("--policy: {e}")))?;
    numakit::experiment::policy::parse::parse(&text)
        .map_err(|e| Failure::usage(format!("--policy {}:{e}", numakit::text::path(cur))))?;
    Ok(Some(text))
}

/// Writes the proposed policy to OUT and its diff against CURRENT to
/// OUT.diff; the lines to print.
pub fn propose(
    out: &Path,
    current: Option<(&Path, &str)>,
    r: &Report,
    sources: &[numakit_report::input::Source],
) -> Result<Vec<String>, Failure> {
    let p = Provenance { digest: propose::digest(sources), now: now() };
    let text = propose::propose(r, current.map(|c| c.1), &p).map_err(Failure::system)?;
    let shown = numakit::text::path(out);
    numakit::files::write_atomic(out, text.as_bytes())
        .map_err(|e| Failure::system(format!("--propose-policy {shown}: cannot write it: {e}")))?;
    let mut said = Vec::new();
    for c in propose::calls(r) {
        let what = match &c.call {
            propose::Call::Gain { arm, control } => format!("decide {arm} ({arm} faster than {control})"),
            propose::Call::Loss { arm, control } => format!("decide {control} ({arm} slower than {control})"),
            propose::Call::Undecided => "undecided: kept as it is".to_string(),
        };
        said.push(format!("proposed: class {}: {what}", numakit::text::one_line(&c.class, 80)));
    }
    said.push(format!("policy proposed in {shown} ({}); check it with `numakit policy check`", p.digest));
    if let Some((cur, old)) = current {
        let mut diff_path = PathBuf::from(out.as_os_str().to_owned());
        diff_path.as_mut_os_string().push(".diff");
        let d = propose::diff(&numakit::text::path(cur), old, &shown, &text);
        numakit::files::write_atomic(&diff_path, d.as_bytes()).map_err(|e| {
            Failure::system(format!("--propose-policy: cannot write {}: {e}", numakit::text::path(&diff_path)))
        })?;
        said.push(format!("its changes against {} in {}", numakit::text::path(cur), numakit::text::path(&diff_path)));
    }
    Ok(said)
}
