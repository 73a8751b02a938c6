//! Where record lines come from: files, folders (searched recursively for
//! `*.jsonl` and `*.jsonl.gz`) and standard input (`-`), each read as gzip
//! when it starts with gzip's magic bytes, whatever its name. Reading is a
//! stream of [`Chunk`]s of whole lines (about [`CHUNK_BYTES`] each), so
//! memory does not grow with the input; a line longer than [`MAX_LINE`]
//! is skipped and counted. Opens only regular files (and standard input),
//! never follows a symbolic link to a folder. Parses nothing.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use flate2::read::MultiGzDecoder;

/// The size of a chunk of lines handed on at once.
pub const CHUNK_BYTES: usize = 4 << 20;

/// The longest line read; longer ones are skipped and counted.
pub const MAX_LINE: usize = 1 << 20;

/// One input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A regular file.
    File(PathBuf),
    /// Something below a folder that could not be looked at (a subfolder
    /// without read permission): skipped, said where it stands among the
    /// inputs, as [`ReadStats::warnings`].
    Skipped(PathBuf, String),
}

impl Source {
    /// The input as messages name it (one line: [`numakit::text::path`]).
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "standard input".to_string(),
            Source::File(p) | Source::Skipped(p, _) => numakit::text::path(p),
        }
    }
}

/// The inputs the command line names: `-` is standard input, a folder
/// every `*.jsonl` and `*.jsonl.gz` file below it (sorted, symbolic links
/// to folders not followed), a file itself (whatever its name). An error
/// with a path given names it as given; a subfolder (or an entry) below
/// one that cannot be read is a [`Source::Skipped`] naming it, and the
/// rest is read.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<Source>, String> {
    let mut out = Vec::new();
    if paths.is_empty() {
        out.push(Source::Stdin);
    }
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Source::Stdin);
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| format!("{}: {}", p.display(), io_text(&e)))?;
        if meta.is_dir() {
            let entries = list(p).map_err(|e| format!("{}: {}", p.display(), io_text(&e)))?;
            walk(entries, &mut out);
        } else if meta.is_file() {
            out.push(Source::File(p.clone()));
        } else {
            return Err(format!("{}: not a regular file or a folder", p.display()));
        }
    }
    Ok(out)
}

/// The entries of folder `dir`, sorted.
fn list(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    Ok(entries)
}

/// The inputs among `entries` and below them; what cannot be looked at is
/// a [`Source::Skipped`], and the walk goes on.
fn walk(entries: Vec<PathBuf>, out: &mut Vec<Source>) {
    for p in entries {
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                out.push(Source::Skipped(p, io_text(&e)));
                continue;
            }
        };
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if meta.is_dir() {
            match list(&p) {
                Ok(below) => walk(below, out),
                Err(e) => out.push(Source::Skipped(p, io_text(&e))),
            }
        } else if name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") {
            // a link to a regular file is read; anything else is skipped
            if std::fs::metadata(&p).is_ok_and(|m| m.is_file()) {
                out.push(Source::File(p));
            }
        }
    }
}

/// An I/O error's text without Rust's " (os error N)".
pub fn io_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Whole lines of one input.
#[derive(Debug)]
pub struct Chunk {
    /// Position in the stream of chunks (0, 1, ...).
    pub seq: u64,
    /// Index of the input in the list.
    pub source: usize,
    /// The input's line (from 0) the chunk's first line is: lines skipped
    /// as too long (and blank ones) are counted.
    pub first_line: u64,
    /// Lines, each ending in `\n` (the input's last line may not).
    pub data: Vec<u8>,
    /// Lines skipped because they were longer than [`MAX_LINE`].
    pub too_long: u64,
}

/// Chunk buffers handed back by the parsers, so that reading does not map
/// and fault in fresh memory for every 4 MiB.
#[derive(Debug, Default)]
pub struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    /// Buffers kept at most.
    const KEEP: usize = 16;

    /// An empty buffer of a chunk's capacity.
    pub fn take(&self) -> Vec<u8> {
        let reused = self.0.lock().ok().and_then(|mut v| v.pop());
        reused.unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES + (64 << 10)))
    }

    /// Hands `buf` back for reuse.
    pub fn give(&self, mut buf: Vec<u8>) {
        buf.clear();
        if let Ok(mut v) = self.0.lock() {
            if v.len() < Self::KEEP {
                v.push(buf);
            }
        }
    }
}

/// What reading found besides lines.
#[derive(Debug, Default, Clone)]
pub struct ReadStats {
    /// Bytes read (after decompression).
    pub bytes: u64,
    /// Inputs read as gzip.
    pub gzip_inputs: u64,
    /// Problems with one input each (unreadable, truncated gzip), one line
    /// each; reading went on with the next input.
    pub warnings: Vec<String>,
}

/// Reads `sources` in order and hands each chunk to `sink`; stops early
/// when `sink` returns false. Buffers come from `pool`.
pub fn read_all(sources: &[Source], pool: &Pool, mut sink: impl FnMut(Chunk) -> bool) -> ReadStats {
    let mut stats = ReadStats::default();
    let mut seq = 0;
    for (i, src) in sources.iter().enumerate() {
        let opened: io::Result<Box<dyn Read>> = match src {
            Source::Stdin => Ok(Box::new(io::stdin())),
            Source::File(p) => File::open(p).map(|f| Box::new(f) as Box<dyn Read>),
            Source::Skipped(_, why) => {
                stats.warnings.push(format!("{}: {why} (skipped)", src.name()));
                continue;
            }
        };
        let raw = match opened {
            Ok(r) => r,
            Err(e) => {
                stats.warnings.push(format!("{}: {}", src.name(), io_text(&e)));
                continue;
            }
        };
        let mut buffered = BufReader::with_capacity(1 << 16, raw);
        let gz = matches!(buffered.fill_buf(), Ok(b) if b.starts_with(&[0x1f, 0x8b]));
        let reader: Box<dyn Read> = if gz {
            stats.gzip_inputs += 1;
            Box::new(MultiGzDecoder::new(buffered))
        } else {
            Box::new(buffered)
        };
        let (ok, err) = split(reader, i, pool, &mut seq, &mut stats.bytes, &mut sink);
        if let Some(e) = err {
            let what = if gz { "gzip input" } else { "input" };
            stats.warnings.push(format!("{}: {what} ends early: {}", src.name(), io_text(&e)));
        }
        if !ok {
            break;
        }
    }
    stats
}

/// Splits one input into chunks of whole lines. Returns whether to go on,
/// and the error that ended the input early.
fn split(
    mut r: impl Read,
    source: usize,
    pool: &Pool,
    seq: &mut u64,
    bytes: &mut u64,
    sink: &mut impl FnMut(Chunk) -> bool,
) -> (bool, Option<io::Error>) {
    let mut buf = pool.take();
    let mut skipping = false; // inside a line longer than MAX_LINE
    let mut too_long = 0;
    let mut line_no: u64 = 0; // the line the buffer's first byte is in
    let mut error = None;
    loop {
        // fill the buffer up to CHUNK_BYTES (read_to_end on a File writes
        // into the spare capacity without zeroing it first)
        let start = buf.len();
        let want = CHUNK_BYTES.saturating_sub(start).max(1) as u64;
        let eof = loop {
            match (&mut r).take(want).read_to_end(&mut buf) {
                Ok(_) => break buf.len() - start < want as usize,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break true;
                }
            }
        };
        *bytes += (buf.len() - start) as u64;
        if skipping {
            match buf.iter().position(|&b| b == b'\n') {
                Some(p) => {
                    buf.drain(..=p);
                    skipping = false;
                }
                None => {
                    buf.clear();
                    if eof {
                        break;
                    }
                    continue;
                }
            }
        }
        let cut = if eof { Some(buf.len()) } else { buf.iter().rposition(|&b| b == b'\n').map(|p| p + 1) };
        match cut {
            Some(c) if c > 0 => {
                let mut next = pool.take();
                next.extend_from_slice(&buf[c..]);
                buf.truncate(c);
                let data = std::mem::replace(&mut buf, next);
                let first_line = line_no;
                line_no += data.iter().filter(|&&b| b == b'\n').count() as u64;
                let chunk = Chunk { seq: *seq, source, first_line, data, too_long: std::mem::take(&mut too_long) };
                *seq += 1;
                if !sink(chunk) {
                    return (false, error);
                }
            }
            _ => {
                if buf.len() >= MAX_LINE {
                    // a full buffer without a newline: one line too long
                    too_long += 1;
                    line_no += 1;
                    skipping = true;
                    buf.clear();
                }
            }
        }
        if eof {
            break;
        }
    }
    pool.give(buf);
    if too_long > 0 {
        let chunk = Chunk { seq: *seq, source, first_line: line_no, data: Vec::new(), too_long };
        *seq += 1;
        if !sink(chunk) {
            return (false, error);
        }
    }
    (true, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks_of(input: &[u8]) -> (Vec<u8>, u64, usize) {
        let mut seq = 0;
        let mut bytes = 0;
        let mut all = Vec::new();
        let mut too_long = 0;
        let mut n = 0;
        let pool = Pool::default();
        let (ok, err) = split(input, 0, &pool, &mut seq, &mut bytes, &mut |c: Chunk| {
            assert!(c.data.is_empty() || c.data.ends_with(b"\n") || c.data.ends_with(b"newline"));
            all.extend_from_slice(&c.data);
            too_long += c.too_long;
            n += 1;
            true
        });
        assert!(ok && err.is_none());
        assert_eq!(bytes as usize, input.len());
        (all, too_long, n)
    }

    #[test]
    fn chunks_hold_whole_lines_and_overlong_lines_are_skipped() {
        let mut input = Vec::new();
        for i in 0..200_000 {
            input.extend_from_slice(format!("{{\"line\":{i}}}\n").as_bytes());
        }
        input.extend_from_slice(b"last without newline");
        let (all, too_long, n) = chunks_of(&input);
        assert_eq!((all.as_slice(), too_long), (input.as_slice(), 0));
        assert!(n >= 1);
        // a line of 9 MiB (over two chunks) between two short ones; lines
        // between MAX_LINE and a chunk are passed on and counted by the parser
        let mut input = b"a\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 9 << 20));
        input.extend_from_slice(b"\nb\n");
        let (all, too_long, _) = chunks_of(&input);
        assert!(all == b"a\nb\n" && too_long == 1, "{} bytes, {too_long} too long", all.len());
    }
}
