//! Events about managed objects: a repeat is counted on the first Event, a different message
//! is an Event of its own (kube's Recorder would only count it, hiding the new message), and
//! the API server lists them in the order they happened (and `kubectl events` shows them so).

use ccm::events::Events;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use scenarios::testbed::Cluster;

fn reference() -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        namespace: Some("default".into()),
        name: Some("web".into()),
        uid: Some("0f2b3c4d-0000-4000-8000-000000000001".into()),
        ..ObjectReference::default()
    }
}

#[tokio::test]
async fn repeats_become_a_series_and_a_new_message_a_new_event() {
    let cluster = Cluster::embedded().await.expect("cluster");
    let events = Events::new(
        cluster.ccm_client(),
        Some("ccm-test".into()),
        Default::default(),
    );
    let api: Api<Event> = Api::namespaced(cluster.client(), "default");
    let flavor = "Changing the flavor is refused (k8s.cloudscale.ch/loadbalancer-flavor)";
    let zone = "Changing the zone is refused (k8s.cloudscale.ch/loadbalancer-zone)";
    for note in [flavor, flavor, flavor, zone] {
        events
            .publish(
                &reference(),
                true,
                "ChangeRefused",
                "PlanLoadBalancer",
                note.to_string(),
            )
            .await;
    }
    let mut listed = api.list(&ListParams::default()).await.expect("list").items;
    listed.sort_by_key(|e| e.note.clone());
    let seen: Vec<(Option<String>, Option<i32>)> = listed
        .iter()
        .map(|e| (e.note.clone(), e.series.as_ref().map(|s| s.count)))
        .collect();
    assert_eq!(
        seen,
        [
            (Some(flavor.to_string()), Some(3)),
            (Some(zone.to_string()), None)
        ]
    );
    for e in &listed {
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.reason.as_deref(), Some("ChangeRefused"));
        assert_eq!(e.reporting_instance.as_deref(), Some("ccm-test"));
        assert_eq!(
            e.regarding.as_ref().and_then(|r| r.name.as_deref()),
            Some("web")
        );
    }
}

#[tokio::test]
async fn a_repeat_of_an_event_deleted_on_the_server_is_recorded_anew() {
    let cluster = Cluster::embedded().await.expect("cluster");
    let events = Events::new(cluster.ccm_client(), None, Default::default());
    let api: Api<Event> = Api::namespaced(cluster.client(), "default");
    let object = reference();
    let publish = || {
        events.publish(
            &object,
            false,
            "EnsuredLoadBalancer",
            "EnsureLoadBalancer",
            "Ensured load balancer".to_string(),
        )
    };
    publish().await;
    let first = api.list(&ListParams::default()).await.expect("list").items;
    assert_eq!(first.len(), 1);
    let name = first[0].metadata.name.clone().expect("name");
    api.delete(&name, &Default::default())
        .await
        .expect("delete");
    publish().await;
    let again = api.list(&ListParams::default()).await.expect("list").items;
    assert_eq!(again.len(), 1, "recorded anew after the first expired");
    assert_ne!(again[0].metadata.name.as_deref(), Some(name.as_str()));
    assert!(again[0].series.is_none());
}

/// `kubectl describe` shows Events in the order the API server lists them (name order): the
/// names grow with time, so that is the order they happened in, also for Events recorded
/// within one clock tick.
#[tokio::test]
async fn events_are_listed_in_the_order_they_happened() {
    let cluster = Cluster::embedded().await.expect("cluster");
    let events = Events::new(cluster.ccm_client(), None, Default::default());
    let api: Api<Event> = Api::namespaced(cluster.client(), "default");
    let notes: Vec<String> = (0..15).map(|i| format!("step {i}")).collect();
    for note in &notes {
        events
            .publish(
                &reference(),
                false,
                "EnsuringLoadBalancer",
                "EnsureLoadBalancer",
                note.clone(),
            )
            .await;
    }
    let listed: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|e| e.note)
        .collect();
    assert_eq!(listed, notes);
    // `kubectl events` sorts by time on its own: the same order.
    let dir = std::env::temp_dir().join(format!("events-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml()).expect("kubeconfig");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["events", "-n", "default", "--for", "service/web"])
            .env_remove("KUBECONFIG")
            .output()
    })
    .await
    .expect("join")
    .expect("kubectl runs");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    let shown: Vec<String> = text
        .lines()
        .filter_map(|l| {
            l.split_once("Service/web")
                .map(|(_, m)| m.trim().to_string())
        })
        .collect();
    assert_eq!(
        shown,
        notes,
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
