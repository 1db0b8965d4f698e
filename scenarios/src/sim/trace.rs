//! The trace of a simulated run: every cloud and Kubernetes request with its virtual time and
//! status, every workload and fault step, and at the end every operation the load balancers
//! applied and every Event. Two runs of one seed give the same lines, so the same digest.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::time::Instant;

#[derive(Debug)]
struct Inner {
    start: Instant,
    lines: Mutex<Lines>,
}

/// The lines kept, and what stands for all of them: their count and their digest, kept as
/// they come so that a trace keeping only its last lines still has the whole run's digest.
#[derive(Debug)]
struct Lines {
    kept: VecDeque<String>,
    /// Lines recorded since the start, the dropped ones included.
    total: usize,
    digest: Fnv,
    /// Keep only this many of the last lines (`None`: all).
    keep: Option<usize>,
}

/// Shared by every component of one run.
#[derive(Debug, Clone)]
pub struct Trace(Arc<Inner>);

impl Trace {
    /// A trace whose times count from now (the start of the run).
    pub fn new() -> Trace {
        Trace(Arc::new(Inner {
            start: Instant::now(),
            lines: Mutex::new(Lines {
                kept: VecDeque::new(),
                total: 0,
                digest: Fnv::default(),
                keep: None,
            }),
        }))
    }

    /// From now on keeps only the last `n` lines (and the count and digest of all). A soak
    /// of days records millions of requests (`sim/soak.rs`): kept whole, the trace alone
    /// would grow without bound and hide the growth the soak looks for.
    pub fn keep_last(&self, n: usize) {
        let mut lines = self.0.lines.lock();
        lines.keep = Some(n);
        while lines.kept.len() > n {
            lines.kept.pop_front();
        }
    }

    /// Virtual milliseconds since the start of the run.
    pub fn millis(&self) -> u128 {
        self.0.start.elapsed().as_millis()
    }

    fn push(&self, line: String) {
        let mut lines = self.0.lines.lock();
        lines.digest.write(line.as_bytes());
        lines.digest.write(b"\n");
        lines.total += 1;
        if lines.keep.is_some_and(|n| lines.kept.len() >= n) {
            lines.kept.pop_front();
        }
        lines.kept.push_back(line);
    }

    /// A cloud request and its status (`None`: no answer, the connection was lost).
    pub fn cloud(&self, actor: &str, method: &str, path: &str, status: Option<u16>) {
        let status = status.map_or_else(|| "lost".to_string(), |s| s.to_string());
        self.push(format!(
            "{} cloud {actor} {method} {path} {status}",
            self.millis()
        ));
    }

    /// A cloud request that took virtual time (an injected latency) since `sent`: the
    /// checks count it as time the faults took from the CCM.
    pub fn slow(&self, actor: &str, sent: u128) {
        let now = self.millis();
        if now > sent {
            self.push(format!("{now} slow {actor} {sent}"));
        }
    }

    /// A Kubernetes request and its status.
    pub fn kube(&self, actor: &str, method: &str, path: &str, status: u16) {
        self.push(format!(
            "{} kube {actor} {method} {path} {status}",
            self.millis()
        ));
    }

    /// A Kubernetes request that could not connect (status `refused`).
    pub fn kube_refused(&self, actor: &str, method: &str, path: &str) {
        self.push(format!(
            "{} kube {actor} {method} {path} refused",
            self.millis()
        ));
    }

    /// Anything else worth a line (a workload step, a fault, a final record).
    pub fn note(&self, what: impl std::fmt::Display) {
        self.push(format!("{} {what}", self.millis()));
    }

    /// The lines kept (all of them unless [`Trace::keep_last`]).
    pub fn lines(&self) -> Vec<String> {
        self.0.lines.lock().kept.iter().cloned().collect()
    }

    /// Runs `f` over the lines kept, in order, without copying them (the trace is locked
    /// meanwhile: `f` must not write to it).
    pub fn scan<R>(&self, f: impl FnOnce(std::collections::vec_deque::Iter<'_, String>) -> R) -> R {
        let lines = self.0.lines.lock();
        f(lines.kept.iter())
    }

    /// Lines recorded since the start (the dropped ones included): the index the next line
    /// gets.
    pub fn len(&self) -> usize {
        self.0.lines.lock().total
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many lines are kept.
    pub fn kept(&self) -> usize {
        self.0.lines.lock().kept.len()
    }

    /// FNV-1a (64 bit) over all the lines recorded, each ended by a newline: the same on
    /// every machine.
    pub fn digest(&self) -> u64 {
        self.0.lines.lock().digest.0
    }
}

impl Default for Trace {
    fn default() -> Self {
        Trace::new()
    }
}

/// A request line of the trace, read back: `MILLIS cloud|kube ACTOR METHOD PATH STATUS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    pub millis: u128,
    /// `cloud` or `kube`.
    pub api: &'a str,
    pub actor: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    /// The status code, or `lost` for a cloud request that got no answer.
    pub status: &'a str,
}

impl<'a> Request<'a> {
    /// The request a line records (`None` for steps, notes and final records).
    pub fn parse(line: &'a str) -> Option<Request<'a>> {
        let mut f = line.split(' ');
        let millis = f.next()?.parse().ok()?;
        let api = f.next().filter(|a| *a == "cloud" || *a == "kube")?;
        Some(Request {
            millis,
            api,
            actor: f.next()?,
            method: f.next()?,
            path: f.next()?,
            status: f.next()?,
        })
    }

    /// The path without its query (`?...`).
    pub fn bare_path(&self) -> &'a str {
        self.path.split('?').next().unwrap_or(self.path)
    }

    /// Made by a CCM (not the workload, a kubelet or outside hands).
    pub fn by_ccm(&self) -> bool {
        self.actor.starts_with("ccm-")
    }
}

/// FNV-1a over lines ended by newlines (what the tests compare the running digest with).
#[cfg(test)]
fn digest_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut h = Fnv::default();
    for l in lines {
        h.write(l.as_bytes());
        h.write(b"\n");
    }
    h.0
}

/// FNV-1a, 64 bit.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Where two traces part: the index and the two lines (`None` past an end).
pub fn first_difference(
    a: &[String],
    b: &[String],
) -> Option<(usize, Option<String>, Option<String>)> {
    let n = a.len().max(b.len());
    (0..n).find_map(|i| {
        let (x, y) = (a.get(i), b.get(i));
        (x != y).then(|| (i, x.cloned(), y.cloned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_keeping_its_last_lines_has_the_whole_runs_count_and_digest() {
        let rt = crate::sim::runtime().expect("runtime");
        rt.block_on(async {
            let (whole, last) = (Trace::new(), Trace::new());
            last.keep_last(2);
            for i in 0..5 {
                whole.note(format!("step {i}"));
                last.note(format!("step {i}"));
            }
            assert_eq!(
                whole.digest(),
                digest_lines(whole.lines().iter().map(String::as_str))
            );
            assert_eq!(last.digest(), whole.digest());
            assert_eq!((last.len(), last.kept()), (5, 2));
            assert_eq!(last.lines(), whole.lines()[3..]);
        });
    }
}
