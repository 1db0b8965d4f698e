//! The CCM's RBAC is least privilege, proven by an API server that enforces it: the CCM runs
//! as the ServiceAccount of `deploy/config.yml` through a walk that makes it use every kind
//! of request it has (Node initialization, shutdown taint, Node deletion, a load balancer
//! created, refused twice and deleted, repeated Events, its leader-election Lease, the
//! `plan` preview run with its identity), and
//! the (verb, resource) pairs it used must be exactly those its ClusterRole and Role grant:
//! no request refused, no rule unused. Denials read as a real API server's, through kube-rs
//! and kubectl; the manifest applies with kubectl.

use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, ListParams};
use scenarios::apiserver::RequestRecord;
use scenarios::testbed::Cluster;
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed, CcmBedConfig, FAST_FLAGS, InProcessCcm, LIMIT, web_service};
use scenarios::testbed::{manifest_documents, service_account, user_name};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `(verb, group, resource[/subresource])`
type Access = (String, String, String);

/// Every (verb, group, resource) the manifest's ClusterRoles and Roles grant the CCM.
fn granted() -> BTreeSet<Access> {
    let mut out = BTreeSet::new();
    for doc in manifest_documents().expect("manifest") {
        if !matches!(doc["kind"].as_str(), Some("ClusterRole" | "Role")) {
            continue;
        }
        for rule in doc["rules"].as_array().into_iter().flatten() {
            let list = |k: &str| -> Vec<String> {
                rule[k]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            };
            for verb in list("verbs") {
                for group in list("apiGroups") {
                    for resource in list("resources") {
                        assert!(
                            verb != "*" && group != "*" && !resource.contains('*'),
                            "a wildcard in the CCM's RBAC: {rule}"
                        );
                        out.insert((verb.clone(), group.clone(), resource));
                    }
                }
            }
        }
    }
    out
}

fn access(r: &RequestRecord) -> Access {
    let resource = match &r.subresource {
        Some(s) => format!("{}/{s}", r.resource),
        None => r.resource.clone(),
    };
    (r.verb.clone(), r.group.clone(), resource)
}

/// The walk's flags: the fast ones of the other suites, with leader election on (a fast
/// retry period: the Lease is read and renewed within the walk).
fn flags() -> Vec<&'static str> {
    let mut flags: Vec<&str> = FAST_FLAGS
        .iter()
        .map(|f| match *f {
            "--leader-elect=false" => "--leader-elect=true",
            other => other,
        })
        .collect();
    flags.extend(["--leader-elect-retry-period", "200ms"]);
    flags
}

async fn server_action(bed: &CcmBed, node: &str, action: &str) {
    let server = bed.tb.server_of(node).expect("server");
    bed.cloud(
        reqwest::Method::POST,
        &format!("/servers/{server}/{action}"),
        None,
    )
    .await;
}

async fn wait_node(bed: &CcmBed, what: &str, check: impl Fn(Option<&Node>) -> bool) {
    let nodes: Api<Node> = Api::all(bed.tb.cluster.client());
    eventually(what, LIMIT, || async {
        let list = nodes.list(&ListParams::default()).await.ok()?;
        let all = list.items;
        let found = |name: &str| {
            all.iter()
                .find(|n| n.metadata.name.as_deref() == Some(name))
        };
        check(found("node-2")).then_some(())
    })
    .await;
}

fn tainted(node: Option<&Node>) -> bool {
    node.and_then(|n| n.spec.as_ref())
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| {
            t.iter()
                .any(|t| t.key == ccm::node::metadata::SHUTDOWN_TAINT)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_ccm_uses_exactly_the_rules_its_service_account_is_granted() {
    let mut config = CcmBedConfig::default();
    config.testbed.nodes = 3;
    config.ccm_flags = None;
    let mut bed = CcmBed::start(config).await;
    let api = bed
        .tb
        .cluster
        .api_server()
        .expect("embedded")
        .shared()
        .clone();
    bed.ccm = Some(InProcessCcm::start(
        &bed.kubeconfig,
        &bed.tb.cloud,
        5,
        &flags(),
    ));

    // A load balancer: Nodes initialized, Service annotated and its status written, Events.
    bed.create_converged(&web_service(json!({})), 2).await;
    // A refused change, made twice: one Event, then its series updated.
    let flavor = "k8s.cloudscale.ch/loadbalancer-flavor";
    for _ in 0..2 {
        bed.annotate("web", flavor, "lb-large").await;
        bed.wait_event("web", "ChangeRefused", flavor).await;
        bed.patch("web", &json!({"metadata": {"annotations": {flavor: null}}}))
            .await;
        bed.converge("the refusal withdrawn", 2, |_| true).await;
    }
    eventually("a repeated refusal", LIMIT, || async {
        let events = bed.events("web").await;
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("ChangeRefused") && e.series.is_some())
            .then_some(())
    })
    .await;
    // A stopped server taints its Node, a started one untaints it, a deleted one loses it.
    server_action(&bed, "node-2", "stop").await;
    wait_node(&bed, "node-2 tainted", tainted).await;
    server_action(&bed, "node-2", "start").await;
    wait_node(&bed, "node-2 untainted", |n| n.is_some() && !tainted(n)).await;
    bed.delete_server_of("node-2").await;
    wait_node(&bed, "node-2 deleted", |n| n.is_none()).await;
    // The `plan` preview, as the manual runs it in the CCM's pod (its ServiceAccount).
    let plan = tokio::process::Command::new(env!("CARGO_BIN_EXE_ccm-under-test"))
        .args([
            "plan",
            "--service",
            "default/web",
            "--cluster-name",
            "test-cluster",
        ])
        .arg("--kubeconfig")
        .arg(&bed.kubeconfig)
        .env("CLOUDSCALE_ACCESS_TOKEN", bed.tb.cloud.token())
        .env("CLOUDSCALE_API_URL", bed.tb.cloud.base_url())
        .output()
        .await
        .expect("plan runs");
    assert!(
        plan.status.success(),
        "plan: {}",
        String::from_utf8_lossy(&plan.stderr)
    );
    // The load balancer deleted with the Service.
    bed.services()
        .delete("web", &Default::default())
        .await
        .expect("delete web");
    bed.wait_service_gone("web").await;

    let user = user_name().expect("user");
    let records: Vec<RequestRecord> = api
        .requests()
        .into_iter()
        .filter(|r| r.user == user)
        .collect();
    let refused: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.code == 401 || r.code == 403)
        .collect();
    assert!(refused.is_empty(), "requests refused: {refused:#?}");

    let mut counts: BTreeMap<Access, usize> = BTreeMap::new();
    for r in &records {
        *counts.entry(access(r)).or_default() += 1;
    }
    println!("requests of {user}:");
    for ((verb, group, resource), n) in &counts {
        println!("  {verb:6} {group:>14} {resource:<16} {n}");
    }
    let used: BTreeSet<Access> = counts.keys().cloned().collect();
    let granted = granted();
    let unused: Vec<&Access> = granted.difference(&used).collect();
    assert!(
        unused.is_empty(),
        "rules the CCM never used (remove them from deploy/kustomize/rbac.yaml): {unused:?}"
    );
    let ungranted: Vec<&Access> = used.difference(&granted).collect();
    assert!(ungranted.is_empty(), "used without a rule: {ungranted:?}");
}

#[tokio::test]
async fn denials_are_403_statuses_naming_user_verb_and_resource() {
    let cluster = Cluster::embedded().await.expect("cluster");
    let secrets: Api<Secret> = Api::namespaced(cluster.ccm_client(), "kube-system");
    let err = secrets
        .list(&ListParams::default())
        .await
        .expect_err("the CCM may not read Secrets");
    let user = user_name().expect("user");
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 403);
            assert_eq!(status.reason, "Forbidden");
            assert_eq!(
                status.message,
                format!(
                    "secrets is forbidden: User \"{user}\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\""
                )
            );
        }
        other => panic!("not an API error: {other}"),
    }
    // Its own Nodes may be read, and the admin may read Secrets.
    let nodes: Api<Node> = Api::all(cluster.ccm_client());
    nodes.list(&ListParams::default()).await.expect("nodes");
    let admin: Api<Secret> = Api::namespaced(cluster.client(), "kube-system");
    admin.list(&ListParams::default()).await.expect("admin");

    // No token: anonymous, which may ask the version and nothing else; a wrong token: 401.
    let server = cluster.api_server().expect("embedded");
    let url = server.url();
    assert!(url.starts_with("https://"), "{url}");
    let http = server.http_client();
    let get = |path: &str, token: Option<&str>| {
        let mut req = http.get(format!("{url}{path}"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    let version = get("/version", None).await.expect("version");
    assert_eq!(version.status(), 200);
    let nodes = get("/api/v1/nodes", None).await.expect("nodes");
    assert_eq!(nodes.status(), 403);
    let body: Value = nodes.json().await.expect("status body");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["details"]["kind"], "nodes");
    let wrong = get("/api/v1/nodes", Some("not-a-token"))
        .await
        .expect("401");
    assert_eq!(wrong.status(), 401);
    let body: Value = wrong.json().await.expect("status body");
    assert_eq!(body["reason"], "Unauthorized");
}

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_the_manifest_and_reports_a_denial_as_forbidden() {
    let cluster = Cluster::embedded().await.expect("cluster");
    let dir = std::env::temp_dir().join(format!("rbac-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let admin = dir.join("admin");
    let ccm = dir.join("ccm");
    std::fs::write(&admin, cluster.kubeconfig_yaml()).expect("admin kubeconfig");
    std::fs::write(&ccm, cluster.ccm_kubeconfig_yaml()).expect("ccm kubeconfig");
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/config.yml");

    let check = |out: std::process::Output, what: &str| -> String {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{what} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let run = |args: &[&str]| tokio::task::block_in_place(|| kubectl(&admin, args));
    check(
        run(&["apply", "--dry-run=server", "-f", manifest]),
        "apply --dry-run=server",
    );
    let out = run(&["apply", "-f", manifest]);
    let warnings = String::from_utf8_lossy(&out.stderr).into_owned();
    let applied = check(out, "apply");
    assert!(
        applied.contains("deployment.apps/cloudscale-cloud-controller-manager created"),
        "{applied}"
    );
    // The identity the cluster installed beforehand reads as kubectl's own apply: unchanged,
    // with no warning about a missing last-applied-configuration annotation.
    assert!(!warnings.contains("Warning"), "{warnings}");
    for object in [
        "serviceaccount/cloudscale-cloud-controller-manager",
        "clusterrole.rbac.authorization.k8s.io/system:cloudscale-cloud-controller-manager",
        "rolebinding.rbac.authorization.k8s.io/cloudscale-cloud-controller-manager:leader-election",
    ] {
        assert!(
            applied.contains(&format!("{object} unchanged")),
            "{object}:\n{applied}"
        );
    }
    // Applied twice: nothing changes.
    let again = check(run(&["apply", "-f", manifest]), "apply again");
    assert!(
        again
            .lines()
            .all(|l| l.ends_with(" unchanged") || l.ends_with(" configured")),
        "{again}"
    );
    let got = check(
        run(&[
            "-n",
            "kube-system",
            "get",
            "deployment,serviceaccount,role,rolebinding",
            "-o",
            "name",
        ]),
        "get",
    );
    for name in [
        "deployment.apps/cloudscale-cloud-controller-manager",
        "serviceaccount/cloudscale-cloud-controller-manager",
        "role.rbac.authorization.k8s.io/cloudscale-cloud-controller-manager:leader-election",
    ] {
        assert!(got.contains(name), "{name} missing from:\n{got}");
    }

    let denied =
        tokio::task::block_in_place(|| kubectl(&ccm, &["-n", "kube-system", "get", "secrets"]));
    assert!(!denied.status.success());
    let stderr = String::from_utf8_lossy(&denied.stderr);
    let user = user_name().expect("user");
    assert!(
        stderr.contains(&format!(
            "Error from server (Forbidden): secrets is forbidden: User \"{user}\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\""
        )),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kubectl create token` (TokenRequest) gives a token that acts as the ServiceAccount: what
/// deploy/README.md's "Run it outside the cluster" uses to run the CCM with its own RBAC.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_token_acts_as_the_service_account() {
    let cluster = Cluster::embedded().await.expect("cluster");
    let dir = std::env::temp_dir().join(format!("rbac-token-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let admin = dir.join("admin");
    std::fs::write(&admin, cluster.kubeconfig_yaml()).expect("admin kubeconfig");
    let (ns, name) = service_account().expect("service account");
    let run = |args: &[&str]| tokio::task::block_in_place(|| kubectl(&admin, args));

    let out = run(&["-n", &ns, "create", "token", &name, "--duration", "2h"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !token.is_empty() && !token.contains(char::is_whitespace),
        "{token:?}"
    );
    // The token authenticates as the ServiceAccount: what its RBAC allows works, the rest is
    // refused in its name.
    let allowed = run(&["--token", &token, "get", "nodes"]);
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    let denied = run(&["--token", &token, "-n", &ns, "get", "secrets"]);
    assert!(!denied.status.success());
    let user = user_name().expect("user");
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(
        stderr.contains(&format!("User \"{user}\" cannot list")),
        "{stderr}"
    );
    // An unknown ServiceAccount and a lifetime under kube-apiserver's minimum are refused.
    let missing = run(&["-n", &ns, "create", "token", "nobody"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        !missing.status.success() && stderr.contains("serviceaccounts \"nobody\" not found"),
        "{stderr}"
    );
    let short = run(&["-n", &ns, "create", "token", &name, "--duration", "1m"]);
    let stderr = String::from_utf8_lossy(&short.stderr);
    assert!(
        !short.status.success() && stderr.contains("spec.expirationSeconds"),
        "{stderr}"
    );
    // The API answers as kube-apiserver does (kube's typed request).
    let api: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(cluster.client(), &ns);
    let answer = api
        .create_token_request(
            &name,
            &Default::default(),
            &k8s_openapi::api::authentication::v1::TokenRequest {
                spec: Some(k8s_openapi::api::authentication::v1::TokenRequestSpec {
                    audiences: Some(vec!["ccm".into()]),
                    expiration_seconds: Some(1200),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .expect("token request");
    let spec = answer.spec.expect("spec");
    assert_eq!(spec.audiences, Some(vec!["ccm".to_string()]));
    assert_eq!(spec.expiration_seconds, Some(1200));
    let status = answer.status.expect("status");
    assert_eq!(status.token.as_deref(), Some(token.as_str()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `deploy/README.md`'s RBAC table lists exactly what the manifest grants.
#[test]
fn the_operator_manual_lists_exactly_the_granted_rules() {
    let manual =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/README.md"))
            .expect("deploy/README.md");
    let section = manual
        .split("\n## RBAC\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("an RBAC section");
    let mut listed = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | kind | API group | resources | verbs | what for |
        let [_, _, group, resources, verbs, ..] = cells[..] else {
            continue;
        };
        let Some(resource) = resources.split('`').nth(1) else {
            continue;
        };
        let group = match group.trim_matches('`') {
            "core" => "",
            g => g,
        };
        for verb in verbs.split(',').map(str::trim) {
            listed.insert((verb.to_string(), group.to_string(), resource.to_string()));
        }
    }
    assert_eq!(listed, granted(), "deploy/README.md's RBAC table");
}
