//! The service controller end to end: a whole CCM in-process against the testbed
//! (embedded API server, simulated kubelets, fakecloud with its clock at 100×).

use ccm::service::reconcile::controller::{FINALIZER, TAG_CLUSTER, TAG_SERVICE_UID};
use k8s_openapi::api::core::v1::Service;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, LIMIT, ingress, web_service as web};
use serde_json::{Value, json};

fn ingress_ips(svc: &Service) -> Vec<(String, Option<String>)> {
    ingress(svc)
        .iter()
        .map(|e| {
            (
                e["ip"].as_str().unwrap_or_default().to_string(),
                e["ipMode"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancer_service_gets_its_load_balancer_status_and_cleanup() {
    let bed = Bed::start_default().await;
    let svc = bed
        .services()
        .create(&PostParams::default(), &web(json!({})))
        .await
        .expect("create");
    let uid = svc.metadata.uid.clone().expect("uid");

    let ready = eventually("ingress", LIMIT, || async {
        let s = bed.services().get("web").await.ok()?;
        (ingress_ips(&s).len() == 2).then_some(s)
    })
    .await;
    // Two public VIPs, IPv4 first, ipMode Proxy by default.
    let ips = ingress_ips(&ready);
    assert!(ips[0].0.parse::<std::net::Ipv4Addr>().is_ok(), "{ips:?}");
    assert!(ips.iter().all(|(_, mode)| mode.as_deref() == Some("Proxy")));
    assert!(
        ready
            .metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .contains(&FINALIZER.to_string())
    );
    let ann = ready.metadata.annotations.clone().unwrap_or_default();
    let lb_uuid = ann
        .get("k8s.cloudscale.ch/loadbalancer-uuid")
        .cloned()
        .expect("uuid annotation");
    assert_eq!(
        ann.get("k8s.cloudscale.ch/loadbalancer-zone")
            .map(String::as_str),
        Some("rma1")
    );

    // The load balancer in fakecloud, tagged with the cluster and the Service UID.
    let lbs = bed.cloud_list("/load-balancers").await;
    assert_eq!(lbs.len(), 1);
    assert_eq!(lbs[0]["uuid"], lb_uuid.as_str());
    assert_eq!(lbs[0]["name"], format!("k8s-service-{uid}").as_str());
    assert_eq!(lbs[0]["tags"][TAG_CLUSTER], "test-cluster");
    assert_eq!(lbs[0]["tags"][TAG_SERVICE_UID], uid.as_str());
    // The ingress comes once each port has a member up; the other nodes join after.
    bed.quiet().await;
    let s = bed.snap().await;
    assert_eq!(s.pool_names(), ["tcp/http", "tcp/https"]);
    assert_eq!(s.member_counts(), [3, 3], "one member per node");
    assert_eq!(s.listener_names(), ["tcp/443", "tcp/80"]);
    assert_eq!(s.monitors.len(), 2);

    // Deletion removes the load balancer first, then the finalizer.
    bed.services()
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    bed.wait_service_gone("web").await;
    assert!(bed.cloud_list("/load-balancers").await.is_empty());
    assert!(bed.cloud_list("/load-balancers/pools").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_renumber_patches_the_listener_and_a_refused_flavor_change_changes_nothing() {
    let bed = Bed::start_default().await;
    bed.create(&web(json!({}))).await;
    let ready = bed.wait_ingress("web").await;
    assert_eq!(ingress_ips(&ready).len(), 2, "two VIPs");
    let listener_80 = bed
        .cloud_list("/load-balancers/listeners")
        .await
        .into_iter()
        .find(|l| l["protocol_port"] == 80)
        .expect("listener 80");

    let patch = json!({"spec": {"ports": [
        {"name": "http", "port": 8080, "targetPort": 8080},
        {"name": "https", "port": 443, "targetPort": 8443},
    ]}});
    // A merge patch replaces the port list (a strategic one would merge by port number).
    bed.services()
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let renumbered = eventually("listener on 8080", LIMIT, || async {
        bed.cloud_list("/load-balancers/listeners")
            .await
            .into_iter()
            .find(|l| l["protocol_port"] == 8080)
    })
    .await;
    assert_eq!(
        renumbered["uuid"], listener_80["uuid"],
        "changed in place, not recreated"
    );
    assert_eq!(renumbered["name"], "tcp/8080");
    let events = bed.events("web").await;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("PlannedChange")),
        "the change was announced"
    );

    let flavor =
        json!({"metadata": {"annotations": {"k8s.cloudscale.ch/loadbalancer-flavor": "lb-large"}}});
    bed.services()
        .patch("web", &PatchParams::default(), &Patch::Merge(&flavor))
        .await
        .expect("patch");
    let refused = bed.wait_event("web", "ChangeRefused", "").await;
    assert_eq!(refused.type_.as_deref(), Some("Warning"));
    assert!(
        refused
            .message
            .unwrap_or_default()
            .contains("loadbalancer-flavor")
    );
    let lbs = bed.cloud_list("/load-balancers").await;
    assert_eq!(lbs.len(), 1, "no second load balancer");
    assert_eq!(
        lbs[0]["flavor"]["slug"], "lb-standard",
        "the running one is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancer_deleted_out_of_band_is_restored() {
    let bed = Bed::start_default().await;
    bed.services()
        .create(&PostParams::default(), &web(json!({})))
        .await
        .expect("create");
    let first = eventually("load balancer", LIMIT, || async {
        let lbs = bed.cloud_list("/load-balancers").await;
        (lbs.len() == 1 && bed.cloud_list("/load-balancers/listeners").await.len() == 2)
            .then(|| lbs[0].clone())
    })
    .await;
    let r = bed
        .http
        .delete(format!(
            "{}/load-balancers/{}",
            bed.tb.cloud.api_url(),
            first["uuid"].as_str().unwrap_or_default()
        ))
        .bearer_auth(bed.tb.cloud.token())
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), 204);
    let again = eventually("a restored load balancer", LIMIT, || async {
        let lbs = bed.cloud_list("/load-balancers").await;
        (lbs.len() == 1
            && lbs[0]["uuid"] != first["uuid"]
            && bed.cloud_list("/load-balancers/listeners").await.len() == 2)
            .then(|| lbs[0].clone())
    })
    .await;
    assert_eq!(again["name"], first["name"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_annotation_is_reported_and_nothing_is_created() {
    let bed = Bed::start_default().await;
    let svc = web(json!({"k8s.cloudscale.ch/loadbalancer-pool-algorithm": "robin_round"}));
    bed.services()
        .create(&PostParams::default(), &svc)
        .await
        .expect("create");
    let failed = bed.wait_event("web", "SyncLoadBalancerFailed", "").await;
    let message = failed.message.unwrap_or_default();
    assert!(
        message.contains("loadbalancer-pool-algorithm") && message.contains("robin_round"),
        "{message}"
    );
    assert!(
        bed.cloud_list("/load-balancers").await.is_empty(),
        "validated before anything is created"
    );
}

/// One floating IP, two new claimants: exactly one gets it (the one created first, then by
/// name), the other is served without it and told why; neither is left without a load
/// balancer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_floating_ip_claimed_by_two_new_services_goes_to_exactly_one() {
    // Both claims exist before the CCM starts: which one it sees first must not matter.
    let mut bed = Bed::start(scenarios::testbed::CcmBedConfig {
        ccm_flags: None,
        ..Default::default()
    })
    .await;
    let (network, address) = bed.create_floating_ip().await;
    let claim = json!({"k8s.cloudscale.ch/loadbalancer-floating-ips": format!("[\"{network}\"]")});
    for name in ["a", "b"] {
        let mut svc = web(claim.clone());
        svc.metadata.name = Some(name.to_string());
        bed.services()
            .create(&PostParams::default(), &svc)
            .await
            .expect("create");
    }
    bed.ccm = Some(scenarios::testbed::InProcessCcm::start(
        &bed.kubeconfig,
        &bed.tb.cloud,
        5,
        scenarios::testbed::FAST_FLAGS,
    ));
    // Created in the same second: "default/a" comes first by name.
    let a = bed.lb_uuid_of("a").await;
    bed.wait_floating_ip_on(&address, &a).await;
    let ev = bed.wait_event("b", "FloatingIPConflict", "default/a").await;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert!(ev.message.unwrap_or_default().contains(&address));
    for name in ["a", "b"] {
        let served = bed.wait_ingress(name).await;
        assert_eq!(ingress_ips(&served).len(), 2, "{name} is served");
    }
    assert_eq!(bed.cloud_list("/load-balancers").await.len(), 2);
    assert!(
        bed.event_messages("a", "FloatingIPConflict")
            .await
            .is_empty(),
        "the one that has it is not refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_previews_a_proposed_change_without_writing() {
    let bed = Bed::start_default().await;
    bed.create(&web(json!({}))).await;
    let ready = bed.wait_ingress("web").await;
    assert_eq!(ingress_ips(&ready).len(), 2, "two VIPs");
    // Node ports of the live Service, so only the algorithm differs.
    let live = bed.services().get("web").await.expect("live");
    let ports = live.spec.and_then(|s| s.ports).expect("ports");
    let np = |i: usize| ports[i].node_port.unwrap_or_default();
    let yaml = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations:\n    k8s.cloudscale.ch/loadbalancer-pool-algorithm: least_connections\nspec:\n  type: LoadBalancer\n  ports:\n  - {{name: http, port: 80, protocol: TCP, nodePort: {}}}\n  - {{name: https, port: 443, protocol: TCP, nodePort: {}}}\n",
        np(0),
        np(1)
    );
    // The running CCM adds the other members after the ingress: only then does the
    // request log hold the preview's requests alone.
    bed.quiet().await;
    let log = format!("{}/_fake/requests", bed.tb.cloud.base_url());
    bed.http.delete(&log).send().await.expect("clear log");
    let stdout = preview_file(&bed, "web", &yaml).await;
    assert!(stdout.contains("impact listener-recreate"), "{stdout}");
    assert!(stdout.contains("create pool tcp/http"), "{stdout}");
    assert!(!stdout.contains("the file describes"), "{stdout}");
    // A file of another Service previews `--service`'s with its spec, and says so.
    let other = preview_file(&bed, "web", &yaml.replace("name: web", "name: shop")).await;
    assert!(
        other.contains(
            "the file describes Service default/shop; this is the preview of default/web"
        ),
        "{other}"
    );
    // A proposal that stops being a LoadBalancer previews the deletion of its load
    // balancer and addresses, as the reconcile's cleanup would do it.
    let uuid = bed.lb_uuid_of("web").await;
    let leaving = preview_file(
        &bed,
        "web",
        &yaml.replace("type: LoadBalancer", "type: ClusterIP"),
    )
    .await;
    assert!(leaving.contains("impact outage"), "{leaving}");
    assert!(
        leaving.contains("delete load balancer k8s-service-"),
        "{leaving}"
    );
    assert!(leaving.contains(&uuid), "{leaving}");
    for (ip, _) in ingress_ips(&ready) {
        assert!(leaving.contains(&ip), "{ip} in {leaving}");
    }
    let requests: Vec<Value> = bed
        .http
        .get(&log)
        .send()
        .await
        .expect("log")
        .json()
        .await
        .expect("json");
    assert!(!requests.is_empty(), "the preview read the cloud");
    assert!(
        requests.iter().all(|r| r["method"] == "GET"),
        "the preview wrote: {requests:?}"
    );
}

/// Runs `plan --service default/<name> -f <yaml>` against the bed; returns stdout.
async fn preview_file(bed: &Bed, name: &str, yaml: &str) -> String {
    let file = std::env::temp_dir().join(format!("proposed-{}.yaml", uuid::Uuid::new_v4()));
    std::fs::write(&file, yaml).expect("write");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_ccm-under-test"))
        .args([
            "plan",
            "--service",
            &format!("default/{name}"),
            "-f",
            &file.display().to_string(),
            "--kubeconfig",
            &bed.kubeconfig.display().to_string(),
            "--cluster-name",
            "test-cluster",
        ])
        .env("CLOUDSCALE_ACCESS_TOKEN", bed.tb.cloud.token())
        .env("CLOUDSCALE_API_URL", bed.tb.cloud.base_url())
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("plan");
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !stdout.contains("Some(") && !stdout.contains(" { "),
        "plain words only: {stdout}"
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_previews_ordinary_manifests_in_plain_words() {
    let bed = Bed::start_default().await;
    bed.create(&web(json!({}))).await;
    bed.wait_ingress("web").await;
    // A hand-written manifest: no node ports, one more port.
    let out = preview_file(
        &bed,
        "web",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: LoadBalancer\n  ports:\n  - {name: http, port: 80, targetPort: 8080}\n  - {name: https, port: 443, targetPort: 8443}\n  - {name: alt, port: 8080, targetPort: 8080}\n",
    )
    .await;
    assert!(out.contains("create pool tcp/alt"), "{out}");
    assert!(out.contains("create listener tcp/8080"), "{out}");
    assert!(
        out.contains("spec.ports[2] (alt) gets its node port from Kubernetes"),
        "{out}"
    );
    assert!(
        !out.contains("[tcp/http]") && !out.contains("[tcp/https]"),
        "the kept ports are untouched: {out}"
    );
    // A Service that does not exist yet.
    let out = preview_file(
        &bed,
        "fresh",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: fresh\nspec:\n  type: LoadBalancer\n  ports:\n  - {port: 80}\n",
    )
    .await;
    assert!(out.contains("create load balancer"), "{out}");
    assert!(out.contains("a new Service"), "{out}");
    // The PlannedChange Events speak the same words.
    bed.annotate(
        "web",
        "k8s.cloudscale.ch/loadbalancer-health-monitor-type",
        "http",
    )
    .await;
    let e = bed.wait_event("web", "PlannedChange", "").await;
    let message = e.message.unwrap_or_default();
    // One row of `kubectl describe`: the ports it touches, and where the steps are listed.
    assert!(
        message.contains("(health monitor replaced)")
            && message.contains("plan --service default/web` lists them")
            && !message.contains('\n')
            && !message.contains("Some("),
        "{message}"
    );
}
