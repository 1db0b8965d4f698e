//! Deterministic simulation: the whole system (fakecloud, the embedded API server, simulated
//! kubelets, the kube-proxy view and CCM instances) in one process on one virtual clock,
//! driven by seeded schedules of workload and faults, checked against invariants after
//! every run. Same seed, same run: the trace and its digest repeat exactly.
//!
//! See `scenarios/README.md` ("Simulation") for how to run it and what it checks.

pub mod check;
pub mod run;
pub mod schedule;
pub mod trace;
pub mod transport;
pub mod world;

pub use trace::Trace;
pub use world::{World, WorldConfig, runtime};

/// Runs the schedules of seeds `first..first + count` on `threads` threads; the outcomes in
/// seed order (each schedule runs alone on its own runtime, so threads change nothing but
/// the wall time).
pub fn run_many(first: u64, count: u64, threads: usize, keep_trace: bool) -> Vec<run::Outcome> {
    let next = std::sync::atomic::AtomicU64::new(0);
    let results = parking_lot::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= count {
                        return;
                    }
                    let schedule = schedule::Schedule::generate(first.wrapping_add(i));
                    let outcome = run::run(&schedule, keep_trace);
                    results.lock().push((i, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, o)| o).collect()
}
