//! `deploy/README.md`, the operator manual, held to the code and run where it can be.
//!
//! - **Commands.** Every command line of the manual's ```` ```sh ```` blocks (a line; a
//!   line ending in `\` continues on the next; `#` starts a comment) is in [`COMMANDS`],
//!   which says how it is treated here: run (and what its output must contain), started as
//!   the CCM that the rest of the manual talks to, or not run here, with the reason. A command of the manual
//!   missing from the list, or an entry no command of the manual matches, fails
//!   [`every_command_of_the_manual_is_classified`]. [`the_manual_runs`] then runs them in
//!   the manual's order against a testbed (the embedded API server, fakecloud, simulated
//!   kubelets, and a Deployment `web` of three Pods for the example Service to select) and
//!   fails when one fails: `sh -c` in a scratch copy of `deploy/`, with
//!   `HOME` holding the testbed's kubeconfig as `~/.kube/config`, the CCM binary
//!   (`ccm::cli::main`, as released) on `PATH` as `cloudscale-cloud-controller-manager`,
//!   and `CLOUDSCALE_ACCESS_TOKEN` and `CLOUDSCALE_API_URL` naming fakecloud. Where a
//!   `text` block follows the block of a command marked [`Here::RunShown`], the output
//!   must be that text.
//! - **Event reasons.** The troubleshooting table lists exactly the reasons in `ccm/src`
//!   ([`reasons_in_source`] says how they are found).
//! - **Metrics.** Every metric name in the metrics section is exported by the CCM (its
//!   `/metrics` output while the manual runs, or `ccm/src/metrics.rs`), and every label a
//!   selector there uses is one that metric has.
//! - **Links.** Relative links and anchors resolve.

use ccm::node::metadata::is_initialized;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use scenarios::testbed::CcmBedConfig;
use scenarios::testbed::Cluster;
use scenarios::testbed::Testbed;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
/// `ccm::cli::main` as a binary of this package: the released binary's code.
const CCM: &str = env!("CARGO_BIN_EXE_ccm-under-test");
/// Upper bound for one command of the manual.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// The CCM's health and metrics port, as the manual's commands use it.
const HEALTH: &str = "127.0.0.1:10258";

/// How a command of the manual is treated here.
#[derive(Debug, Clone, Copy)]
enum Here {
    /// Runs here; it must succeed and its stdout contain each of these.
    Run(&'static [&'static str]),
    /// Runs here; its stdout must be the `text` block that follows its `sh` block.
    RunShown,
    /// Starts the CCM, which runs until the test ends: the commands after it need it. The
    /// test goes on once it is ready, leads and has initialized every Node.
    Daemon,
    /// Cannot run here, and why.
    Not(&'static str),
}

/// Every command line of the manual, as written there (trailing comment removed).
const COMMANDS: &[(&str, Here)] = &[
    // Install: prepare the cluster.
    (
        "kubectl taint node <node> node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule",
        Here::Not(
            "names a Node of your cluster; the testbed's kubelets register tainted already (the CCM's initialization is what `kubectl get node node-1 -o yaml` checks)",
        ),
    ),
    // Install: the token.
    (
        "kubectl -n kube-system create secret generic cloudscale --from-literal=access-token=\"$CLOUDSCALE_ACCESS_TOKEN\"",
        Here::Run(&["secret/cloudscale created"]),
    ),
    (
        "kubectl -n kube-system create secret generic cloudscale --from-literal=access-token=\"$CLOUDSCALE_ACCESS_TOKEN\" --dry-run=client -o yaml | kubectl apply -f -",
        Here::Run(&["secret/cloudscale configured"]),
    ),
    // Install: the image.
    (
        "docker build -t registry.example.com/cloudscale-cloud-controller-manager:0.1.0 .",
        Here::Not(
            "no Docker engine here (ci/test lints the Dockerfile with hadolint; the image's binary is `ccm::cli::main`, which this test runs)",
        ),
    ),
    (
        "docker push registry.example.com/cloudscale-cloud-controller-manager:0.1.0",
        Here::Not("no Docker engine and no registry here"),
    ),
    // Install: apply.
    (
        "kubectl apply -f deploy/config.yml",
        Here::Run(&["deployment.apps/cloudscale-cloud-controller-manager created"]),
    ),
    (
        "kubectl kustomize deploy/kustomize",
        Here::Run(&[
            "kind: Deployment",
            "name: system:cloudscale-cloud-controller-manager",
        ]),
    ),
    (
        "kubectl kustomize deploy/examples/overlay",
        Here::Run(&[
            "- --cluster-name=prod-1",
            "image: registry.example.com/cloudscale-cloud-controller-manager:0.1.0",
        ]),
    ),
    (
        "kubectl apply -k deploy/examples/overlay",
        Here::Run(&["deployment.apps/cloudscale-cloud-controller-manager configured"]),
    ),
    (
        "kubectl apply -k deploy/examples/ha",
        Here::Run(&["poddisruptionbudget.policy/cloudscale-cloud-controller-manager created"]),
    ),
    (
        "helm install cloudscale-ccm deploy/chart -n kube-system --set clusterName=prod-1",
        Here::Not("no helm here; the chart has its own README and checks (deploy/chart/README.md)"),
    ),
    (
        "kubectl -n kube-system rollout status deployment/cloudscale-cloud-controller-manager",
        Here::Not(
            "the CCM's Pods select control-plane Nodes (`nodeSelector`), which the testbed has none of: they stay Pending and the rollout never completes",
        ),
    ),
    (
        "kubectl -n kube-system logs deployment/cloudscale-cloud-controller-manager",
        Here::Not("no kubelet runs containers here: there are no logs to read"),
    ),
    // Run it outside the cluster.
    (
        "cloudscale-cloud-controller-manager --kubeconfig ~/.kube/config --cluster-name prod-1 --bind-address 127.0.0.1",
        Here::Daemon,
    ),
    ("curl -s http://127.0.0.1:10258/readyz", Here::Run(&["ok"])),
    // Nodes.
    (
        "kubectl get nodes -L topology.kubernetes.io/zone -L node.kubernetes.io/instance-type",
        Here::Run(&["ZONE", "INSTANCE-TYPE", "node-1", "flex-8-4"]),
    ),
    (
        "kubectl get node node-1 -o yaml",
        Here::Run(&[
            "providerID: cloudscale://",
            "beta.kubernetes.io/instance-type: flex-8-4",
            "failure-domain.beta.kubernetes.io/region: ",
            "failure-domain.beta.kubernetes.io/zone: ",
            "node.kubernetes.io/instance-type: flex-8-4",
            "topology.kubernetes.io/region: ",
            "topology.kubernetes.io/zone: ",
            "type: InternalIP",
            "type: Hostname",
            "type: ExternalIP",
        ]),
    ),
    // A LoadBalancer Service.
    (
        "kubectl apply -f deploy/examples/service.yaml",
        Here::Run(&["service/web created"]),
    ),
    (
        "kubectl wait --for=jsonpath='{.status.loadBalancer.ingress}' service/web --timeout=5m",
        Here::Run(&["condition met"]),
    ),
    (
        "kubectl get service web",
        Here::Run(&["LoadBalancer", "80:30000/TCP,443:30001/TCP"]),
    ),
    (
        "kubectl describe service web",
        Here::Run(&[
            "k8s.cloudscale.ch/loadbalancer-uuid: ",
            "k8s.cloudscale.ch/loadbalancer-zone: ",
            "k8s.cloudscale.ch/loadbalancer-config-version: 1",
            "LoadBalancer Ingress:",
            "(Proxy)",
            "EnsuredLoadBalancer",
        ]),
    ),
    // The preview.
    (
        "sed 's/least_connections/source_ip/' deploy/examples/service.yaml > web-proposed.yaml",
        Here::Run(&[]),
    ),
    (
        "cloudscale-cloud-controller-manager plan --service default/web -f web-proposed.yaml --cluster-name prod-1",
        Here::RunShown,
    ),
    (
        "kubectl -n kube-system exec -i deployment/cloudscale-cloud-controller-manager -- cloudscale-cloud-controller-manager plan --service default/web -f /dev/stdin --token-file /etc/cloudscale/access-token --cluster-name prod-1 < web-proposed.yaml",
        Here::Not(
            "needs the CCM's pod, and no kubelet runs containers here; the same `plan` runs above",
        ),
    ),
    // Metrics.
    (
        "curl -s http://127.0.0.1:10258/metrics | grep -E '^(leader_election_master_status|cloudscale_ccm_reconcile_total|cloudscale_api_requests_total)'",
        Here::Run(&[
            "leader_election_master_status{name=\"cloud-controller-manager\"} 1",
            "cloudscale_ccm_reconcile_total{controller=\"service\",result=\"ok\"}",
            "cloudscale_api_requests_total{endpoint=",
        ]),
    ),
    // Upgrading from the Go reference.
    (
        "kubectl get services -A -o jsonpath='{range .items[?(@.spec.type==\"LoadBalancer\")]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}' | xargs -I{} cloudscale-cloud-controller-manager plan --service {} --cluster-name prod-1",
        // This CCM made the load balancer, so nothing is to adopt: adoption of the
        // reference's load balancers is scenarios/tests/it/adoption.rs.
        Here::Run(&["Service default/web: no changes."]),
    ),
    (
        "kubectl get services -A -o jsonpath='{range .items[?(@.spec.loadBalancerSourceRanges)]}{.metadata.namespace}/{.metadata.name}: {.spec.loadBalancerSourceRanges}{\"\\n\"}{end}'",
        Here::Run(&[]),
    ),
    (
        "kubectl -n kube-system delete daemonset cloudscale-cloud-controller-manager",
        Here::Not(
            "needs the Go reference CCM's DaemonSet, which is not here; the switch is scenarios/tests/it/adoption.rs",
        ),
    ),
    (
        "kubectl get events -A --field-selector type=Warning",
        Here::Run(&[]),
    ),
    // Troubleshooting.
    (
        "kubectl get events -n default --field-selector involvedObject.name=web",
        Here::Run(&["EnsuredLoadBalancer", "WaitingForLoadBalancer"]),
    ),
    (
        "kubectl get events -A --field-selector reason=SyncLoadBalancerFailed",
        Here::Run(&[]),
    ),
    // Health.
    ("curl -s http://127.0.0.1:10258/healthz", Here::Run(&["ok"])),
];

fn manual() -> String {
    std::fs::read_to_string(format!("{ROOT}/deploy/README.md")).expect("deploy/README.md")
}

/// A command line of the manual.
#[derive(Debug, Clone)]
struct ManualCommand {
    /// 1-based line of the manual where it starts.
    line: usize,
    section: String,
    text: String,
    /// The `text` block right after its `sh` block, when it is the block's last command.
    shown: Option<String>,
}

/// `line` without a trailing `# comment` (a `#` after whitespace, outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return line[..i].trim_end(),
            _ => {}
        }
        prev = c;
    }
    line.trim_end()
}

/// The command lines of the manual's `sh` blocks, in order.
fn commands(md: &str) -> Vec<ManualCommand> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out: Vec<ManualCommand> = Vec::new();
    let mut section = String::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if t.starts_with('#') {
            section = t.trim_start_matches('#').trim().to_string();
            i += 1;
            continue;
        }
        let Some(info) = t.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let info = info.trim().to_string();
        i += 1;
        let mut block: Vec<ManualCommand> = Vec::new();
        let mut pending: Option<ManualCommand> = None;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            let l = lines[i].trim();
            if info == "sh" && !(pending.is_none() && (l.is_empty() || l.starts_with('#'))) {
                let (part, more) = match l.strip_suffix('\\') {
                    Some(p) => (p.trim(), true),
                    None => (strip_comment(l), false),
                };
                let c = pending.get_or_insert_with(|| ManualCommand {
                    line: i + 1,
                    section: section.clone(),
                    text: String::new(),
                    shown: None,
                });
                if !c.text.is_empty() {
                    c.text.push(' ');
                }
                c.text.push_str(part);
                if !more {
                    block.extend(pending.take());
                }
            }
            i += 1;
        }
        i += 1;
        block.extend(pending.take());
        if info == "sh" {
            // A `text` block right after (blank lines between) is the last command's output.
            let mut j = i;
            while j < lines.len() && lines[j].trim().is_empty() {
                j += 1;
            }
            if j < lines.len() && lines[j].trim() == "```text" {
                let end = (j + 1..lines.len())
                    .find(|&k| lines[k].trim_start().starts_with("```"))
                    .unwrap_or(lines.len());
                if let Some(last) = block.last_mut() {
                    last.shown = Some(lines[j + 1..end].join("\n"));
                }
            }
        }
        out.extend(block);
    }
    out
}

fn classify(text: &str) -> Option<Here> {
    COMMANDS.iter().find(|(c, _)| *c == text).map(|(_, h)| *h)
}

#[test]
fn every_command_of_the_manual_is_classified() {
    let found = commands(&manual());
    assert!(found.len() >= 20, "few commands found: {found:#?}");
    let unlisted: Vec<String> = found
        .iter()
        .filter(|c| classify(&c.text).is_none())
        .map(|c| format!("deploy/README.md:{} ({}): {}", c.line, c.section, c.text))
        .collect();
    assert!(
        unlisted.is_empty(),
        "commands of the manual that scenarios/tests/it/manual.rs does not list (add each to COMMANDS: run it here, or say why not):\n{}",
        unlisted.join("\n")
    );
    let texts: BTreeSet<&str> = found.iter().map(|c| c.text.as_str()).collect();
    let stale: Vec<&str> = COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| !texts.contains(c))
        .collect();
    assert!(
        stale.is_empty(),
        "COMMANDS lists commands the manual no longer has:\n{}",
        stale.join("\n")
    );
    for c in &found {
        if matches!(classify(&c.text), Some(Here::RunShown)) {
            assert!(
                c.shown.is_some(),
                "deploy/README.md:{}: `{}` is checked against the text block after its sh block, and there is none",
                c.line,
                c.text
            );
        }
    }
}

#[test]
fn the_command_parser_joins_lines_and_drops_comments() {
    let md = "# A\n\n```sh\n# a comment\nkubectl apply -f x.yml   # or: -k\nfoo \\\n  --bar 'a # b'\n```\n\n```text\nout\n```\n";
    let c = commands(md);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[0].text, "kubectl apply -f x.yml");
    assert_eq!(c[0].section, "A");
    assert_eq!(c[1].text, "foo --bar 'a # b'");
    assert_eq!(c[1].shown.as_deref(), Some("out"));
}

// ---------------------------------------------------------------------------------------
// Event reasons

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The arguments of the call whose `(` is at `open`, split at top-level commas (string
/// literals and nested brackets respected).
fn call_arguments(src: &str, open: usize) -> Vec<String> {
    let mut args = vec![String::new()];
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for c in src[open..].chars() {
        if in_str {
            args.last_mut().expect("an argument").push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                args.push(String::new());
                continue;
            }
            '"' => in_str = true,
            _ => {}
        }
        args.last_mut().expect("an argument").push(c);
    }
    args.into_iter().map(|a| a.trim().to_string()).collect()
}

/// The string literals that open a tuple, `("Reason", ...)`, in `text`.
fn tuple_heads(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices('(') {
        let rest = text[i + 1..].trim_start();
        let Some(rest) = rest.strip_prefix('"') else {
            continue;
        };
        let Some(end) = rest.find('"') else { continue };
        if rest[end + 1..].trim_start().starts_with(',') {
            out.push(rest[..end].to_string());
        }
    }
    out
}

/// Every Event reason in `ccm/src`, with where it is. The scan: each `.publish(` call (the
/// Event recorder's, `ccm/src/events.rs`); its third argument is the reason: a string
/// literal, or the identifier `reason`, bound by the last `let (reason, ...)` above the
/// call in the same file, whose tuples each start with a reason literal. Any other form
/// fails the test, so a new way of passing a reason must teach this scan.
fn reasons_in_source() -> BTreeMap<String, String> {
    let mut files = Vec::new();
    rust_files(Path::new(&format!("{ROOT}/ccm/src")), &mut files);
    let mut reasons = BTreeMap::new();
    for file in files {
        let src = std::fs::read_to_string(&file).expect("source");
        let name = file
            .strip_prefix(ROOT)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (at, m) in src.match_indices(".publish(") {
            let open = at + m.len() - 1;
            let line = src[..at].lines().count();
            let args = call_arguments(&src, open);
            let reason = args.get(2).unwrap_or_else(|| {
                panic!("{name}:{line}: a publish call with fewer than 3 arguments: {args:?}")
            });
            let found: Vec<String> = if let Some(lit) =
                reason.strip_prefix('"').and_then(|r| r.strip_suffix('"'))
            {
                vec![lit.to_string()]
            } else if reason == "reason" {
                let bound = src[..at].rfind("let (reason").unwrap_or_else(|| {
                    panic!("{name}:{line}: `reason` is not bound by a `let (reason, ...)` above")
                });
                let heads = tuple_heads(&src[bound..at]);
                assert!(
                    !heads.is_empty(),
                    "{name}:{line}: the `let (reason, ...)` above binds no reason literal"
                );
                heads
            } else {
                panic!(
                    "{name}:{line}: an Event reason passed as `{reason}`: teach reasons_in_source (scenarios/tests/it/manual.rs) to find it"
                )
            };
            for r in found {
                assert!(
                    r.starts_with(|c: char| c.is_ascii_uppercase())
                        && r.chars().all(|c| c.is_ascii_alphanumeric()),
                    "{name}:{line}: \"{r}\" does not look like an Event reason"
                );
                reasons.entry(r).or_insert(format!("{name}:{line}"));
            }
        }
    }
    reasons
}

/// The lines of the manual's section `heading` (a `## ` heading), up to the next one.
fn section(md: &str, heading: &str) -> String {
    let start = md
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("deploy/README.md has no section \"## {heading}\""));
    let body = &md[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |e| e + 3);
    body[..end].to_string()
}

#[test]
fn the_troubleshooting_table_lists_exactly_the_event_reasons_of_the_source() {
    let source = reasons_in_source();
    assert!(
        source.len() >= 20 && source.contains_key("PlannedChange"),
        "the scan found few reasons: {source:?}"
    );
    let table = section(&manual(), "Troubleshooting by Event reason");
    let rows: Vec<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(r, _)| r.to_string()))
        .collect();
    let listed: BTreeSet<&str> = rows.iter().map(String::as_str).collect();
    assert_eq!(listed.len(), rows.len(), "a reason has two rows: {rows:?}");
    let missing: Vec<String> = source
        .iter()
        .filter(|(r, _)| !listed.contains(r.as_str()))
        .map(|(r, at)| format!("{r} ({at})"))
        .collect();
    let gone: Vec<&str> = listed
        .iter()
        .copied()
        .filter(|r| !source.contains_key(*r))
        .collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "deploy/README.md, \"Troubleshooting by Event reason\": reasons without a row: {missing:?}; rows for reasons the CCM no longer emits: {gone:?}"
    );
}

#[test]
fn the_reason_scan_reads_literals_and_bound_tuples() {
    let args = call_arguments(
        "x.publish(&r, true, \"NoValidNodes\", \"MapNodes\", format!(\"a, {b}\"))",
        9,
    );
    assert_eq!(args.len(), 5, "{args:?}");
    assert_eq!(args[2], "\"NoValidNodes\"");
    assert_eq!(
        tuple_heads(
            "let (reason, note) = if add {\n (\n \"NodeShutdown\",\n \"x\") } else { (\"NodeRunning\", \"y\") };"
        ),
        ["NodeShutdown", "NodeRunning"]
    );
}

// ---------------------------------------------------------------------------------------
// Metrics

/// The prefixes of the metric names the CCM exports (its own and the conventional families).
const METRIC_PREFIXES: &[&str] = &[
    "cloudscale_",
    "ccm_",
    "workqueue_",
    "rest_client_",
    "process_",
    "leader_election_",
];

/// Metric names (see [`METRIC_PREFIXES`]) in `text`, each with the label names of a
/// selector right after it (`name{label="..."}`), if any.
fn metric_mentions(text: &str) -> Vec<(String, Vec<String>)> {
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !ident(bytes[i])
            || (i > 0 && (ident(bytes[i - 1]) || bytes[i - 1].is_ascii_alphabetic()))
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && ident(bytes[i]) {
            i += 1;
        }
        let word = &text[start..i];
        if !METRIC_PREFIXES.iter().any(|p| word.starts_with(p)) {
            continue;
        }
        let mut labels = Vec::new();
        if bytes.get(i) == Some(&b'{') {
            let end = text[i..].find('}').map_or(text.len(), |e| i + e);
            let mut in_str = false;
            let mut part = String::new();
            let mut parts = Vec::new();
            for c in text[i + 1..end].chars() {
                match c {
                    '"' => in_str = !in_str,
                    ',' if !in_str => parts.push(std::mem::take(&mut part)),
                    _ => part.push(c),
                }
            }
            parts.push(part);
            labels = parts
                .iter()
                .map(|p| {
                    p.trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .filter(|l| !l.is_empty())
                .collect();
        }
        out.push((word.to_string(), labels));
    }
    out
}

/// The family a metric name belongs to (a histogram's by its `_bucket`, `_sum` and `_count`
/// series).
fn family_of(name: &str) -> Option<&'static ccm::metrics::Family> {
    let histogram = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s));
    ccm::metrics::FAMILIES.iter().find(|f| {
        f.name == name || (f.kind == ccm::metrics::Kind::Histogram && histogram == Some(f.name))
    })
}

/// Checks the metrics section against `/metrics` output and the CCM's list of families.
fn check_metric_names(exposition: &str) {
    let text = section(&manual(), "Metrics and alerts worth setting");
    let mentions = metric_mentions(&text);
    assert!(
        mentions.len() >= 7,
        "few metric names in the metrics section: {mentions:?}"
    );
    let exported = |name: &str| {
        exposition.lines().any(|l| {
            l.split(['{', ' ']).next() == Some(name) || l.starts_with(&format!("# TYPE {name} "))
        })
    };
    let mut problems = Vec::new();
    for (name, labels) in &mentions {
        let Some(family) = family_of(name) else {
            problems.push(format!(
                "{name}: not a family of ccm/src/metrics/families.rs"
            ));
            continue;
        };
        if !exported(name) && !exported(family.name) {
            problems.push(format!("{name}: no such family in /metrics"));
        }
        for label in labels {
            if !family.labels.contains(&label.as_str()) && label != "le" {
                problems.push(format!(
                    "{name}{{{label}=...}}: {name} has no label {label}"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "deploy/README.md, \"Metrics and alerts worth setting\":\n{}",
        problems.join("\n")
    );
}

#[test]
fn metric_mentions_are_found_with_their_selector_labels() {
    let m = metric_mentions(
        "`leader_election_master_status`, sum(rate(cloudscale_api_requests_total{code=~\"5..|<error>\", endpoint=\"a,b\"}[5m])), scenarios/tests/it/manual.rs, CLOUDSCALE_API_TIMEOUT",
    );
    assert_eq!(
        m,
        [
            ("leader_election_master_status".to_string(), vec![]),
            (
                "cloudscale_api_requests_total".to_string(),
                vec!["code".to_string(), "endpoint".to_string()]
            ),
        ]
    );
    assert!(family_of("cloudscale_api_request_duration_seconds_bucket").is_some());
    assert!(family_of("cloudscale_api_requests_total_bucket").is_none());
}

// ---------------------------------------------------------------------------------------
// Links

/// Link targets that may be missing for now, and why.
const PENDING: &[(&str, &str)] = &[(
    "chart/README.md",
    "written with deploy/chart/ by the Helm chart's author",
)];

/// GitHub's anchors of the headings of a Markdown text.
fn anchors(md: &str) -> BTreeSet<String> {
    let mut in_fence = false;
    let mut out = BTreeSet::new();
    for l in md.lines() {
        if l.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !l.starts_with('#') {
            continue;
        }
        let title = l.trim_start_matches('#').trim().to_lowercase();
        out.insert(
            title
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect(),
        );
    }
    out
}

#[test]
fn relative_links_and_anchors_resolve() {
    let md = manual();
    let own = anchors(&md);
    let mut problems = Vec::new();
    for (i, _) in md.match_indices("](") {
        let rest = &md[i + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = &rest[..end];
        if target.starts_with("http://") || target.starts_with("https://") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
        let text = if path.is_empty() {
            md.clone()
        } else {
            let file = Path::new(ROOT).join("deploy").join(path);
            match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(_) if file.is_dir() => String::new(),
                Err(_) => {
                    if !PENDING.iter().any(|(p, _)| *p == path) {
                        problems.push(format!("{target}: no such file"));
                    }
                    continue;
                }
            }
        };
        if !anchor.is_empty() {
            let known = if path.is_empty() {
                own.clone()
            } else {
                anchors(&text)
            };
            if !known.contains(anchor) {
                problems.push(format!("{target}: no heading with that anchor"));
            }
        }
    }
    assert!(problems.is_empty(), "deploy/README.md: {problems:#?}");
}

// ---------------------------------------------------------------------------------------
// Running the manual

/// A process of the manual that runs until the test ends; killed when dropped.
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The testbed, its runtime and the scratch directories; the testbed stops inside its
/// runtime.
struct Bed {
    tb: Option<Testbed>,
    rt: tokio::runtime::Runtime,
    dir: PathBuf,
}

impl Drop for Bed {
    fn drop(&mut self) {
        {
            let _in_runtime = self.rt.enter();
            self.tb.take();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Bed {
    fn tb(&self) -> &Testbed {
        self.tb.as_ref().expect("testbed")
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create directory");
    for e in std::fs::read_dir(from).expect("read directory").flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// Where the manual's commands run: the scratch copy of `deploy/`, `HOME` with the
/// testbed's kubeconfig, the CCM binary on `PATH`, fakecloud's token and URL.
fn shell(bed: &Bed, text: &str) -> Command {
    let work = bed.dir.join("work");
    let mut cmd = Command::new("sh");
    let path = format!(
        "{}:{}",
        bed.dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.arg("-c")
        .arg(text)
        .current_dir(&work)
        .env_clear()
        .env("PATH", path)
        .env("HOME", bed.dir.join("home"))
        .env("CLOUDSCALE_ACCESS_TOKEN", bed.tb().cloud.token())
        .env("CLOUDSCALE_API_URL", bed.tb().cloud.base_url())
        .stdin(Stdio::null());
    cmd
}

/// Runs `text` to its end (at most [`COMMAND_TIMEOUT`]): (success, stdout, stderr).
fn run(bed: &Bed, text: &str, n: usize) -> (bool, String, String) {
    let out = bed.dir.join(format!("out-{n}"));
    let err = bed.dir.join(format!("err-{n}"));
    let mut child = shell(bed, text)
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("sh");
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let ok = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
        }
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (ok, read(&out), read(&err))
}

async fn http_get(path: &str) -> Option<(u16, String)> {
    let r = reqwest::get(format!("http://{HEALTH}{path}")).await.ok()?;
    let status = r.status().as_u16();
    Some((status, r.text().await.unwrap_or_default()))
}

/// Starts the manual's CCM command and waits until it is ready, leads and has initialized
/// every Node, and the web Pods run on them.
fn start_daemon(bed: &Bed, text: &str) -> Daemon {
    assert!(
        std::net::TcpListener::bind(HEALTH).is_ok(),
        "{HEALTH} is taken by another process: the manual's CCM serves health and metrics there (its default port)"
    );
    let log = bed.dir.join("ccm.log");
    let file = std::fs::File::create(&log).expect("log");
    let child = shell(bed, &format!("exec {text}"))
        .stdout(file.try_clone().expect("log"))
        .stderr(file)
        .spawn()
        .expect("sh");
    let mut daemon = Daemon { child, log };
    let client = bed.tb().cluster.client();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = daemon.child.try_wait() {
            panic!("`{text}` exited ({status}):\n{}", daemon.log());
        }
        let ready = bed.rt.block_on(async {
            let ready = http_get("/readyz").await.is_some_and(|(s, _)| s == 200);
            let leads = http_get("/metrics").await.is_some_and(|(_, m)| {
                m.lines()
                    .any(|l| l.starts_with("leader_election_master_status{") && l.ends_with(" 1"))
            });
            let nodes: Api<Node> = Api::all(client.clone());
            let initialized = nodes
                .list(&Default::default())
                .await
                .is_ok_and(|l| !l.items.is_empty() && l.items.iter().all(is_initialized));
            // The web Pods schedule once the Nodes are initialized.
            let web = Api::<Deployment>::namespaced(client.clone(), "default")
                .get("web")
                .await
                .ok()
                .and_then(|d| d.status?.available_replicas);
            ready && leads && initialized && web == Some(3)
        });
        if ready {
            return daemon;
        }
        assert!(
            Instant::now() < deadline,
            "`{text}`: not ready, leading and done with the Nodes after 30 s:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start_bed() -> Bed {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tb = rt.block_on(async {
        let cluster = Cluster::embedded().await.expect("embedded cluster");
        let tb = Testbed::start(cluster, CcmBedConfig::default().testbed)
            .await
            .expect("testbed");
        // The app `deploy/examples/service.yaml` selects, one Pod per node, as the cluster
        // the manual speaks of runs it: its Service has backends everywhere.
        let web: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
        }))
        .expect("the web Deployment");
        Api::<Deployment>::namespaced(tb.cluster.client(), "default")
            .create(&Default::default(), &web)
            .await
            .expect("create the web Deployment");
        tb
    });
    let dir = std::env::temp_dir().join(format!("manual-{}", uuid::Uuid::new_v4()));
    let bed = Bed {
        tb: Some(tb),
        rt,
        dir,
    };
    copy_dir(
        &Path::new(ROOT).join("deploy"),
        &bed.dir.join("work").join("deploy"),
    );
    std::fs::create_dir_all(bed.dir.join("home/.kube")).expect("home");
    std::fs::write(
        bed.dir.join("home/.kube/config"),
        bed.tb().cluster.kubeconfig_yaml(),
    )
    .expect("kubeconfig");
    std::fs::create_dir_all(bed.dir.join("bin")).expect("bin");
    std::os::unix::fs::symlink(CCM, bed.dir.join("bin/cloudscale-cloud-controller-manager"))
        .expect("the CCM on PATH");
    bed
}

#[test]
fn the_manual_runs() {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        // CI has kubectl (README.md); say so loudly where it does not.
        panic!("kubectl is not installed: the manual's commands need it");
    }
    let bed = start_bed();
    let mut daemon: Option<Daemon> = None;
    let mut ran = Vec::new();
    let mut not_run = Vec::new();
    for (n, c) in commands(&manual()).iter().enumerate() {
        let at = format!("deploy/README.md:{} ({})", c.line, c.section);
        let here =
            classify(&c.text).unwrap_or_else(|| panic!("{at}: `{}` is not in COMMANDS", c.text));
        let expect: &[&str] = match here {
            Here::Not(why) => {
                not_run.push(format!("{at}: {}\n    not here: {why}", c.text));
                continue;
            }
            Here::Daemon => {
                assert!(daemon.is_none(), "{at}: a second CCM");
                daemon = Some(start_daemon(&bed, &c.text));
                ran.push(format!("{at}: {} (runs until the end)", c.text));
                continue;
            }
            Here::Run(expect) => expect,
            Here::RunShown => &[],
        };
        let (ok, stdout, stderr) = run(&bed, &c.text, n);
        let log = daemon.as_ref().map(Daemon::log).unwrap_or_default();
        assert!(
            ok,
            "{at}: `{}` failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nCCM log (tail):\n{}",
            c.text,
            log.lines()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        );
        for e in expect {
            assert!(
                stdout.contains(e),
                "{at}: `{}`: the output lacks \"{e}\":\n{stdout}\nstderr:\n{stderr}",
                c.text
            );
        }
        if matches!(here, Here::RunShown) {
            let shown = c.shown.as_deref().unwrap_or_default();
            assert_eq!(
                stdout.trim_end(),
                shown.trim_end(),
                "{at}: `{}` prints something else than the manual shows",
                c.text
            );
        }
        println!("$ {}\n{stdout}", c.text);
        ran.push(format!("{at}: {}", c.text));
    }
    assert!(daemon.is_some(), "the manual never started the CCM");
    let (status, exposition) = bed
        .rt
        .block_on(http_get("/metrics"))
        .expect("the CCM's /metrics");
    assert_eq!(status, 200);
    check_metric_names(&exposition);
    println!(
        "ran {} commands of the manual:\n{}\n\nnot run here ({}):\n{}",
        ran.len(),
        ran.join("\n"),
        not_run.len(),
        not_run.join("\n")
    );
}
