//! Deterministic simulation: the whole system (fakecloud, the embedded API server, simulated
//! kubelets, the kube-proxy view and CCM instances) in one process on one virtual clock,
//! driven by seeded schedules of workload and faults, checked against invariants after
//! every run. Same seed, same run: the trace and its digest repeat exactly.
//!
//! See `scenarios/README.md` ("Simulation") for how to run it and what it checks.
//!
//! What it offers, all from here: the [`World`] and its [`runtime`]; [`Schedule`]s of
//! [`Step`]s and their [`run`] (many at once: [`run_many`]), its [`Outcome`] and [`shrink`];
//! the invariants ([`check`]); bursts of Services ([`Burst`]); the soak ([`soak`]); the
//! trace ([`Trace`], [`Fnv`]). The property-based suite is a face of its own, [`props`].

mod burst;
mod check;
mod downtime;
mod invariants;
pub mod props;
mod rng;
mod run;
mod schedule;
mod soak;
mod trace;
mod transport;
mod world;

pub use burst::{Burst, complete, production_world, quantiles, spread};
pub use check::{Context, Violation, after_create, check};
pub use run::{Outcome, keep_callsites_asking, run, shrink};
pub use schedule::{Action, Misconfig, Port, Schedule, Shape, Step, service};
pub use soak::{SoakConfig, csv, soak, verdict, verdict_text, window_for};
pub use trace::{Fnv, Request, Trace, first_difference};
pub use world::{World, WorldConfig, load_balancers_of, runtime};

/// `f` of every index in `0..count` on `threads` threads; the results in index order (each
/// run is alone on its own runtime, so threads change nothing but the wall time).
pub fn parallel<R: Send>(count: usize, threads: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = parking_lot::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= count {
                        return;
                    }
                    let r = f(i);
                    results.lock().push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The first seed of a block derived from `text` (a commit id): FNV-1a of the text, from
/// 10^10 on (the fixed seeds CI replays and the sweeps documented in `scenarios/README.md`
/// stay below), so each commit looks at schedules of its own.
pub fn seed_base(text: &str) -> u64 {
    let mut h = trace::Fnv::default();
    h.write(text.trim().as_bytes());
    10_000_000_000 + h.0 % 1_000_000_000_000
}

/// Runs the schedules of seeds `first..first + count` on `threads` threads; the outcomes in
/// seed order.
pub fn run_many(first: u64, count: u64, threads: usize, keep_trace: bool) -> Vec<run::Outcome> {
    parallel(count as usize, threads, |i| {
        let schedule = schedule::Schedule::generate(first.wrapping_add(i as u64));
        run::run(&schedule, keep_trace)
    })
}

/// Creates `count` Services of one TCP port (`PREFIX0`, `PREFIX1`, ...) in `default`.
pub async fn create_services(world: &World, prefix: &str, count: usize) -> Result<(), String> {
    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Api, PostParams};
    let api: Api<Service> = Api::namespaced(world.kube.clone(), "default");
    let shape = schedule::Shape::http();
    for i in 0..count {
        let svc: Service =
            serde_json::from_value(schedule::service(&format!("{prefix}{i}"), &shape))
                .map_err(|e| e.to_string())?;
        api.create(&PostParams::default(), &svc)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One world with `services` Services (one TCP port each) on `nodes` nodes, all created at
/// the start, run for `minutes` virtual minutes: a line with the wall time, the simulated
/// seconds per real second, the Services with an ingress and the requests made.
pub fn scale(services: usize, nodes: usize, minutes: u64) -> Result<String, String> {
    use k8s_openapi::api::core::v1::Service;
    let rt = runtime().map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    rt.block_on(async {
        let config = WorldConfig {
            nodes,
            ..WorldConfig::new(1)
        };
        let mut world = World::start(config).await.map_err(|e| e.to_string())?;
        world.revive();
        create_services(&world, "svc-", services).await?;
        world
            .run_for(std::time::Duration::from_secs(minutes * 60))
            .await;
        let with_ingress = world
            .api
            .objects::<Service>("services")
            .iter()
            .filter(|s| crate::testbed::has_ingress(s))
            .count();
        let lines = world.trace.lines();
        let count = |api: &str| {
            lines
                .iter()
                .filter(|l| trace::Request::parse(l).is_some_and(|r| r.api == api))
                .count()
        };
        let (cloud, kube) = (count("cloud"), count("kube"));
        let wall = started.elapsed().as_secs_f64();
        Ok(format!(
            "{services} Services x {nodes} nodes, {minutes} virtual min: {wall:.1} s wall, \
             {:.0} simulated s per real s, {with_ingress}/{services} with ingress, \
             {cloud} cloud and {kube} Kubernetes requests",
            (minutes * 60) as f64 / wall.max(1e-9)
        ))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_commit_names_a_block_of_its_own_beyond_the_fixed_seeds() {
        let a = super::seed_base("41ee81f0c2d6a1b5e3f09a7d4c1b2a3e4f5a6b7c");
        let b = super::seed_base("dab0125e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d");
        assert_eq!(
            a,
            super::seed_base("41ee81f0c2d6a1b5e3f09a7d4c1b2a3e4f5a6b7c\n")
        );
        assert_ne!(a, b);
        for base in [a, b] {
            assert!(
                base >= 10_000_000_000,
                "{base} is among the fixed seeds' range"
            );
        }
    }
}
