//! `sim soak` in small: a few virtual hours of churn give samples of every kind, the same
//! for the same seed, and the verdict flags a quantity that grows with time.

use scenarios::sim::{self, SoakConfig};
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn a_short_soak_samples_everything_and_a_growing_series_is_flagged() {
    let config = SoakConfig {
        services: 4,
        nodes: 3,
        sample_every: HOUR,
        ..SoakConfig::new(3, 3 * HOUR)
    };
    let report = sim::soak(&config).expect("soak");
    let text = report.text();
    assert_eq!(report.samples.len(), 3, "{text}");
    for s in &report.samples {
        assert!(s.rss > 0, "{text}");
        assert!(s.series > 0, "the CCM exports metrics: {text}");
        assert!(s.caches.nodes_cached >= 2, "{text}");
        assert!(s.live.services >= 1 && s.live.nodes >= 3, "{text}");
        assert!(s.harness.trace_kept > 0, "{text}");
    }
    assert!(report.steps > 4, "{text}");
    assert!(text.contains("simulated s per real s"), "{text}");
    assert!(report.verdict.missing.is_none(), "{text}");

    // Same seed, same run.
    assert_eq!(sim::soak(&config).expect("soak").digest, report.digest);

    // The same samples with a metric series more every 30 virtual seconds: not flat.
    let mut growing = report.samples.clone();
    for s in &mut growing {
        s.series = report.samples[0].series + (s.at.as_secs() / 30) as usize;
    }
    let v = sim::verdict(&growing, sim::window_for(config.duration));
    assert!(!v.flat(), "{}", sim::verdict_text(&v));
    let flagged: Vec<&str> = v.checks.iter().filter(|c| !c.ok).map(|c| c.name).collect();
    assert!(flagged.contains(&"metric_series"), "{flagged:?}");
}

/// A node replaced by one of another name (as autoscaling names them) leaves nothing in
/// the CCM's per-Node maps once its Node is gone: they hold no more entries than Nodes.
#[test]
fn a_replaced_node_leaves_nothing_in_the_ccms_node_maps() {
    use scenarios::sim::{World, WorldConfig, runtime};
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let mut world = World::start(WorldConfig::new(5)).await.expect("world");
        world.revive();
        world.run_for(Duration::from_secs(120)).await;
        for (old, new) in [("node-1", "node-4"), ("node-2", "node-5")] {
            let server = world.server_of(old).expect("server");
            world
                .outside("DELETE", &format!("/v1/servers/{server}"))
                .await
                .expect("deleted");
            world.add_node(new).await.expect("added");
            world.run_for(Duration::from_secs(600)).await;
        }
        let nodes = world.api.count("nodes");
        let probe = world.ccms[0].sizes.lock().clone().expect("started");
        let sizes = probe.sizes();
        assert_eq!(nodes, 3, "the Nodes of the deleted servers are deleted");
        assert_eq!(sizes.nodes_cached, 3);
        assert!(
            sizes.node_last_sync <= nodes && sizes.node_initialized <= nodes,
            "last sync of {} Nodes, initialization of {}, with {nodes} Nodes",
            sizes.node_last_sync,
            sizes.node_initialized
        );
        assert!(
            sizes.node_initialized >= 2,
            "node-4 and node-5 were initialized"
        );
    });
}
