//! Measuring a burst of Services on the simulation: when each Service's ingress was set,
//! when its load balancer first served (fakecloud's data-plane oracle), and when every
//! load balancer had all its members. Shared by `benches/ccm_scale.rs` and the burst tests.

use super::{World, WorldConfig};
use crate::testbed::TestbedError;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// The client address the oracle is asked for (any address outside the cluster).
const CLIENT: [u8; 4] = [10, 1, 2, 3];

/// A world of `nodes` nodes whose one CCM runs with the production defaults (resync 5
/// minutes, rate limit 20/s, two Services at once; no leader election) and `flags` on top,
/// started and warmed up 30 s: where a burst is measured.
pub async fn production_world(
    seed: u64,
    nodes: usize,
    flags: &[&str],
) -> Result<World, TestbedError> {
    let mut config = WorldConfig::new(seed);
    config.nodes = nodes;
    config.ccm_flags = ["--leader-elect=false", "--cluster-name", "sim"]
        .iter()
        .chain(flags)
        .map(|f| f.to_string())
        .collect();
    let mut world = World::start(config).await?;
    world.revive();
    world.run_for(Duration::from_secs(30)).await;
    Ok(world)
}

/// A burst under way: the Services `prefix0..prefix{count}` created at `started`.
pub struct Burst {
    pub prefix: String,
    pub count: usize,
    pub started: Instant,
    /// The cloud's clock when the burst began (the oracle's time line).
    pub cloud_start: fakecloud::clock::Time,
    /// When each Service's ingress was first seen, since `started`.
    pub ingress: BTreeMap<String, Duration>,
}

impl Burst {
    /// Creates `count` Services of one HTTP port named `prefix0...` at once.
    pub async fn create(world: &World, prefix: &str, count: usize) -> Burst {
        let burst = Burst {
            prefix: prefix.to_string(),
            count,
            started: Instant::now(),
            cloud_start: world.cloud.now(),
            ingress: BTreeMap::new(),
        };
        let api: Api<Service> = Api::namespaced(world.kube.clone(), "default");
        for i in 0..count {
            let manifest =
                super::schedule::service(&format!("{prefix}{i}"), &super::schedule::Shape::http());
            let svc: Service = serde_json::from_value(manifest).expect("a Service manifest");
            api.create(&PostParams::default(), &svc)
                .await
                .expect("the API server takes the Service");
        }
        burst
    }

    /// Notes the Services that have an ingress now; whether all have.
    pub fn watch(&mut self, world: &World) -> bool {
        for svc in self.services(world) {
            if crate::testbed::has_ingress(&svc)
                && let Some(name) = svc.metadata.name.clone()
            {
                self.ingress
                    .entry(name)
                    .or_insert_with(|| self.started.elapsed());
            }
        }
        self.ingress.len() == self.count
    }

    /// Runs the world in steps of a second until every Service has its ingress (at most
    /// `limit` from the start of the burst); whether they all have.
    pub async fn run_until_published(&mut self, world: &World, limit: Duration) -> bool {
        while self.started.elapsed() < limit {
            if self.watch(world) {
                return true;
            }
            world.run_for(Duration::from_secs(1)).await;
        }
        self.watch(world)
    }

    /// The Services of the burst as the API server has them.
    pub fn services(&self, world: &World) -> Vec<Service> {
        world
            .api
            .objects::<Service>("services")
            .into_iter()
            .filter(|s| {
                s.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(&self.prefix))
            })
            .collect()
    }

    /// The seconds from the start until each Service's ingress was seen.
    pub fn ingress_times(&self) -> Vec<f64> {
        self.ingress.values().map(Duration::as_secs_f64).collect()
    }

    /// For each Service whose load balancer served, the seconds from the start of the burst
    /// until every port of every address of it answered new connections, by name.
    pub fn first_served(&self, world: &World) -> BTreeMap<String, f64> {
        let now = world.cloud.now();
        let propagation = world.cloud.config().timing.floating_ip_propagation_s;
        let mut out = BTreeMap::new();
        for svc in self.services(world) {
            let (Some(name), Some(lb)) = (svc.metadata.name.clone(), lb_of(&svc)) else {
                continue;
            };
            let served = world.cloud.read("", |ctx| {
                let entries = fakecloud::dataplane::availability(
                    ctx.st.dataplane(),
                    lb,
                    self.cloud_start,
                    now,
                    std::net::IpAddr::from(CLIENT),
                    propagation,
                )?;
                if entries.is_empty() {
                    return None;
                }
                // Served from the end of the outage the burst began with (the load
                // balancer not there yet, then without listener or member up).
                let mut at = self.cloud_start;
                for e in &entries {
                    let mut up = self.cloud_start;
                    for d in &e.down {
                        if d.from > up {
                            break;
                        }
                        up = up.max(d.to);
                    }
                    at = at.max(up);
                }
                Some(at)
            });
            if let Some(at) = served.filter(|at| *at < now) {
                out.insert(
                    name,
                    (at - self.cloud_start).num_milliseconds() as f64 / 1000.0,
                );
            }
        }
        out
    }
}

/// The load balancer the CCM recorded on a Service.
fn lb_of(svc: &Service) -> Option<uuid::Uuid> {
    svc.metadata
        .annotations
        .as_ref()?
        .get("k8s.cloudscale.ch/loadbalancer-uuid")?
        .parse()
        .ok()
}

/// Whether the account holds `members` pool members and no load balancer is `changing`:
/// every member of a burst is in place and applied.
pub fn complete(world: &World, members: usize) -> bool {
    world.cloud.read("", |ctx| {
        ctx.st.members().values().count() == members
            && ctx
                .st
                .load_balancers()
                .values()
                .all(|lb| lb.status(ctx.now) != "changing")
    })
}

/// `first / median / p90 / last` of `times` (seconds), as a phrase.
pub fn spread(times: &[f64]) -> String {
    let Some([first, median, p90, last]) = quantiles(times) else {
        return "(none)".into();
    };
    format!("first {first:.0} s, median {median:.0} s, p90 {p90:.0} s, last {last:.0} s")
}

/// The first, median, 90th percentile and last of `times` (nearest rank).
pub fn quantiles(times: &[f64]) -> Option<[f64; 4]> {
    if times.is_empty() {
        return None;
    }
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    let at = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
    Some([at(0.0), at(0.5), at(0.9), at(1.0)])
}
