//! One line that a task hands to its slurmstepd: what the task was given
//! (its CPUs and memory policy after placement), which the step's outcome
//! record needs and which only the task, after `fork` and before `exec`,
//! knows.
//!
//! A page of shared anonymous memory mapped in slurmstepd before it forks
//! the tasks: each task inherits the mapping, the first task writes its
//! line into it, and slurmstepd reads it when the step ends. No file
//! descriptor is involved (Slurm may close those in the task), and the
//! mapping goes away at `exec` in the task and with slurmstepd.

use std::sync::atomic::{AtomicU32, Ordering};

/// The page's size; a line longer than the page less its header is cut.
const PAGE: usize = 4096;
const HEADER: usize = 8;

/// The shared page.
#[derive(Debug)]
pub struct SharedLine {
    base: *mut u8,
}

// SAFETY: the page is plain shared memory; its header is only accessed as
// an AtomicU32, and the text is written once before the release store of
// its length and read only after the acquire load that sees it.
unsafe impl Send for SharedLine {}
// SAFETY: as above.
unsafe impl Sync for SharedLine {}

impl SharedLine {
    /// Maps the page (`None` if the kernel refuses).
    pub fn new() -> Option<SharedLine> {
        // SAFETY: an anonymous shared mapping of one page; no file, no
        // address hint; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then(|| SharedLine { base: p.cast() })
    }

    fn len(&self) -> &AtomicU32 {
        // SAFETY: the page is page-aligned and at least 4 bytes long, so an
        // AtomicU32 at its start is aligned and in bounds; it lives as long
        // as `self`.
        unsafe { &*(self.base as *const AtomicU32) }
    }

    /// Writes `line` (cut to what fits) if nothing was written yet; the
    /// first writer wins.
    pub fn write(&self, line: &str) {
        if self.len().load(Ordering::Acquire) != 0 {
            return;
        }
        let mut n = line.len().min(PAGE - HEADER);
        while !line.is_char_boundary(n) {
            n -= 1;
        }
        // SAFETY: `n` bytes fit after the header inside the mapping; the
        // text area is written by this process only before the length is
        // published below.
        unsafe { std::ptr::copy_nonoverlapping(line.as_ptr(), self.base.add(HEADER), n) };
        self.len().store(n as u32, Ordering::Release);
    }

    /// The line written, if any.
    pub fn read(&self) -> Option<String> {
        let n = (self.len().load(Ordering::Acquire) as usize).min(PAGE - HEADER);
        if n == 0 {
            return None;
        }
        // SAFETY: the first `n` bytes after the header were written before
        // the length was published (acquire above) and are not written again.
        let bytes = unsafe { std::slice::from_raw_parts(self.base.add(HEADER), n) };
        Some(String::from_utf8_lossy(bytes).into_owned())
    }
}

impl Drop for SharedLine {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), PAGE) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_hands_its_line_to_the_parent() {
        let page = SharedLine::new().expect("mmap");
        assert_eq!(page.read(), None);
        // SAFETY: the child only writes to the page and exits at once.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            page.write("cpus 0-1\tbind 0");
            // SAFETY: leave the child without running the test harness's code.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert_eq!(page.read().as_deref(), Some("cpus 0-1\tbind 0"));
        page.write("a second line is ignored");
        assert_eq!(page.read().as_deref(), Some("cpus 0-1\tbind 0"));
        let long = SharedLine::new().expect("mmap");
        long.write(&"é".repeat(3000));
        let got = long.read().expect("written");
        assert!(got.len() <= PAGE - HEADER && got.chars().all(|c| c == 'é'), "cut on a character boundary");
    }
}
