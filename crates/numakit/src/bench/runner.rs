//! Measuring: the [`Probe`] trait (one measurement of one CPU node ×
//! memory node pair) and [`LiveProbe`], which runs the kernels and the
//! pointer chase on this machine with threads pinned to the CPU node's
//! CPUs and buffers bound to the memory node.
//!
//! Probes return raw times; turning them into GB/s, medians and matrices
//! is the caller's job ([`super::results`]), so that arithmetic is tested
//! exactly with a stand-in probe.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use rand::{rngs::StdRng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::chase::{self, Pattern, LINE};
use super::kernels::{self, Kernel};
use super::BenchError;
use crate::act::{current_cpu_and_node, set_affinity, NodeBuffer, PageStatus, Pid};
use crate::sets::{CpuSet, NodeSet};

/// A CPU node and a memory node, with the CPUs of the CPU node that may be
/// used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// Node whose CPUs run the threads.
    pub cpu_node: u32,
    /// Node the memory is bound to.
    pub mem_node: u32,
    /// The CPU node's usable CPUs.
    pub cpus: CpuSet,
}

/// How to run the bandwidth kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandwidthParams {
    /// Bytes per array (three arrays).
    pub array_bytes: u64,
    /// Threads (`None`: one per usable CPU of the node).
    pub threads: Option<usize>,
    /// Measured repetitions (one more runs first, unmeasured, as STREAM's
    /// first iteration).
    pub reps: usize,
    /// Kernels, run in this order in every repetition.
    pub kernels: Vec<Kernel>,
    /// Ask for transparent huge pages (`MADV_HUGEPAGE`).
    pub huge_pages: bool,
}

/// What one bandwidth measurement gives.
#[derive(Debug, Clone, PartialEq)]
pub struct RawBandwidth {
    /// Threads used.
    pub threads: usize,
    /// Elements per array.
    pub elements: u64,
    /// Per kernel, the seconds of each measured repetition.
    pub times: Vec<(Kernel, Vec<f64>)>,
    /// CPUs the worker threads were seen on (`getcpu`).
    pub cpus_seen: CpuSet,
    /// Share of the arrays' pages on the memory node (`None` when the
    /// kernel would not say).
    pub pages_on_node_pct: Option<f64>,
}

/// How to run a latency measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyParams {
    /// Measured repetitions.
    pub reps: usize,
    /// About how long each repetition chases.
    pub time_per_rep: Duration,
    /// Cycle order.
    pub pattern: Pattern,
    /// Ask for transparent huge pages.
    pub huge_pages: bool,
    /// Seed of the random cycle.
    pub seed: u64,
}

/// What one latency measurement gives.
#[derive(Debug, Clone, PartialEq)]
pub struct RawLatency {
    /// The CPU that chased.
    pub cpu: u32,
    /// Nanoseconds per load, one per repetition.
    pub ns: Vec<f64>,
    /// CPUs the thread was seen on.
    pub cpus_seen: CpuSet,
    /// Share of the buffer's pages on the memory node.
    pub pages_on_node_pct: Option<f64>,
}

/// How to run the loaded-latency curve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedParams {
    /// Bytes of the chased buffer.
    pub size_bytes: u64,
    /// Bytes of each load generator's buffer.
    pub generator_bytes: u64,
    /// Load generators (`None`: every other usable CPU of the node).
    pub generators: Option<usize>,
    /// Delay-loop lengths between blocks, one point each; `None` is the
    /// idle point (no generator running).
    pub delays: Vec<Option<u64>>,
    /// About how long the chase runs per point.
    pub time_per_point: Duration,
    /// Cycle order.
    pub pattern: Pattern,
    /// Ask for transparent huge pages.
    pub huge_pages: bool,
    /// Seed of the random cycle.
    pub seed: u64,
}

/// One point of the loaded-latency curve.
#[derive(Debug, Clone, PartialEq)]
pub struct RawLoadedPoint {
    /// The delay (`None`: idle).
    pub delay: Option<u64>,
    /// Generators running.
    pub generators: usize,
    /// Bytes the generators read while the chase ran.
    pub bytes: u64,
    /// How long the chase ran, seconds.
    pub seconds: f64,
    /// Nanoseconds per load.
    pub ns: f64,
}

/// What the loaded-latency measurement gives.
#[derive(Debug, Clone, PartialEq)]
pub struct RawLoaded {
    /// The CPU that chased.
    pub latency_cpu: u32,
    /// The generators' CPUs.
    pub generator_cpus: CpuSet,
    /// The points, in the order of the delays.
    pub points: Vec<RawLoadedPoint>,
    /// CPUs all threads were seen on.
    pub cpus_seen: CpuSet,
    /// Share of the buffers' pages on the memory node.
    pub pages_on_node_pct: Option<f64>,
}

/// One measurement of one pair.
pub trait Probe {
    /// STREAM kernels with threads on `pair.cpus` and arrays on
    /// `pair.mem_node`.
    fn bandwidth(&mut self, pair: &Pair, params: &BandwidthParams) -> Result<RawBandwidth, BenchError>;
    /// The pointer chase over `size_bytes` on `pair.mem_node` from the
    /// first of `pair.cpus`.
    fn latency(&mut self, pair: &Pair, size_bytes: u64, params: &LatencyParams) -> Result<RawLatency, BenchError>;
    /// Latency on the first CPU while the others read memory.
    fn loaded(&mut self, pair: &Pair, params: &LoadedParams) -> Result<RawLoaded, BenchError>;
}

/// The real thing, on this machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveProbe;

fn buffer(bytes: u64, node: u32, huge: bool) -> Result<NodeBuffer, BenchError> {
    let len = usize::try_from(bytes).map_err(|_| BenchError::Usage(format!("{bytes} bytes do not fit in memory")))?;
    let buf = NodeBuffer::bind(len, &std::iter::once(node).collect::<NodeSet>())
        .map_err(|e| BenchError::System(format!("cannot allocate {bytes} bytes on node {node}: {e}")))?;
    if huge {
        // SAFETY: the range is exactly the buffer's own mapping (rounded
        // to pages as mmap did); madvise only changes how the kernel backs
        // it.
        let r = unsafe {
            libc::madvise(
                buf.as_ptr() as *mut libc::c_void,
                buf.page_count() * NodeBuffer::page_size(),
                libc::MADV_HUGEPAGE,
            )
        };
        if r != 0 {
            return Err(BenchError::System(format!(
                "madvise(MADV_HUGEPAGE): {} (is transparent_hugepage disabled?)",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(buf)
}

/// The buffer as `n` 8-byte values of type `T` (`f64` or `u64`).
fn words<T: Copy>(buf: &mut NodeBuffer, n: usize) -> &mut [T] {
    assert!(std::mem::size_of::<T>() == 8 && n * 8 <= buf.len(), "buffer too small");
    // SAFETY: the mapping is page aligned (so aligned for 8-byte values),
    // holds at least `n * 8` bytes, every bit pattern (zero-filled or
    // written) is a valid f64/u64, and `&mut buf` makes the view exclusive
    // for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<T>(), n) }
}

/// Share of the pages of `bufs` that are on `node`.
fn pages_on_node_pct(bufs: &[&NodeBuffer], node: u32) -> Option<f64> {
    let (mut on, mut all) = (0usize, 0usize);
    for b in bufs {
        let st = b.page_status().ok()?;
        all += st.len();
        on += st.iter().filter(|s| **s == PageStatus::Node(node)).count();
    }
    (all > 0).then(|| on as f64 / all as f64 * 100.0)
}

fn pin(cpu: u32) -> Result<(), BenchError> {
    set_affinity(Pid::SELF, &std::iter::once(cpu).collect::<CpuSet>())
        .map_err(|e| BenchError::System(format!("cannot pin a thread to CPU {cpu}: {e}")))
}

fn seen_cpu(set: &Mutex<CpuSet>) {
    if let Ok((cpu, _)) = current_cpu_and_node() {
        if let Ok(mut s) = set.lock() {
            s.insert(cpu);
        }
    }
}

fn take_set(set: Mutex<CpuSet>) -> CpuSet {
    set.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The CPUs threads are pinned to: `count` of `cpus`, round robin.
fn thread_cpus(cpus: &CpuSet, count: usize) -> Vec<u32> {
    let list = cpus.to_vec();
    (0..count).filter_map(|i| list.get(i % list.len().max(1)).copied()).collect()
}

type Chunk<'a> = (&'a mut [f64], &'a mut [f64], &'a mut [f64]);

impl LiveProbe {
    fn chase_buffer(
        size_bytes: u64,
        node: u32,
        pattern: Pattern,
        huge: bool,
        seed: u64,
    ) -> Result<(NodeBuffer, usize), BenchError> {
        let lines = usize::try_from(size_bytes / LINE as u64).unwrap_or(0);
        if lines < 2 {
            return Err(BenchError::Usage(format!("a latency buffer needs at least {} bytes", 2 * LINE)));
        }
        let mut buf = buffer((lines * LINE) as u64, node, huge)?;
        let order = chase::order(lines, NodeBuffer::page_size() / LINE, pattern, &mut StdRng::seed_from_u64(seed));
        let start = chase::link(buf.as_mut_slice(), &order);
        Ok((buf, start))
    }
}

impl Probe for LiveProbe {
    fn bandwidth(&mut self, pair: &Pair, p: &BandwidthParams) -> Result<RawBandwidth, BenchError> {
        if pair.cpus.is_empty() {
            return Err(BenchError::Usage(format!("node {} has no usable CPU", pair.cpu_node)));
        }
        let threads = p.threads.unwrap_or(pair.cpus.len()).max(1);
        let n = usize::try_from(p.array_bytes / 8).unwrap_or(0);
        if n < threads * 8 {
            return Err(BenchError::Usage(format!(
                "arrays of {} bytes are too small for {threads} threads",
                p.array_bytes
            )));
        }
        let bytes = (n * 8) as u64;
        let (mut ba, mut bb, mut bc) = (
            buffer(bytes, pair.mem_node, p.huge_pages)?,
            buffer(bytes, pair.mem_node, p.huge_pages)?,
            buffer(bytes, pair.mem_node, p.huge_pages)?,
        );
        let (a, b, c) = (words::<f64>(&mut ba, n), words::<f64>(&mut bb, n), words::<f64>(&mut bc, n));
        // Chunks of whole cache lines, one per thread.
        let chunk = n.div_ceil(threads).next_multiple_of(8);
        let chunks: Vec<Chunk<'_>> = a
            .chunks_mut(chunk)
            .zip(b.chunks_mut(chunk))
            .zip(c.chunks_mut(chunk))
            .map(|((a, b), c)| (a, b, c))
            .collect();
        let cpus = thread_cpus(&pair.cpus, chunks.len());
        let iterations = p.reps + 1;
        let barrier = Barrier::new(chunks.len());
        let failed = AtomicBool::new(false);
        let seen = Mutex::new(CpuSet::new());
        let outs: Vec<Result<Vec<(Instant, Instant)>, BenchError>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .into_iter()
                .zip(&cpus)
                .map(|((a, b, c), &cpu)| {
                    let (barrier, failed, seen) = (&barrier, &failed, &seen);
                    let kernels = &p.kernels;
                    s.spawn(move || {
                        let pinned = pin(cpu);
                        if pinned.is_err() {
                            failed.store(true, Ordering::SeqCst);
                        } else {
                            // First touch by the thread that uses the chunk,
                            // as STREAM does (the pages follow the bind
                            // policy either way).
                            kernels::init(a, b, c);
                        }
                        barrier.wait();
                        pinned?;
                        if failed.load(Ordering::SeqCst) {
                            return Ok(Vec::new());
                        }
                        let mut times = Vec::with_capacity(iterations * kernels.len());
                        for _ in 0..iterations {
                            seen_cpu(seen);
                            for k in kernels {
                                barrier.wait();
                                let t0 = Instant::now();
                                k.run(a, b, c);
                                times.push((t0, Instant::now()));
                            }
                        }
                        Ok(times)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(BenchError::System("a worker thread panicked".into()))))
                .collect()
        });
        let mut per_thread = Vec::with_capacity(outs.len());
        for o in outs {
            per_thread.push(o?);
        }
        if failed.load(Ordering::SeqCst) {
            return Err(BenchError::System("a worker thread could not be pinned".into()));
        }
        let (a, b, c) = (words::<f64>(&mut ba, n), words::<f64>(&mut bb, n), words::<f64>(&mut bc, n));
        kernels::validate(a, b, c, &p.kernels, iterations).map_err(|e| {
            BenchError::Validation(format!("node {} memory from node {} CPUs: {e}", pair.mem_node, pair.cpu_node))
        })?;
        let mut times: Vec<(Kernel, Vec<f64>)> = p.kernels.iter().map(|&k| (k, Vec::with_capacity(p.reps))).collect();
        for it in 1..iterations {
            for (ki, (_, out)) in times.iter_mut().enumerate() {
                let slot = it * p.kernels.len() + ki;
                let start = per_thread.iter().filter_map(|t| t.get(slot).map(|x| x.0)).min();
                let end = per_thread.iter().filter_map(|t| t.get(slot).map(|x| x.1)).max();
                if let (Some(s), Some(e)) = (start, end) {
                    out.push(e.duration_since(s).as_secs_f64());
                }
            }
        }
        Ok(RawBandwidth {
            threads: cpus.len(),
            elements: n as u64,
            times,
            cpus_seen: take_set(seen),
            pages_on_node_pct: pages_on_node_pct(&[&ba, &bb, &bc], pair.mem_node),
        })
    }

    fn latency(&mut self, pair: &Pair, size_bytes: u64, p: &LatencyParams) -> Result<RawLatency, BenchError> {
        let cpu =
            pair.cpus.first().ok_or_else(|| BenchError::Usage(format!("node {} has no usable CPU", pair.cpu_node)))?;
        let seen = Mutex::new(CpuSet::new());
        let result = std::thread::scope(|s| {
            s.spawn(|| -> Result<(Vec<f64>, Option<f64>), BenchError> {
                pin(cpu)?;
                seen_cpu(&seen);
                let (buf, start) = LiveProbe::chase_buffer(size_bytes, pair.mem_node, p.pattern, p.huge_pages, p.seed)?;
                let lines = size_bytes / LINE as u64;
                // SAFETY: `start` comes from `link` over `buf`, which lives
                // and is not written until the end of this closure.
                let ns = unsafe {
                    // Warm up: once around the cycle (at most 4 Mi loads),
                    // so cache-sized buffers are in the cache.
                    chase::chase(start, lines.min(1 << 22));
                    let loads = chase::calibrate(start, lines.clamp(1 << 12, 1 << 16), p.time_per_rep);
                    (0..p.reps.max(1)).map(|_| chase::time_chase(start, loads).0).collect()
                };
                seen_cpu(&seen);
                Ok((ns, pages_on_node_pct(&[&buf], pair.mem_node)))
            })
            .join()
            .unwrap_or_else(|_| Err(BenchError::System("the latency thread panicked".into())))
        })?;
        Ok(RawLatency { cpu, ns: result.0, cpus_seen: take_set(seen), pages_on_node_pct: result.1 })
    }

    fn loaded(&mut self, pair: &Pair, p: &LoadedParams) -> Result<RawLoaded, BenchError> {
        let list = pair.cpus.to_vec();
        let (&lat_cpu, others) =
            list.split_first().ok_or_else(|| BenchError::Usage(format!("node {} has no usable CPU", pair.cpu_node)))?;
        let gens: Vec<u32> = others.iter().copied().take(p.generators.unwrap_or(others.len())).collect();
        let gen_words = usize::try_from(p.generator_bytes / 8).unwrap_or(0).max(chase::BLOCK / 8);
        let mut gen_bufs = Vec::with_capacity(gens.len());
        for _ in &gens {
            let mut b = buffer((gen_words * 8) as u64, pair.mem_node, p.huge_pages)?;
            b.touch();
            gen_bufs.push(b);
        }
        let seen = Mutex::new(CpuSet::new());
        let (chase_buf, start) = LiveProbe::chase_buffer(p.size_bytes, pair.mem_node, p.pattern, p.huge_pages, p.seed)?;
        let lines = p.size_bytes / LINE as u64;
        let mut views: Vec<&[u64]> = Vec::with_capacity(gen_bufs.len());
        for b in gen_bufs.iter_mut() {
            let w: &[u64] = words::<u64>(b, gen_words);
            views.push(w);
        }
        let points = std::thread::scope(|s| {
            s.spawn(|| -> Result<Vec<RawLoadedPoint>, BenchError> {
                pin(lat_cpu)?;
                seen_cpu(&seen);
                // SAFETY: `start` comes from `link` over `chase_buf`, which
                // outlives this scope and is not written while it runs.
                let loads = unsafe {
                    chase::chase(start, lines.min(1 << 22));
                    chase::calibrate(start, lines.clamp(1 << 12, 1 << 16), p.time_per_point)
                };
                let mut points = Vec::with_capacity(p.delays.len());
                for &delay in &p.delays {
                    let running = match delay {
                        Some(_) => gens.len(),
                        None => 0,
                    };
                    let stop = AtomicBool::new(false);
                    let counters: Vec<AtomicU64> = (0..running).map(|_| AtomicU64::new(0)).collect();
                    let ready = Barrier::new(running + 1);
                    let point = std::thread::scope(|g| -> Result<RawLoadedPoint, BenchError> {
                        let mut handles = Vec::with_capacity(running);
                        for i in 0..running {
                            let (stop, counter, ready, seen, buf, cpu) =
                                (&stop, &counters[i], &ready, &seen, views[i], gens[i]);
                            handles.push(g.spawn(move || -> Result<(), BenchError> {
                                let pinned = pin(cpu);
                                seen_cpu(seen);
                                ready.wait();
                                pinned?;
                                chase::generate(buf, delay.unwrap_or(0), stop, counter);
                                Ok(())
                            }));
                        }
                        ready.wait();
                        if running > 0 {
                            // Let the generators reach full speed.
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        let before: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                        let t = Instant::now();
                        // SAFETY: as above.
                        let (ns, _) = unsafe { chase::time_chase(start, loads) };
                        let seconds = t.elapsed().as_secs_f64();
                        let after: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                        stop.store(true, Ordering::Relaxed);
                        for h in handles {
                            h.join().unwrap_or_else(|_| Err(BenchError::System("a load generator panicked".into())))?;
                        }
                        Ok(RawLoadedPoint { delay, generators: running, bytes: after - before, seconds, ns })
                    })?;
                    points.push(point);
                }
                Ok(points)
            })
            .join()
            .unwrap_or_else(|_| Err(BenchError::System("the latency thread panicked".into())))
        })?;
        let mut all: Vec<&NodeBuffer> = gen_bufs.iter().collect();
        all.push(&chase_buf);
        Ok(RawLoaded {
            latency_cpu: lat_cpu,
            generator_cpus: gens.iter().copied().collect(),
            points,
            cpus_seen: take_set(seen),
            pages_on_node_pct: pages_on_node_pct(&all, pair.mem_node),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::get_affinity;

    fn pair() -> Pair {
        Pair { cpu_node: 0, mem_node: 0, cpus: get_affinity(Pid::SELF).expect("affinity") }
    }

    #[test]
    fn bandwidth_runs_validates_and_stays_on_its_cpus() {
        let p = BandwidthParams {
            array_bytes: 256 * 1024,
            threads: None,
            reps: 3,
            kernels: Kernel::ALL.to_vec(),
            huge_pages: false,
        };
        let pr = pair();
        let r = LiveProbe.bandwidth(&pr, &p).expect("bandwidth");
        assert_eq!(r.times.len(), 4);
        assert!(r.times.iter().all(|(_, t)| t.len() == 3 && t.iter().all(|&x| x > 0.0)), "{r:?}");
        assert!(r.cpus_seen.is_subset(&pr.cpus) && !r.cpus_seen.is_empty());
        assert_eq!(r.pages_on_node_pct, Some(100.0));
        assert_eq!((r.threads, r.elements), (pr.cpus.len(), 32 * 1024));
        let one = BandwidthParams { threads: Some(1), kernels: vec![Kernel::Triad], ..p };
        let r = LiveProbe.bandwidth(&pr, &one).expect("one thread");
        assert_eq!((r.threads, r.cpus_seen.len()), (1, 1));
    }

    #[test]
    fn latency_runs_pinned() {
        let params = LatencyParams {
            reps: 2,
            time_per_rep: Duration::from_millis(2),
            pattern: Pattern::Page,
            huge_pages: false,
            seed: 1,
        };
        let pr = pair();
        let r = LiveProbe.latency(&pr, 64 * 1024, &params).expect("latency");
        assert_eq!(r.ns.len(), 2);
        // Loose: other tests and builds share the CPUs.
        assert!(r.ns.iter().all(|&n| n > 0.0 && n < 1e6), "{r:?}");
        assert_eq!(r.cpus_seen, std::iter::once(r.cpu).collect::<CpuSet>());
        assert_eq!(r.pages_on_node_pct, Some(100.0));
        assert!(LiveProbe.latency(&pr, 64, &params).is_err());
    }

    #[test]
    fn loaded_runs_points() {
        let params = LoadedParams {
            size_bytes: 256 * 1024,
            generator_bytes: 256 * 1024,
            generators: None,
            delays: vec![None, Some(100), Some(0)],
            time_per_point: Duration::from_millis(5),
            pattern: Pattern::Random,
            huge_pages: false,
            seed: 2,
        };
        let pr = pair();
        let r = LiveProbe.loaded(&pr, &params).expect("loaded");
        assert_eq!(r.points.len(), 3);
        assert_eq!(r.points[0].generators, 0);
        assert_eq!(r.points[0].bytes, 0);
        assert_eq!(r.generator_cpus.len(), pr.cpus.len() - 1);
        // (How much the generators read depends on what else runs here.)
        assert!(r.points[1..].iter().all(|p| p.generators == pr.cpus.len() - 1 && p.ns > 0.0), "{r:?}");
        assert!(r.cpus_seen.is_subset(&pr.cpus));
    }

    #[test]
    fn thread_cpus_round_robin() {
        let cpus: CpuSet = [2, 5].into_iter().collect();
        assert_eq!(thread_cpus(&cpus, 3), vec![2, 5, 2]);
        assert_eq!(thread_cpus(&CpuSet::new(), 2), Vec::<u32>::new());
    }
}
