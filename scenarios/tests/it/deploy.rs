//! `deploy/`: the kustomize base renders `deploy/config.yml` byte for byte (kubectl's
//! built-in kustomize), every object parses into its Kubernetes type, and the workload runs
//! the CCM with flags the CCM accepts, hardened as `deploy/README.md` says. The Helm chart
//! (`deploy/chart`) renders the same objects with its default values, what its values say
//! otherwise, refuses what the CCM cannot run, and documents every value.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_yaml_ng::Value;
use std::collections::BTreeMap;
use std::io::Write;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn config() -> String {
    std::fs::read_to_string(format!("{ROOT}/deploy/config.yml")).expect("deploy/config.yml")
}

fn documents() -> Vec<serde_yaml_ng::Value> {
    let text = config();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde_yaml_ng::Value::deserialize(d).expect("a YAML document"))
        .collect()
}

fn of_kind<T: serde::de::DeserializeOwned>(kind: &str) -> Vec<T> {
    documents()
        .into_iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .map(|d| serde_yaml_ng::from_value(d).unwrap_or_else(|e| panic!("{kind}: {e}")))
        .collect()
}

#[test]
fn the_kustomize_base_renders_config_yml_byte_for_byte() {
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", &format!("{ROOT}/deploy/kustomize")])
        .output()
        .expect("kubectl (the CI machine has it: see README.md)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        config(),
        "deploy/config.yml is not what `kubectl kustomize deploy/kustomize` renders; \
         rerun it: kubectl kustomize deploy/kustomize > deploy/config.yml"
    );
}

#[test]
fn every_object_parses_into_its_kubernetes_type() {
    let kinds: Vec<String> = documents()
        .iter()
        .filter_map(|d| d["kind"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "Role",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
            "Deployment"
        ]
    );
    assert_eq!(of_kind::<ServiceAccount>("ServiceAccount").len(), 1);
    assert_eq!(of_kind::<Role>("Role").len(), 1);
    assert_eq!(of_kind::<ClusterRole>("ClusterRole").len(), 1);
    // Both bindings name the ServiceAccount the Deployment runs as.
    for subjects in of_kind::<RoleBinding>("RoleBinding")
        .into_iter()
        .map(|b| b.subjects.unwrap_or_default())
        .chain(
            of_kind::<ClusterRoleBinding>("ClusterRoleBinding")
                .into_iter()
                .map(|b| b.subjects.unwrap_or_default()),
        )
    {
        assert_eq!(subjects.len(), 1);
        assert_eq!(subjects[0].name, "cloudscale-cloud-controller-manager");
        assert_eq!(subjects[0].namespace.as_deref(), Some("kube-system"));
    }
}

#[test]
fn the_workload_runs_the_ccm_with_flags_it_accepts_hardened() {
    let d = of_kind::<Deployment>("Deployment").remove(0);
    let pod = d.spec.template.spec.expect("a pod spec");
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("cloudscale-cloud-controller-manager")
    );
    assert_eq!(pod.host_network, Some(true));
    let tolerated: Vec<String> = pod
        .tolerations
        .iter()
        .flatten()
        .filter_map(|t| t.key.clone())
        .collect();
    assert!(tolerated.contains(&"node.cloudprovider.kubernetes.io/uninitialized".to_string()));
    let c = &pod.containers[0];
    let mut argv = vec!["cloudscale-cloud-controller-manager".to_string()];
    argv.extend(c.args.iter().flatten().cloned());
    let opts = <ccm::options::Options as clap::Parser>::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("the CCM refuses the Deployment's args: {e}"));
    // The token file is where the Secret is mounted.
    let token = opts.token_file.expect("--token-file");
    let mount = c
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| token.starts_with(&m.mount_path))
        .expect("the token file lies in a mounted volume");
    assert_eq!(mount.read_only, Some(true));
    // Probes on the CCM's health server.
    let port = i32::from(opts.secure_port);
    assert_eq!(
        c.ports.iter().flatten().next().map(|p| p.container_port),
        Some(port)
    );
    for (probe, path) in [
        (&c.liveness_probe, "/healthz"),
        (&c.readiness_probe, "/readyz"),
    ] {
        let get = probe
            .as_ref()
            .and_then(|p| p.http_get.as_ref())
            .expect("an HTTP probe");
        assert_eq!(get.path.as_deref(), Some(path));
    }
    let sc = c.security_context.as_ref().expect("a security context");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(
        sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_string()])
    );
    let psc = pod.security_context.expect("a pod security context");
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(
        psc.seccomp_profile.map(|p| p.type_),
        Some("RuntimeDefault".to_string())
    );
    let limits = c
        .resources
        .as_ref()
        .and_then(|r| r.limits.clone())
        .unwrap_or_default();
    assert!(limits.contains_key("memory"), "a memory limit");
}

// --- The Helm chart (deploy/chart) -------------------------------------------------------
//
// No helm binary where CI runs: `ci/render_chart.py` renders the chart with Go's own
// text/template (PyPI `go_template`), and `ci/test` exports the command as CHART_RENDER
// (`<python> <ci/render_chart.py>`, split on whitespace). Without it each chart test says
// why it is skipped and passes.

const CHART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/chart");

/// The renderer's command, or `None` after saying (past the test harness's capture) why
/// the test is skipped.
fn renderer(test: &str) -> Option<Vec<String>> {
    match std::env::var("CHART_RENDER") {
        Ok(cmd) if !cmd.trim().is_empty() => {
            Some(cmd.split_whitespace().map(String::from).collect())
        }
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: CHART_RENDER is not set (ci/test sets it to \
                 `target/cli-venv/bin/python ci/render_chart.py`, with go_template==0.0.3 and \
                 PyYAML installed there)"
            );
            None
        }
    }
}

/// Renders the chart into `namespace` with `values` (YAML, merged over values.yaml):
/// the multi-document YAML, or the renderer's error output.
fn render(cmd: &[String], namespace: &str, values: &str) -> Result<String, String> {
    let mut child = std::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .args([
            CHART,
            "--name",
            "cloudscale-ccm",
            "-n",
            namespace,
            "--strict",
            "-f",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("CHART_RENDER ({}): {e}", cmd.join(" ")));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(values.as_bytes())
        .expect("values to the renderer");
    let out = child.wait_with_output().expect("the renderer's output");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("UTF-8"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn render_ok(cmd: &[String], namespace: &str, values: &str) -> Vec<Value> {
    let text = render(cmd, namespace, values)
        .unwrap_or_else(|e| panic!("the chart does not render with\n{values}\n{e}"));
    parse_stream(&text)
}

fn parse_stream(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("a YAML document"))
        .collect()
}

/// `apiVersion kind namespace/name`: what identifies an object in a cluster.
fn object_key(doc: &Value) -> String {
    assert!(doc.is_mapping(), "a document that is no object: {doc:?}");
    let field = |v: &Value| v.as_str().unwrap_or("").to_string();
    format!(
        "{} {} {}/{}",
        field(&doc["apiVersion"]),
        field(&doc["kind"]),
        field(&doc["metadata"]["namespace"]),
        field(&doc["metadata"]["name"]),
    )
}

fn keyed(docs: Vec<Value>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for doc in docs {
        let key = object_key(&doc);
        assert!(out.insert(key.clone(), doc).is_none(), "{key} twice");
    }
    out
}

fn short(v: &Value) -> String {
    serde_yaml_ng::to_string(v)
        .unwrap_or_default()
        .trim_end()
        .replace('\n', "\n      ")
}

/// Where `got` differs from `want`, one line per field (`spec.template...args[1]`).
fn diff(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Mapping(w), Value::Mapping(g)) => {
            for (k, wv) in w {
                let p = format!("{path}.{}", k.as_str().unwrap_or("?"));
                match g.get(k) {
                    Some(gv) => diff(&p, wv, gv, out),
                    None => out.push(format!(
                        "  {p}: missing in the chart (config.yml: {})",
                        short(wv)
                    )),
                }
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    let p = format!("{path}.{}", k.as_str().unwrap_or("?"));
                    out.push(format!("  {p}: only in the chart ({})", short(gv)));
                }
            }
        }
        (Value::Sequence(w), Value::Sequence(g)) => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                diff(&format!("{path}[{i}]"), wv, gv, out);
            }
            for (i, wv) in w.iter().enumerate().skip(g.len()) {
                out.push(format!(
                    "  {path}[{i}]: missing in the chart (config.yml: {})",
                    short(wv)
                ));
            }
            for (i, gv) in g.iter().enumerate().skip(w.len()) {
                out.push(format!("  {path}[{i}]: only in the chart ({})", short(gv)));
            }
        }
        _ if want != got => out.push(format!(
            "  {path}: config.yml has {}, the chart renders {}",
            short(want),
            short(got)
        )),
        _ => {}
    }
}

fn chart_of_kind<T: serde::de::DeserializeOwned>(docs: &[Value], kind: &str) -> Vec<T> {
    docs.iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .map(|d| serde_yaml_ng::from_value(d.clone()).unwrap_or_else(|e| panic!("{kind}: {e}")))
        .collect()
}

fn kinds(docs: &[Value]) -> Vec<&str> {
    docs.iter().filter_map(|d| d["kind"].as_str()).collect()
}

/// The Deployment's container args as the CCM parses them.
fn ccm_options(d: &Deployment) -> ccm::options::Options {
    let c = &d.spec.template.spec.as_ref().expect("pod spec").containers[0];
    let mut argv = vec!["cloudscale-cloud-controller-manager".to_string()];
    argv.extend(c.args.iter().flatten().cloned());
    let opts = <ccm::options::Options as clap::Parser>::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("the CCM refuses the chart's args {argv:?}: {e}"));
    opts.validate()
        .unwrap_or_else(|e| panic!("the CCM refuses the chart's args {argv:?}: {e}"));
    opts
}

#[test]
fn the_chart_with_default_values_renders_config_yml() {
    let Some(cmd) = renderer("the_chart_with_default_values_renders_config_yml") else {
        return;
    };
    let want = keyed(documents());
    let got = keyed(render_ok(&cmd, "kube-system", ""));
    let mut problems = Vec::new();
    for key in want.keys().filter(|k| !got.contains_key(*k)) {
        problems.push(format!(
            "{key}: in deploy/config.yml, not rendered by the chart"
        ));
    }
    for key in got.keys().filter(|k| !want.contains_key(*k)) {
        problems.push(format!(
            "{key}: rendered by the chart, not in deploy/config.yml"
        ));
    }
    for (key, w) in &want {
        if let Some(g) = got.get(key) {
            let mut fields = Vec::new();
            diff("", w, g, &mut fields);
            if !fields.is_empty() {
                problems.push(format!("{key}:\n{}", fields.join("\n")));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "deploy/chart with its default values (`-n kube-system`) differs from deploy/config.yml:\n{}",
        problems.join("\n")
    );
}

const CUSTOM: &str = r#"
replicas: 3
logFormat: json
apiUrl: https://api.example.test/
clusterName: prod-lpg1
image:
  tag: "0.2.0"
  pullPolicy: Always
extraArgs: ["--concurrent-service-syncs=4", "--api-rate-limit=10"]
nodeSelector:
  node-role.kubernetes.io/control-plane: null
  topology.kubernetes.io/zone: lpg1
tolerations:
  - key: node.cloudprovider.kubernetes.io/uninitialized
    operator: Exists
    effect: NoSchedule
  - key: node.kubernetes.io/unreachable
    operator: Exists
    effect: NoExecute
    tolerationSeconds: 30
resources:
  requests: {cpu: 100m, memory: 128Mi}
  limits: {cpu: 1, memory: 512Mi}
serviceMonitor:
  enabled: true
  interval: 30s
  labels: {release: kube-prometheus-stack}
"#;

#[test]
fn the_chart_with_custom_values_renders_what_they_say() {
    let Some(cmd) = renderer("the_chart_with_custom_values_renders_what_they_say") else {
        return;
    };
    let docs = render_ok(&cmd, "kube-system", CUSTOM);
    let mut sorted = kinds(&docs);
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "PodDisruptionBudget",
            "Role",
            "RoleBinding",
            "Service",
            "ServiceAccount",
            "ServiceMonitor"
        ]
    );
    let d = chart_of_kind::<Deployment>(&docs, "Deployment").remove(0);
    let spec = d.spec.clone();
    assert_eq!(spec.replicas, Some(3));
    let pod_labels = spec
        .template
        .metadata
        .clone()
        .and_then(|m| m.labels)
        .expect("pod labels");
    let pod = spec.template.spec.clone().expect("pod spec");
    let opts = ccm_options(&d);
    assert_eq!(opts.log_format, "json");
    assert_eq!(opts.cluster_name, "prod-lpg1");
    assert_eq!(opts.concurrent_service_syncs, 4);
    assert_eq!(opts.api_rate_limit, 10.0);
    assert!(opts.leader_elect, "more than one replica elects a leader");
    let c = &pod.containers[0];
    assert_eq!(
        c.image.as_deref(),
        Some("cloudscale-cloud-controller-manager:0.2.0")
    );
    assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
    let env: Vec<(String, Option<String>)> = c
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    assert_eq!(
        env,
        [(
            "CLOUDSCALE_API_URL".to_string(),
            Some("https://api.example.test/".to_string())
        )]
    );
    // Overrides merge into the default node selector; null drops its key.
    assert_eq!(
        pod.node_selector,
        Some(BTreeMap::from([(
            "topology.kubernetes.io/zone".to_string(),
            "lpg1".to_string()
        )]))
    );
    let tolerations: Vec<_> = pod
        .tolerations
        .iter()
        .flatten()
        .map(|t| {
            (
                t.key.as_deref(),
                t.operator.as_deref(),
                t.value.as_deref(),
                t.effect.as_deref(),
                t.toleration_seconds,
            )
        })
        .collect();
    assert_eq!(
        tolerations,
        [
            (
                Some("node.cloudprovider.kubernetes.io/uninitialized"),
                Some("Exists"),
                None,
                Some("NoSchedule"),
                None
            ),
            (
                Some("node.kubernetes.io/unreachable"),
                Some("Exists"),
                None,
                Some("NoExecute"),
                Some(30)
            ),
        ]
    );
    let resources = c.resources.clone().expect("resources");
    let q = |pairs: &[(&str, &str)]| {
        Some(BTreeMap::from_iter(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string()))),
        ))
    };
    assert_eq!(
        resources.requests,
        q(&[("cpu", "100m"), ("memory", "128Mi")])
    );
    assert_eq!(resources.limits, q(&[("cpu", "1"), ("memory", "512Mi")]));

    // A budget that keeps the leader's standby: at least one of the pods.
    let pdb = chart_of_kind::<PodDisruptionBudget>(&docs, "PodDisruptionBudget").remove(0);
    let pdb_spec = pdb.spec.expect("PDB spec");
    assert_eq!(pdb_spec.min_available, Some(IntOrString::Int(1)));
    assert_eq!(pdb_spec.max_unavailable, None);
    let selects = |selector: &BTreeMap<String, String>| {
        selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v))
    };
    let pdb_selector = pdb_spec
        .selector
        .and_then(|s| s.match_labels)
        .expect("PDB selector");
    assert!(
        selects(&pdb_selector),
        "the PDB selects the pods: {pdb_selector:?}"
    );
    assert_eq!(pdb.metadata.namespace.as_deref(), Some("kube-system"));

    // The headless metrics Service on the CCM's health port, selecting the pods.
    let svc = chart_of_kind::<Service>(&docs, "Service").remove(0);
    let svc_spec = svc.spec.clone().expect("Service spec");
    assert_eq!(svc_spec.cluster_ip.as_deref(), Some("None"));
    let svc_selector = svc_spec.selector.clone().expect("Service selector");
    assert!(
        selects(&svc_selector),
        "the metrics Service selects the pods: {svc_selector:?}"
    );
    let ports = svc_spec.ports.clone().expect("Service ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].port, i32::from(opts.secure_port));
    assert_eq!(ports[0].name.as_deref(), Some("http"));
    assert!(
        c.ports
            .iter()
            .flatten()
            .any(|p| Some(&p.name) == Some(&Some("http".to_string()))
                && p.container_port == i32::from(opts.secure_port)),
        "the container's port `http` is the CCM's health port"
    );

    // The ServiceMonitor selects that Service and scrapes /metrics on its port.
    let sm = docs
        .iter()
        .find(|d| d["kind"].as_str() == Some("ServiceMonitor"))
        .expect("a ServiceMonitor");
    assert_eq!(sm["apiVersion"].as_str(), Some("monitoring.coreos.com/v1"));
    assert_eq!(sm["metadata"]["namespace"].as_str(), Some("kube-system"));
    assert_eq!(
        sm["metadata"]["labels"]["release"].as_str(),
        Some("kube-prometheus-stack")
    );
    let svc_labels = svc.metadata.labels.clone().unwrap_or_default();
    let wanted: BTreeMap<String, String> =
        serde_yaml_ng::from_value(sm["spec"]["selector"]["matchLabels"].clone())
            .expect("ServiceMonitor matchLabels");
    assert!(!wanted.is_empty());
    assert!(
        wanted.iter().all(|(k, v)| svc_labels.get(k) == Some(v)),
        "the ServiceMonitor selects the metrics Service: {wanted:?} vs {svc_labels:?}"
    );
    let names = sm["spec"]["namespaceSelector"]["matchNames"]
        .as_sequence()
        .expect("matchNames");
    assert!(
        names
            .iter()
            .any(|n| n.as_str() == svc.metadata.namespace.as_deref())
    );
    let endpoints = sm["spec"]["endpoints"].as_sequence().expect("endpoints");
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0]["port"].as_str(), ports[0].name.as_deref());
    assert_eq!(endpoints[0]["path"].as_str(), Some("/metrics"));
    assert_eq!(endpoints[0]["interval"].as_str(), Some("30s"));
}

#[test]
fn the_chart_refuses_what_the_ccm_cannot_run() {
    let Some(cmd) = renderer("the_chart_refuses_what_the_ccm_cannot_run") else {
        return;
    };
    // text/template has no `fail`: a refusal executes an undefined template named by the
    // message (deploy/chart/README.md), which the renderer reports with the file.
    for (values, message) in [
        (
            "replicas: 3\nleaderElection: {enabled: false}",
            "leaderElection.enabled=false needs replicas: 1",
        ),
        ("logFormat: yaml", "logFormat must be text or json"),
        ("clusterName: \"\"", "clusterName must not be empty"),
    ] {
        let err = render(&cmd, "kube-system", values)
            .map(|out| format!("rendered:\n{out}"))
            .expect_err(&format!("the chart renders `{values}`"));
        assert!(
            err.contains(message) && err.contains("templates/deployment.yaml"),
            "`{values}` is refused, naming the template and saying {message:?}: {err}"
        );
    }

    // One replica without leader election: no Lease rights, Recreate (never two at once).
    let docs = render_ok(&cmd, "kube-system", "leaderElection: {enabled: false}");
    assert!(!kinds(&docs).contains(&"Role") && !kinds(&docs).contains(&"RoleBinding"));
    assert!(!kinds(&docs).contains(&"PodDisruptionBudget"));
    let d = chart_of_kind::<Deployment>(&docs, "Deployment").remove(0);
    assert!(!ccm_options(&d).leader_elect);
    let strategy = d.spec.strategy.and_then(|s| s.type_);
    assert_eq!(strategy.as_deref(), Some("Recreate"));
}

#[test]
fn the_chart_follows_its_namespace_and_replica_count() {
    let Some(cmd) = renderer("the_chart_follows_its_namespace_and_replica_count") else {
        return;
    };
    // Another namespace: every namespaced object and both bindings' subject are there, and
    // the CCM's Lease is where its Role grants it.
    let docs = render_ok(&cmd, "cloud", "");
    for doc in &docs {
        let kind = doc["kind"].as_str().unwrap_or_default();
        if !kind.starts_with("Cluster") {
            assert_eq!(
                doc["metadata"]["namespace"].as_str(),
                Some("cloud"),
                "{kind}"
            );
        }
        for subject in doc["subjects"].as_sequence().into_iter().flatten() {
            assert_eq!(subject["namespace"].as_str(), Some("cloud"), "{kind}");
        }
    }
    let opts = ccm_options(&chart_of_kind::<Deployment>(&docs, "Deployment").remove(0));
    let role = chart_of_kind::<Role>(&docs, "Role").remove(0);
    assert_eq!(
        role.metadata.namespace.as_deref(),
        Some(opts.leader_elect_resource_namespace.as_str())
    );
    assert!(
        role.rules.iter().flatten().any(|r| r
            .resource_names
            .iter()
            .flatten()
            .any(|n| *n == opts.leader_elect_resource_name)),
        "the Role grants the CCM's Lease"
    );

    // A budget exactly when there is more than one replica (the chart compares the
    // count as text: 10 must count as more than 1).
    for (replicas, budget) in [(0, false), (1, false), (2, true), (10, true), (12, true)] {
        let docs = render_ok(&cmd, "kube-system", &format!("replicas: {replicas}"));
        assert_eq!(
            kinds(&docs).contains(&"PodDisruptionBudget"),
            budget,
            "replicas: {replicas}"
        );
        let d = chart_of_kind::<Deployment>(&docs, "Deployment").remove(0);
        assert_eq!(d.spec.replicas, Some(replicas));
    }
}

/// The README's table of values: `| `key` | type | default | description |`.
fn readme_values() -> BTreeMap<String, (String, String)> {
    let text =
        std::fs::read_to_string(format!("{CHART}/README.md")).expect("deploy/chart/README.md");
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert!(
            cells.len() >= 4,
            "a row of key, type, default, description: {line}"
        );
        let key = cells[0].trim_matches('`').to_string();
        let row = (cells[1].to_string(), cells[2].to_string());
        assert!(
            rows.insert(key.clone(), row).is_none(),
            "{key} twice in the README's table"
        );
    }
    rows
}

fn yaml_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int",
        Value::Sequence(_) => "list",
        Value::Mapping(_) => "map",
        _ => "null",
    }
}

/// values.yaml's keys as dotted paths: into maps, except those the table lists as a `map`.
fn value_paths(
    prefix: &str,
    v: &Value,
    table: &BTreeMap<String, (String, String)>,
    out: &mut BTreeMap<String, Value>,
) {
    if let Value::Mapping(m) = v
        && table.get(prefix).is_none_or(|(ty, _)| ty != "map")
    {
        for (k, child) in m {
            let k = k.as_str().expect("string keys");
            let path = if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            };
            value_paths(&path, child, table, out);
        }
        return;
    }
    out.insert(prefix.to_string(), v.clone());
}

#[test]
fn the_chart_readme_documents_every_value() {
    let values: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(format!("{CHART}/values.yaml")).expect("deploy/chart/values.yaml"),
    )
    .expect("values.yaml parses");
    let table = readme_values();
    let mut paths = BTreeMap::new();
    value_paths("", &values, &table, &mut paths);
    let undocumented: Vec<&String> = paths.keys().filter(|k| !table.contains_key(*k)).collect();
    let stale: Vec<&String> = table.keys().filter(|k| !paths.contains_key(*k)).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "deploy/chart/README.md's table of values is not values.yaml's: not in the table {undocumented:?}, \
         not in values.yaml {stale:?}"
    );
    for (key, value) in &paths {
        let (ty, default) = &table[key];
        assert_eq!(ty, yaml_type(value), "the README's type of `{key}`");
        // Scalars' defaults as YAML writes them (strings quoted), lists and maps in words.
        let shown = match value {
            Value::String(s) => Some(serde_json::to_string(s).expect("JSON")),
            Value::Bool(_) | Value::Number(_) => Some(short(value)),
            _ => None,
        };
        if let Some(shown) = shown {
            assert_eq!(
                default.trim_matches('`'),
                shown,
                "the README's default of `{key}`"
            );
        }
    }
}

/// The custom render (a PodDisruptionBudget, a metrics Service) applies with kubectl to the
/// embedded API server, which stores and validates every kind but the ServiceMonitor: that
/// is a CRD of the Prometheus operator, which a cluster without it cannot take either.
#[test]
fn the_chart_render_applies_with_kubectl() {
    let Some(cmd) = renderer("the_chart_render_applies_with_kubectl") else {
        return;
    };
    let docs: Vec<Value> = render_ok(&cmd, "kube-system", CUSTOM)
        .into_iter()
        .filter(|d| d["kind"].as_str() != Some("ServiceMonitor"))
        .collect();
    let text: String = docs
        .iter()
        .map(|d| format!("---\n{}", serde_yaml_ng::to_string(d).expect("YAML")))
        .collect();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let cluster = runtime
        .block_on(scenarios::testbed::Cluster::embedded())
        .expect("cluster");
    let dir = std::env::temp_dir().join(format!("chart-apply-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (kubeconfig, manifest) = (dir.join("kubeconfig"), dir.join("chart.yaml"));
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml()).expect("kubeconfig");
    std::fs::write(&manifest, text).expect("manifest");
    for args in [
        &["apply", "--dry-run=server", "-f"][..],
        &["apply", "-f"][..],
    ] {
        let out = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .arg(&manifest)
            .env_remove("KUBECONFIG")
            .output()
            .expect("kubectl runs");
        assert!(
            out.status.success(),
            "kubectl {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let api = cluster.api_server().expect("embedded").shared().clone();
    let pdbs: Vec<PodDisruptionBudget> = api.objects("poddisruptionbudgets");
    assert_eq!(pdbs.len(), 1, "the PodDisruptionBudget is stored");
    let deployments: Vec<Deployment> = api.objects("deployments");
    assert_eq!(deployments.first().and_then(|d| d.spec.replicas), Some(3));
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `deploy/examples/ha` (two replicas and a PodDisruptionBudget) renders, and its budget
/// is the one the chart renders with more than one replica.
#[test]
fn the_ha_overlay_adds_a_disruption_budget_the_chart_agrees_with() {
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", &format!("{ROOT}/deploy/examples/ha")])
        .output()
        .expect("kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = parse_stream(&String::from_utf8_lossy(&out.stdout));
    let d = chart_of_kind::<Deployment>(&docs, "Deployment").remove(0);
    assert_eq!(d.spec.replicas, Some(2));
    let pdb = chart_of_kind::<PodDisruptionBudget>(&docs, "PodDisruptionBudget").remove(0);
    let spec = pdb.spec.clone().expect("spec");
    assert_eq!(spec.min_available, Some(IntOrString::Int(1)));
    assert_eq!(
        spec.selector.and_then(|s| s.match_labels),
        d.spec.selector.match_labels,
        "the budget selects the Deployment's Pods"
    );
    let Some(cmd) = renderer("the_ha_overlay_adds_a_disruption_budget_the_chart_agrees_with")
    else {
        return;
    };
    let chart = render_ok(&cmd, "kube-system", "replicas: 2\n");
    let from_chart: Vec<&Value> = chart
        .iter()
        .filter(|d| d["kind"].as_str() == Some("PodDisruptionBudget"))
        .collect();
    let from_overlay: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"].as_str() == Some("PodDisruptionBudget"))
        .collect();
    assert_eq!(from_chart, from_overlay);
}
