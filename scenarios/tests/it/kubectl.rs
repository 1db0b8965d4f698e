//! The real kubectl clients (`kubectl.1.27` … `kubectl.1.33`, installed next to `kubectl`)
//! against the embedded API server: get (server-side Tables, -o json/yaml/wide, selectors),
//! describe, client-side apply with default validation, the patch types, annotate, label,
//! taint, delete of an object with a finalizer, `create service loadbalancer`, `get -w` and
//! `wait`. Every client runs in its own thread and namespace against one server per test;
//! every kubectl process has a bounded timeout and background ones are killed on drop. The
//! tests skip (with a printed reason) when no client is installed.

use scenarios::apiserver::{ApiServer, ApiServerConfig, RequestRecord};
use serde_json::Value;
use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Upper bound for one kubectl command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Upper bound for waiting on a background command's output or exit.
const WAIT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(20);

static SEQ: AtomicUsize = AtomicUsize::new(0);

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// One API server (with its runtime) and a scratch directory, for one test.
pub(crate) struct Env {
    // Dropped first: the server stops before its runtime (kept for the server's tasks).
    api: ApiServer,
    _rt: tokio::runtime::Runtime,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Env {
    fn start(test: &str) -> Env {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let api = rt
            .block_on(ApiServer::start(ApiServerConfig::default()))
            .expect("API server starts");
        let dir = std::env::temp_dir().join(unique(&format!("kubectl-{test}")));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        let kubeconfig = dir.join("kubeconfig");
        api.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Env {
            api,
            _rt: rt,
            dir,
            kubeconfig,
        }
    }

    fn requests(&self) -> Vec<RequestRecord> {
        self.api.shared().requests()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The output of a finished kubectl.
#[derive(Debug)]
pub(crate) struct Output {
    status: Option<ExitStatus>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Output {
    pub(crate) fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// A running kubectl; killed (and reaped) when dropped.
struct Bg {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
    what: String,
}

impl Bg {
    fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Polls stdout until `pred` holds; panics with the output after `WAIT`.
    fn wait_for_stdout(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let out = self.stdout();
            if pred(&out) {
                return out;
            }
            if Instant::now() > deadline || !self.running() {
                let running = self.running();
                panic!(
                    "`{}`: no {what} (running: {})\nstdout:\n{out}\nstderr:\n{}",
                    self.what,
                    running,
                    self.stderr()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for the exit (killing it after `timeout`).
    fn finish(mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        Output {
            status,
            stdout: self.stdout(),
            stderr: self.stderr(),
        }
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// One client version, working in its own namespace.
pub(crate) struct Kubectl<'a> {
    pub(crate) minor: u32,
    bin: PathBuf,
    env: &'a Env,
    pub(crate) ns: String,
}

impl Kubectl<'_> {
    fn tag(&self) -> String {
        format!("1{}", self.minor)
    }

    fn user_agent(&self) -> String {
        format!("kubectl.1.{}/", self.minor)
    }

    /// Writes a manifest into the scratch directory.
    pub(crate) fn file(&self, name: &str, content: &str) -> String {
        let path = self.env.dir.join(format!("{}-{name}", self.tag()));
        std::fs::write(&path, content).expect("manifest");
        path.display().to_string()
    }

    fn spawn(&self, args: &[&str]) -> Bg {
        let base = self.env.dir.join(unique(&format!("out-{}", self.tag())));
        let stdout = base.with_extension("stdout");
        let stderr = base.with_extension("stderr");
        let child = Command::new(&self.bin)
            .arg("--kubeconfig")
            .arg(&self.env.kubeconfig)
            .arg("--cache-dir")
            .arg(self.env.dir.join(format!("cache-{}", self.tag())))
            .arg("-n")
            .arg(&self.ns)
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(File::create(&stdout).expect("stdout file"))
            .stderr(File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("kubectl starts");
        Bg {
            child,
            stdout,
            stderr,
            what: format!("kubectl.1.{} {}", self.minor, args.join(" ")),
        }
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.spawn(args).finish(COMMAND_TIMEOUT)
    }

    /// Runs a command that must succeed; its stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.success(),
            "`kubectl.1.{} {}` failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            self.minor,
            args.join(" "),
            out.status,
            out.stdout,
            out.stderr
        );
        out.stdout
    }

    /// Runs a command that must fail; its stderr.
    pub(crate) fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.success() && out.status.is_some(),
            "`kubectl.1.{} {}` should have failed ({:?})\nstdout:\n{}",
            self.minor,
            args.join(" "),
            out.status,
            out.stdout
        );
        out.stderr
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// How many requests of this client match `pred` so far.
    fn count_requests(&self, pred: impl Fn(&RequestRecord) -> bool) -> usize {
        let ua = self.user_agent();
        self.env
            .requests()
            .iter()
            .filter(|r| r.user_agent.starts_with(&ua) && pred(r))
            .count()
    }

    /// Polls the server's request log until this client made more than `before` requests
    /// matching `pred` (e.g. a background command has started its watch).
    fn wait_for_request(&self, before: usize, what: &str, pred: impl Fn(&RequestRecord) -> bool) {
        let deadline = Instant::now() + WAIT;
        while self.count_requests(&pred) <= before {
            assert!(
                Instant::now() < deadline,
                "kubectl.1.{}: no {what} request",
                self.minor
            );
            std::thread::sleep(POLL);
        }
    }

    fn node_manifest(&self, name: &str, ready: bool) -> String {
        let status = if ready { "True" } else { "False" };
        format!(
            r#"apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    kubernetes.io/hostname: {name}
    node-role.kubernetes.io/control-plane: ""
    testbed/client: "{tag}"
spec:
  providerID: cloudscale://{name}
status:
  conditions:
  - type: Ready
    status: "{status}"
    reason: KubeletReady
    message: kubelet is posting ready status
    lastHeartbeatTime: "2026-01-01T00:00:00Z"
    lastTransitionTime: "2026-01-01T00:00:00Z"
  addresses:
  - type: InternalIP
    address: 10.0.{minor}.5
  - type: Hostname
    address: {name}
  nodeInfo:
    kubeletVersion: v1.32.0
    kubeProxyVersion: ""
    osImage: Ubuntu 24.04 LTS
    kernelVersion: 6.8.0-31-generic
    containerRuntimeVersion: containerd://1.7.12
    operatingSystem: linux
    architecture: amd64
    machineID: ""
    systemUUID: ""
    bootID: ""
"#,
            tag = self.tag(),
            minor = self.minor,
        )
    }

    /// Creates a Node with `kubectl create -f` (there is no kubelet).
    fn create_node(&self, name: &str, ready: bool) {
        let path = self.file(&format!("{name}.yaml"), &self.node_manifest(name, ready));
        let out = self.ok(&["create", "-f", &path]);
        assert_eq!(out.trim(), format!("node/{name} created"));
    }

    fn create_event(&self, name: &str, kind: &str, object: &str, uid: &str, reason: &str) {
        let manifest = format!(
            r#"apiVersion: v1
kind: Event
metadata:
  name: {name}
involvedObject:
  apiVersion: v1
  kind: {kind}
  name: {object}
  namespace: "{ns}"
  uid: "{uid}"
reason: {reason}
message: "{reason} for {object}"
type: Normal
source:
  component: service-controller
count: 2
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
"#,
            ns = if kind == "Node" { "" } else { &self.ns },
        );
        let path = self.file(&format!("{name}.yaml"), &manifest);
        let out = self.ok(&["create", "-f", &path]);
        assert_eq!(out.trim(), format!("event/{name} created"));
    }
}

/// Runs `f` for every installed client in parallel, each in a fresh namespace of one
/// server; reports every client's failure together.
pub(crate) fn for_each_client(test: &str, f: impl Fn(&Kubectl) + Sync) {
    let clients = scenarios::testbed::installed_clients();
    if clients.is_empty() {
        eprintln!("skipping {test}: no kubectl.1.NN client found next to `kubectl` on PATH");
        return;
    }
    let started = Instant::now();
    let env = Env::start(test);
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .map(|(minor, bin)| {
                let env = &env;
                let f = &f;
                let handle = s.spawn(move || {
                    let k = Kubectl {
                        minor: *minor,
                        bin: bin.clone(),
                        env,
                        ns: format!("{test}-1{minor}").replace('_', "-"),
                    };
                    let out = k.ok(&["create", "namespace", &k.ns]);
                    assert_eq!(out.trim(), format!("namespace/{} created", k.ns));
                    f(&k);
                });
                (*minor, handle)
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|(minor, h)| {
                h.join().err().map(|e| {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("kubectl.1.{minor}: {msg}")
                })
            })
            .collect()
    });
    eprintln!(
        "{test}: {} clients ({}) in {:.1?}",
        clients.len(),
        clients
            .iter()
            .map(|(m, _)| format!("1.{m}"))
            .collect::<Vec<_>>()
            .join(", "),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {} clients failed:\n{}",
        failures.len(),
        clients.len(),
        failures.join("\n\n")
    );
}

/// A printed table: the header must be exactly `headers`; each row maps header → cell
/// (cells are cut at the header's column positions, so empty cells and cells with spaces
/// come out right).
pub(crate) fn parse_table(out: &str, headers: &[&str]) -> Vec<HashMap<String, String>> {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no table in {out:?}"));
    let mut starts = Vec::new();
    let mut from = 0;
    for h in headers {
        let at = header[from..]
            .find(h)
            .map(|i| i + from)
            .unwrap_or_else(|| panic!("header {h:?} missing in {header:?} (want {headers:?})"));
        starts.push(at);
        from = at + h.len();
    }
    let mut rest = header.to_string();
    for (h, at) in headers.iter().zip(&starts).rev() {
        rest.replace_range(*at..at + h.len(), "");
    }
    assert!(
        rest.trim().is_empty(),
        "header {header:?} has more than {headers:?}"
    );
    lines
        .map(|line| {
            headers
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let start = starts[i].min(line.len());
                    let end = starts
                        .get(i + 1)
                        .copied()
                        .unwrap_or(line.len())
                        .min(line.len());
                    (h.to_string(), line[start..end].trim().to_string())
                })
                .collect()
        })
        .collect()
}

fn row<'a>(
    table: &'a [HashMap<String, String>],
    key: &str,
    value: &str,
) -> &'a HashMap<String, String> {
    table
        .iter()
        .find(|r| r.get(key).map(String::as_str) == Some(value))
        .unwrap_or_else(|| panic!("no row with {key}={value} in {table:?}"))
}

/// A cell of a row, e.g. `cell(&t, "NAME", "web", "TYPE")`.
pub(crate) fn cell(
    table: &[HashMap<String, String>],
    key: &str,
    value: &str,
    column: &str,
) -> String {
    row(table, key, value)[column].clone()
}

pub(crate) fn is_age(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_digit() || "smhdy".contains(c))
}

const SERVICE_COLUMNS: &[&str] = &[
    "NAME",
    "TYPE",
    "CLUSTER-IP",
    "EXTERNAL-IP",
    "PORT(S)",
    "AGE",
];

fn service_manifest(port: u16, extra_label: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Service
metadata:
  name: web
  labels:
    app: web
{extra_label}spec:
  selector:
    app: web
  ports:
  - name: http
    port: {port}
    targetPort: 8080
"#
    )
}

// ---- tests ------------------------------------------------------------------------------

#[test]
fn get_prints_the_server_side_columns() {
    for_each_client("get", |k| {
        let node = format!("node-{}", k.tag());
        k.create_node(&node, true);
        let svc = k.file("svc.yaml", &service_manifest(80, ""));
        k.ok(&["apply", "-f", &svc]);
        let out = k.ok(&["create", "service", "loadbalancer", "lb", "--tcp=443:8443"]);
        assert_eq!(out.trim(), "service/lb created");
        k.ok(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=a=1",
            "--from-literal=b=2",
        ]);
        k.ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=token=x",
        ]);
        let uid = k.ok(&["get", "service", "web", "-o", "jsonpath={.metadata.uid}"]);
        k.create_event("web.1", "Service", "web", &uid, "EnsuringLoadBalancer");

        // Namespaces: NAME STATUS AGE.
        let t = parse_table(&k.ok(&["get", "namespaces"]), &["NAME", "STATUS", "AGE"]);
        for ns in ["default", "kube-system", k.ns.as_str()] {
            assert_eq!(cell(&t, "NAME", ns, "STATUS"), "Active");
            assert!(is_age(&cell(&t, "NAME", ns, "AGE")));
        }
        let t = parse_table(
            &k.ok(&["get", "namespace", &k.ns]),
            &["NAME", "STATUS", "AGE"],
        );
        assert_eq!(t.len(), 1);
        let ns = k.json(&["get", "namespace", &k.ns]);
        assert_eq!(ns["kind"], "Namespace");
        assert_eq!(ns["status"]["phase"], "Active");

        // Nodes: NAME STATUS ROLES AGE VERSION, and the wide columns.
        let t = parse_table(
            &k.ok(&["get", "node", &node]),
            &["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
        );
        let r = row(&t, "NAME", &node);
        assert_eq!(
            (
                r["STATUS"].as_str(),
                r["ROLES"].as_str(),
                r["VERSION"].as_str()
            ),
            ("Ready", "control-plane", "v1.32.0")
        );
        let selector = format!("testbed/client={}", k.tag());
        let t = parse_table(
            &k.ok(&["get", "nodes", "-l", &selector, "-o", "wide"]),
            &[
                "NAME",
                "STATUS",
                "ROLES",
                "AGE",
                "VERSION",
                "INTERNAL-IP",
                "EXTERNAL-IP",
                "OS-IMAGE",
                "KERNEL-VERSION",
                "CONTAINER-RUNTIME",
            ],
        );
        assert_eq!(t.len(), 1, "the selector picks this client's node: {t:?}");
        assert_eq!(t[0]["INTERNAL-IP"], format!("10.0.{}.5", k.minor));
        assert_eq!(t[0]["EXTERNAL-IP"], "<none>");
        assert_eq!(t[0]["OS-IMAGE"], "Ubuntu 24.04 LTS");
        assert_eq!(t[0]["KERNEL-VERSION"], "6.8.0-31-generic");
        assert_eq!(t[0]["CONTAINER-RUNTIME"], "containerd://1.7.12");
        let list: Value =
            serde_yaml_ng::from_str(&k.ok(&["get", "nodes", "-l", &selector, "-o", "yaml"]))
                .expect("YAML");
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"][0]["metadata"]["name"], node.as_str());
        assert_eq!(list["items"][0]["status"]["conditions"][0]["type"], "Ready");
        let out = k.ok(&["get", "nodes", "-l", "testbed/client=none"]);
        assert_eq!(out.trim(), "");

        // Services: the real columns, -o wide adds SELECTOR.
        let t = parse_table(&k.ok(&["get", "services"]), SERVICE_COLUMNS);
        assert_eq!(t.len(), 2);
        let web = k.json(&["get", "service", "web"]);
        let lb = k.json(&["get", "service", "lb"]);
        let cluster_ip = web["spec"]["clusterIP"].as_str().expect("cluster IP");
        let r = row(&t, "NAME", "web");
        assert_eq!(r["TYPE"], "ClusterIP");
        assert_eq!(r["CLUSTER-IP"], cluster_ip);
        assert_eq!(r["EXTERNAL-IP"], "<none>");
        assert_eq!(r["PORT(S)"], "80/TCP");
        assert!(is_age(&r["AGE"]));
        let node_port = lb["spec"]["ports"][0]["nodePort"]
            .as_i64()
            .expect("node port");
        let r = row(&t, "NAME", "lb");
        assert_eq!(r["TYPE"], "LoadBalancer");
        assert_eq!(r["EXTERNAL-IP"], "<pending>");
        assert_eq!(r["PORT(S)"], format!("443:{node_port}/TCP"));
        let mut wide = SERVICE_COLUMNS.to_vec();
        wide.push("SELECTOR");
        let t = parse_table(&k.ok(&["get", "service", "web", "-o", "wide"]), &wide);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0]["SELECTOR"], "app=web");
        // Label selectors, label columns (from the rows' metadata), sorting (full objects).
        let t = parse_table(
            &k.ok(&["get", "services", "-l", "app=web"]),
            SERVICE_COLUMNS,
        );
        assert_eq!(t.len(), 1);
        assert_eq!(t[0]["NAME"], "web");
        let t = parse_table(
            &k.ok(&["get", "services", "-l", "app!=web"]),
            SERVICE_COLUMNS,
        );
        assert_eq!(
            t.iter().map(|r| r["NAME"].as_str()).collect::<Vec<_>>(),
            ["lb"]
        );
        let mut with_app = SERVICE_COLUMNS.to_vec();
        with_app.push("APP");
        let t = parse_table(&k.ok(&["get", "services", "-L", "app"]), &with_app);
        assert_eq!(cell(&t, "NAME", "web", "APP"), "web");
        assert_eq!(cell(&t, "NAME", "lb", "APP"), "lb");
        let mut with_labels = SERVICE_COLUMNS.to_vec();
        with_labels.push("LABELS");
        let t = parse_table(&k.ok(&["get", "services", "--show-labels"]), &with_labels);
        assert_eq!(cell(&t, "NAME", "web", "LABELS"), "app=web");
        let t = parse_table(
            &k.ok(&["get", "services", "--sort-by=.metadata.name"]),
            SERVICE_COLUMNS,
        );
        assert_eq!(
            t.iter().map(|r| r["NAME"].as_str()).collect::<Vec<_>>(),
            ["lb", "web"]
        );
        let out = k.ok(&["get", "services", "-o", "name"]);
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            ["service/lb", "service/web"]
        );

        // ConfigMaps and Secrets.
        let t = parse_table(&k.ok(&["get", "configmaps"]), &["NAME", "DATA", "AGE"]);
        assert_eq!(cell(&t, "NAME", "settings", "DATA"), "2");
        let cm = k.json(&["get", "configmap", "settings"]);
        assert_eq!(cm["data"]["b"], "2");
        let out = k.ok(&["get", "configmap", "settings", "-o", "jsonpath={.data.a}"]);
        assert_eq!(out, "1");
        let t = parse_table(&k.ok(&["get", "secrets"]), &["NAME", "TYPE", "DATA", "AGE"]);
        let r = row(&t, "NAME", "creds");
        assert_eq!((r["TYPE"].as_str(), r["DATA"].as_str()), ("Opaque", "1"));

        // Events (both the narrow and the wide columns).
        let t = parse_table(
            &k.ok(&["get", "events"]),
            &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        );
        let r = row(&t, "OBJECT", "service/web");
        assert_eq!(r["TYPE"], "Normal");
        assert_eq!(r["REASON"], "EnsuringLoadBalancer");
        assert_eq!(r["MESSAGE"], "EnsuringLoadBalancer for web");
        assert!(is_age(&r["LAST SEEN"]));
        let t = parse_table(
            &k.ok(&["get", "events", "-o", "wide"]),
            &[
                "LAST SEEN",
                "TYPE",
                "REASON",
                "OBJECT",
                "SUBOBJECT",
                "SOURCE",
                "MESSAGE",
                "FIRST SEEN",
                "COUNT",
                "NAME",
            ],
        );
        let r = row(&t, "NAME", "web.1");
        assert_eq!(r["SOURCE"], "service-controller");
        assert_eq!(r["COUNT"], "2");
        assert_eq!(r["SUBOBJECT"], "");
        let t = parse_table(
            &k.ok(&["get", "events.events.k8s.io"]),
            &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        );
        assert_eq!(
            cell(&t, "OBJECT", "service/web", "REASON"),
            "EnsuringLoadBalancer"
        );
        let ev = k.json(&["get", "events.v1.events.k8s.io", "web.1"]);
        assert_eq!(ev["regarding"]["name"], "web");
        assert_eq!(ev["note"], "EnsuringLoadBalancer for web");

        // Several types at once, and errors.
        let out = k.ok(&["get", "services,configmaps"]);
        let sections: Vec<&str> = out.split("\n\n").collect();
        assert_eq!(sections.len(), 2, "{out}");
        let t = parse_table(sections[0], SERVICE_COLUMNS);
        assert_eq!(cell(&t, "NAME", "service/web", "TYPE"), "ClusterIP");
        let t = parse_table(sections[1], &["NAME", "DATA", "AGE"]);
        assert_eq!(cell(&t, "NAME", "configmap/settings", "DATA"), "2");
        let err = k.fails(&["get", "service", "missing"]);
        assert!(
            err.contains("services \"missing\" not found"),
            "unexpected error: {err}"
        );
    });
}

#[test]
fn describe_service_and_node_with_their_events() {
    for_each_client("describe", |k| {
        let node = format!("node-{}", k.tag());
        k.create_node(&node, true);
        let svc = k.file("svc.yaml", &service_manifest(80, ""));
        k.ok(&["apply", "-f", &svc]);
        let uid = k.ok(&["get", "service", "web", "-o", "jsonpath={.metadata.uid}"]);
        k.create_event("web.1", "Service", "web", &uid, "EnsuredLoadBalancer");
        // Kubelets name the node as the involved object's uid.
        k.create_event("node.1", "Node", &node, &node, "NodeReady");

        let out = k.ok(&["describe", "service", "web"]);
        let field = |out: &str, name: &str| -> String {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .unwrap_or_else(|| panic!("no {name} in\n{out}"))
                .trim()
                .to_string()
        };
        assert_eq!(field(&out, "Name"), "web");
        assert_eq!(field(&out, "Namespace"), k.ns);
        assert_eq!(field(&out, "Type"), "ClusterIP");
        assert_eq!(field(&out, "Selector"), "app=web");
        assert!(field(&out, "IP").starts_with("10."), "{out}");
        assert_eq!(field(&out, "Port"), "http  80/TCP");
        assert_eq!(field(&out, "TargetPort"), "8080/TCP");
        let events = out.split("Events:").nth(1).expect("events section");
        assert!(
            events.contains("EnsuredLoadBalancer")
                && events.contains("EnsuredLoadBalancer for web"),
            "{out}"
        );

        let before = k.count_requests(|r| r.resource == "pods" && r.verb == "list");
        let out = k.ok(&["describe", "node", &node]);
        assert_eq!(field(&out, "Name"), node);
        assert_eq!(field(&out, "Roles"), "control-plane");
        assert_eq!(field(&out, "ProviderID"), format!("cloudscale://{node}"));
        let conditions = out.split("Conditions:").nth(1).expect("conditions");
        assert!(
            conditions
                .lines()
                .any(|l| l.split_whitespace().take(2).collect::<Vec<_>>() == ["Ready", "True"]),
            "{out}"
        );
        assert!(
            out.contains(&format!("InternalIP:  10.0.{}.5", k.minor)),
            "{out}"
        );
        assert!(
            out.contains("Non-terminated Pods:") && out.contains("(0 in total)"),
            "{out}"
        );
        let events = out.split("\nEvents:").nth(1).expect("events section");
        assert!(events.contains("NodeReady for"), "{out}");
        // It asked for the node's pods (the list is empty: no kubelets).
        assert!(
            k.count_requests(|r| r.resource == "pods" && r.verb == "list" && r.code == 200)
                > before
        );
        // describe of what does not exist fails cleanly.
        let err = k.fails(&["describe", "service", "missing"]);
        assert!(err.contains("\"missing\" not found"), "{err}");
    });
}

#[test]
fn apply_patch_annotate_label_and_taint() {
    for_each_client("apply", |k| {
        // Client-side apply with the default validation (1.27 fetches /openapi/v2 as
        // protobuf, newer clients /openapi/v3).
        let v1 = k.file("svc-v1.yaml", &service_manifest(80, ""));
        let out = k.ok(&["apply", "-f", &v1]);
        assert_eq!(out.trim(), "service/web created");
        let out = k.ok(&["apply", "-f", &v1]);
        assert_eq!(out.trim(), "service/web unchanged");
        let v2 = k.file("svc-v2.yaml", &service_manifest(81, "    tier: frontend\n"));
        let out = k.ok(&["apply", "-f", &v2]);
        assert_eq!(out.trim(), "service/web configured");
        let svc = k.json(&["get", "service", "web"]);
        assert_eq!(svc["spec"]["ports"][0]["port"], 81);
        assert_eq!(svc["spec"]["ports"].as_array().map(Vec::len), Some(1));
        assert_eq!(svc["metadata"]["labels"]["tier"], "frontend");
        let applied =
            svc["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .as_str()
                .expect("last-applied annotation");
        assert!(applied.contains("\"port\":81"), "{applied}");
        // Unknown fields: kubectl asks for fieldValidation=Strict, the server refuses them on
        // create (POST) and on a change (PATCH); --validate=false lets them through.
        let bad = k.file(
            "svc-bad.yaml",
            &service_manifest(80, "")
                .replace("name: web", "name: bad")
                .replace("  selector:", "  bogusField: 1\n  selector:"),
        );
        let err = k.fails(&["apply", "-f", &bad]);
        assert!(
            err.contains(r#"Service in version "v1" cannot be handled as a Service: strict decoding error: unknown field "spec.bogusField""#),
            "unexpected error: {err}"
        );
        k.fails(&["get", "service", "bad"]);
        let out = k.ok(&["apply", "-f", &bad, "--validate=false"]);
        assert_eq!(out.trim(), "service/bad created");
        k.ok(&["delete", "service", "bad"]);
        let bad_port = k.file(
            "svc-bad-port.yaml",
            &service_manifest(81, "").replace(
                "    targetPort: 8080\n",
                "    targetPort: 8080\n    bogusPort: 1\n",
            ),
        );
        let err = k.fails(&["apply", "-f", &bad_port]);
        assert!(
            err.contains(r#"unknown field "spec.ports[0].bogusPort""#),
            "unexpected error: {err}"
        );
        // Dropping a field from the manifest removes it (three-way merge).
        let out = k.ok(&["apply", "-f", &v1]);
        assert_eq!(out.trim(), "service/web configured");
        let svc = k.json(&["get", "service", "web"]);
        assert!(svc["metadata"]["labels"].get("tier").is_none(), "{svc}");

        // Patches: strategic merge (ports merge on `port`), merge, JSON.
        let out = k.ok(&[
            "patch",
            "service",
            "web",
            "-p",
            r#"{"spec":{"ports":[{"name":"https","port":443,"targetPort":8443}]}}"#,
        ]);
        assert_eq!(out.trim(), "service/web patched");
        let svc = k.json(&["get", "service", "web"]);
        let ports: Vec<i64> = svc["spec"]["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .filter_map(|p| p["port"].as_i64())
            .collect();
        // New elements of a merge-keyed list are appended.
        assert_eq!(ports, [80, 443], "{svc}");
        let out = k.ok(&[
            "patch",
            "service",
            "web",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"merged":"yes"}}}"#,
        ]);
        assert_eq!(out.trim(), "service/web patched");
        let out = k.ok(&[
            "patch",
            "service",
            "web",
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/metadata/labels/json","value":"yes"},{"op":"remove","path":"/spec/ports/0"}]"#,
        ]);
        assert_eq!(out.trim(), "service/web patched");
        let svc = k.json(&["get", "service", "web"]);
        assert_eq!(svc["metadata"]["labels"]["merged"], "yes");
        assert_eq!(svc["metadata"]["labels"]["json"], "yes");
        assert_eq!(svc["spec"]["ports"].as_array().map(Vec::len), Some(1));
        assert_eq!(svc["spec"]["ports"][0]["port"], 443);
        let out = k.ok(&[
            "patch",
            "service",
            "web",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"merged":"yes"}}}"#,
        ]);
        assert_eq!(out.trim(), "service/web patched (no change)");
        let err = k.fails(&[
            "patch",
            "service",
            "web",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/labels/absent"}]"#,
        ]);
        assert!(!err.is_empty());

        // annotate and label, with --overwrite and removal.
        let out = k.ok(&["annotate", "service", "web", "note=hello"]);
        // 1.27 prints "annotate", later clients "annotated".
        assert!(out.trim().starts_with("service/web annotate"), "{out}");
        let err = k.fails(&["annotate", "service", "web", "note=again"]);
        assert!(err.contains("already has a value"), "{err}");
        k.ok(&["annotate", "service", "web", "note=again", "--overwrite"]);
        let out = k.ok(&["label", "service", "web", "tier=backend"]);
        assert_eq!(out.trim(), "service/web labeled");
        k.ok(&["label", "service", "web", "tier=db", "--overwrite"]);
        let svc = k.json(&["get", "service", "web"]);
        assert_eq!(svc["metadata"]["annotations"]["note"], "again");
        assert_eq!(svc["metadata"]["labels"]["tier"], "db");
        k.ok(&["annotate", "service", "web", "note-"]);
        let out = k.ok(&["label", "service", "web", "tier-"]);
        assert_eq!(out.trim(), "service/web unlabeled");
        let svc = k.json(&["get", "service", "web"]);
        assert!(
            svc["metadata"]["annotations"].get("note").is_none(),
            "{svc}"
        );
        assert!(svc["metadata"]["labels"].get("tier").is_none(), "{svc}");
        let t = parse_table(
            &k.ok(&["get", "services", "-l", "json=yes"]),
            SERVICE_COLUMNS,
        );
        assert_eq!(t.len(), 1);

        // Taints on a node: add, then remove with `key-`.
        let node = format!("node-{}", k.tag());
        k.create_node(&node, true);
        let out = k.ok(&["taint", "node", &node, "dedicated=ccm:NoSchedule"]);
        assert_eq!(out.trim(), format!("node/{node} tainted"));
        let n = k.json(&["get", "node", &node]);
        let taints = n["spec"]["taints"].as_array().expect("taints");
        assert_eq!(taints.len(), 1, "{n}");
        assert_eq!(
            (&taints[0]["key"], &taints[0]["value"], &taints[0]["effect"]),
            (
                &Value::from("dedicated"),
                &Value::from("ccm"),
                &Value::from("NoSchedule")
            )
        );
        k.ok(&["taint", "node", &node, "other:NoExecute"]);
        let out = k.ok(&["taint", "node", &node, "dedicated-"]);
        assert_eq!(out.trim(), format!("node/{node} untainted"));
        let n = k.json(&["get", "node", &node]);
        let keys: Vec<&str> = n["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["key"].as_str())
            .collect();
        assert_eq!(keys, ["other"], "{n}");
        k.ok(&["taint", "node", &node, "other-"]);
        let n = k.json(&["get", "node", &node]);
        assert!(
            n["spec"]["taints"].as_array().is_none_or(Vec::is_empty),
            "{n}"
        );
        // The status came through create and survives the spec updates.
        assert_eq!(n["status"]["conditions"][0]["status"], "True");
    });
}

#[test]
fn delete_waits_for_finalizers() {
    for_each_client("delete", |k| {
        let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers:\n  - example.com/hold\ndata:\n  a: b\n";
        let path = k.file("held.yaml", manifest);
        k.ok(&["create", "-f", &path]);
        let deletes = k.count_requests(|r| r.verb == "delete" && r.resource == "configmaps");
        let watches = k.count_requests(|r| r.verb == "watch" && r.resource == "configmaps");
        let mut delete = k.spawn(&["delete", "configmap", "held", "--timeout=60s"]);
        k.wait_for_request(deletes, "DELETE", |r| {
            r.verb == "delete" && r.resource == "configmaps"
        });
        k.wait_for_request(watches, "watch", |r| {
            r.verb == "watch" && r.resource == "configmaps"
        });
        // Marked for deletion, still there, and the command still waits.
        let cm = k.json(&["get", "configmap", "held"]);
        assert!(cm["metadata"]["deletionTimestamp"].is_string(), "{cm}");
        assert!(
            delete.running(),
            "delete returned early: {}",
            delete.stdout()
        );
        // Another process removes the finalizer: the deletion completes.
        let out = k.ok(&[
            "patch",
            "configmap",
            "held",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ]);
        assert_eq!(out.trim(), "configmap/held patched");
        let out = delete.finish(WAIT);
        assert!(out.success(), "delete failed: {out:?}");
        assert_eq!(out.stdout.trim(), "configmap \"held\" deleted");
        let err = k.fails(&["get", "configmap", "held"]);
        assert!(err.contains("configmaps \"held\" not found"), "{err}");
        // Without finalizers it is gone at once; deleting it again is NotFound.
        k.ok(&["create", "configmap", "plain"]);
        let out = k.ok(&["delete", "configmap", "plain"]);
        assert_eq!(out.trim(), "configmap \"plain\" deleted");
        let err = k.fails(&["delete", "configmap", "plain"]);
        assert!(err.contains("configmaps \"plain\" not found"), "{err}");
        let out = k.ok(&["delete", "configmap", "plain", "--ignore-not-found"]);
        assert_eq!(out.trim(), "");
    });
}

#[test]
fn create_service_loadbalancer() {
    // 1.32 and later send these bodies as Kubernetes protobuf.
    for_each_client("create", |k| {
        let out = k.ok(&[
            "create",
            "service",
            "loadbalancer",
            "lb",
            "--tcp=80:8080",
            "--tcp=443:8443",
        ]);
        assert_eq!(out.trim(), "service/lb created");
        let svc = k.json(&["get", "service", "lb"]);
        assert_eq!(svc["spec"]["type"], "LoadBalancer");
        assert_eq!(svc["metadata"]["labels"]["app"], "lb");
        assert_eq!(svc["spec"]["selector"]["app"], "lb");
        let ports = svc["spec"]["ports"].as_array().expect("ports");
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0]["port"], 80);
        assert_eq!(ports[0]["targetPort"], 8080);
        assert_eq!(ports[0]["protocol"], "TCP");
        assert_eq!(ports[1]["targetPort"], 8443);
        let node_ports: Vec<i64> = ports
            .iter()
            .filter_map(|p| p["nodePort"].as_i64())
            .collect();
        assert_eq!(node_ports.len(), 2, "node ports allocated: {svc}");
        assert!(svc["spec"]["clusterIP"].is_string(), "{svc}");
        let t = parse_table(&k.ok(&["get", "service", "lb"]), SERVICE_COLUMNS);
        assert_eq!(t[0]["EXTERNAL-IP"], "<pending>");
        assert_eq!(
            t[0]["PORT(S)"],
            format!("80:{}/TCP,443:{}/TCP", node_ports[0], node_ports[1])
        );
        let err = k.fails(&["create", "service", "loadbalancer", "lb", "--tcp=80:8080"]);
        assert!(err.contains("services \"lb\" already exists"), "{err}");
        // --dry-run=server answers without storing.
        let out = k.ok(&[
            "create",
            "service",
            "clusterip",
            "dry",
            "--tcp=80",
            "--dry-run=server",
        ]);
        assert_eq!(out.trim(), "service/dry created (server dry run)");
        k.fails(&["get", "service", "dry"]);
        let out = k.ok(&["create", "service", "nodeport", "np", "--tcp=8080:80"]);
        assert_eq!(out.trim(), "service/np created");
        let t = parse_table(&k.ok(&["get", "service", "np"]), SERVICE_COLUMNS);
        assert_eq!(t[0]["TYPE"], "NodePort");
        assert!(t[0]["PORT(S)"].starts_with("8080:"), "{t:?}");
    });
}

#[test]
fn get_watch_prints_the_changes() {
    for_each_client("watch", |k| {
        k.ok(&["create", "service", "clusterip", "base", "--tcp=80"]);
        k.ok(&["create", "configmap", "base"]);
        let mut svc_watch = k.spawn(&["get", "services", "-w"]);
        let mut cm_watch = k.spawn(&["get", "configmaps", "-w", "--output-watch-events"]);
        // Both printed the current objects: the list is done and the watches are running.
        svc_watch.wait_for_stdout("initial rows", |o| {
            o.lines().any(|l| l.starts_with("base "))
        });
        cm_watch.wait_for_stdout("initial rows", |o| {
            o.lines()
                .any(|l| l.split_whitespace().nth(1) == Some("base"))
        });
        // (Changes between the list and the watch request are replayed: no race.)

        k.ok(&["create", "service", "clusterip", "moving", "--tcp=8080"]);
        k.ok(&["label", "service", "moving", "step=two"]);
        k.ok(&["delete", "service", "moving"]);
        k.ok(&["create", "configmap", "moving", "--from-literal=a=1"]);
        k.ok(&["label", "configmap", "moving", "step=two"]);
        k.ok(&["delete", "configmap", "moving"]);

        let out = svc_watch.wait_for_stdout("3 rows of `moving`", |o| {
            o.lines().filter(|l| l.starts_with("moving ")).count() >= 3
        });
        let t = parse_table(&out, SERVICE_COLUMNS);
        let base = row(&t, "NAME", "base");
        assert_eq!(base["PORT(S)"], "80/TCP");
        let moving: Vec<_> = t.iter().filter(|r| r["NAME"] == "moving").collect();
        assert_eq!(moving.len(), 3, "{out}");
        for r in moving {
            assert_eq!(r["TYPE"], "ClusterIP", "{out}");
            assert_eq!(r["PORT(S)"], "8080/TCP", "{out}");
            assert!(r["CLUSTER-IP"].starts_with("10."), "{out}");
        }
        let out = cm_watch.wait_for_stdout("3 events of `moving`", |o| {
            o.lines()
                .filter(|l| l.split_whitespace().nth(1) == Some("moving"))
                .count()
                >= 3
        });
        let t = parse_table(&out, &["EVENT", "NAME", "DATA", "AGE"]);
        let events: Vec<(&str, &str)> = t
            .iter()
            .filter(|r| r["NAME"] == "moving")
            .map(|r| (r["EVENT"].as_str(), r["DATA"].as_str()))
            .collect();
        assert_eq!(
            events,
            [("ADDED", "1"), ("MODIFIED", "1"), ("DELETED", "1")],
            "{out}"
        );
        assert_eq!(cell(&t, "NAME", "base", "EVENT"), "ADDED");
        assert!(
            svc_watch.running() && cm_watch.running(),
            "watches ended early"
        );
        drop(svc_watch);
        drop(cm_watch);

        // A watch of one object by name.
        let mut one = k.spawn(&["get", "configmap", "base", "-w", "-o", "name"]);
        one.wait_for_stdout("the object", |o| o.contains("configmap/base"));
        k.ok(&["label", "configmap", "base", "seen=yes"]);
        one.wait_for_stdout("the change", |o| o.matches("configmap/base").count() >= 2);
    });
}

#[test]
fn wait_for_conditions_jsonpath_delete_and_create() {
    for_each_client("wait", |k| {
        let ready = format!("node-{}", k.tag());
        k.create_node(&ready, true);
        let out = k.ok(&[
            "wait",
            "--for=condition=Ready",
            &format!("node/{ready}"),
            "--timeout=20s",
        ]);
        assert_eq!(out.trim(), format!("node/{ready} condition met"));
        // A condition that becomes true later, through the status subresource.
        let late = format!("late-{}", k.tag());
        k.create_node(&late, false);
        let watches = k.count_requests(|r| r.verb == "watch" && r.resource == "nodes");
        let waiting = k.spawn(&[
            "wait",
            "--for=condition=Ready",
            &format!("node/{late}"),
            "--timeout=30s",
        ]);
        k.wait_for_request(watches, "watch of nodes", |r| {
            r.verb == "watch" && r.resource == "nodes"
        });
        k.ok(&[
            "patch",
            "node",
            &late,
            "--subresource=status",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/status/conditions/0/status","value":"True"}]"#,
        ]);
        let out = waiting.finish(WAIT);
        assert!(out.success(), "{out:?}");
        assert_eq!(out.stdout.trim(), format!("node/{late} condition met"));
        // A timeout is an error.
        let err = k.fails(&[
            "wait",
            "--for=condition=Ready=false",
            &format!("node/{ready}"),
            "--timeout=1s",
        ]);
        assert!(err.contains("timed out"), "{err}");

        // jsonpath: already true, and becoming true.
        k.ok(&["create", "service", "clusterip", "web", "--tcp=80"]);
        let out = k.ok(&[
            "wait",
            "--for=jsonpath={.spec.type}=ClusterIP",
            "service/web",
            "--timeout=20s",
        ]);
        assert_eq!(out.trim(), "service/web condition met");
        k.ok(&["create", "configmap", "flag"]);
        let watches = k.count_requests(|r| r.verb == "watch" && r.resource == "configmaps");
        let waiting = k.spawn(&[
            "wait",
            "--for=jsonpath={.metadata.labels.phase}=done",
            "configmap/flag",
            "--timeout=30s",
        ]);
        k.wait_for_request(watches, "watch of configmaps", |r| {
            r.verb == "watch" && r.resource == "configmaps"
        });
        k.ok(&["label", "configmap", "flag", "phase=done"]);
        let out = waiting.finish(WAIT);
        assert!(out.success(), "{out:?}");
        assert_eq!(out.stdout.trim(), "configmap/flag condition met");

        // --for=delete.
        let watches = k.count_requests(|r| r.verb == "watch" && r.resource == "configmaps");
        let waiting = k.spawn(&["wait", "--for=delete", "configmap/flag", "--timeout=30s"]);
        k.wait_for_request(watches, "watch of configmaps", |r| {
            r.verb == "watch" && r.resource == "configmaps"
        });
        k.ok(&["delete", "configmap", "flag"]);
        let out = waiting.finish(WAIT);
        assert!(out.success(), "{out:?}");
        assert_eq!(out.stdout.trim(), "configmap/flag condition met");

        // --for=create exists from 1.31 on.
        if k.minor >= 31 {
            let gets = k.count_requests(|r| r.resource == "configmaps" && r.code == 404);
            let waiting = k.spawn(&["wait", "--for=create", "configmap/born", "--timeout=30s"]);
            k.wait_for_request(gets, "look-up of the missing object", |r| {
                r.resource == "configmaps" && r.code == 404
            });
            k.ok(&["create", "configmap", "born"]);
            let out = waiting.finish(WAIT);
            assert!(out.success(), "{out:?}");
            assert!(
                out.stdout.contains("configmap/born condition met"),
                "{out:?}"
            );
        }
    });
}

#[test]
fn load_balancer_class_is_refused_as_kubernetes_refuses_it() {
    for_each_client("lbclass", |k| {
        let manifest = |name: &str, ty: &str| {
            format!(
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  type: {ty}\n  loadBalancerClass: example.com/lb\n  ports:\n  - port: 80\n"
            )
        };
        let invalid = |name: &str, value: &str| {
            format!(
                "The Service \"{name}\" is invalid: spec.loadBalancerClass: Invalid value: {value}: may not change once set"
            )
        };

        // LoadBalancer to LoadBalancer: no adding ...
        k.ok(&["create", "service", "loadbalancer", "plain", "--tcp=80"]);
        let err = k.fails(&[
            "patch",
            "service",
            "plain",
            "-p",
            r#"{"spec":{"loadBalancerClass":"example.com/lb"}}"#,
        ]);
        assert!(
            err.contains(&invalid("plain", "\"example.com/lb\"")),
            "{err}"
        );
        // ... no removing ...
        let classy = k.file("classy.yaml", &manifest("classy", "LoadBalancer"));
        let out = k.ok(&["create", "-f", &classy]);
        assert_eq!(out.trim(), "service/classy created");
        let err = k.fails(&[
            "patch",
            "service",
            "classy",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/spec/loadBalancerClass"}]"#,
        ]);
        assert!(err.contains(&invalid("classy", "\"null\"")), "{err}");
        // ... no changing.
        let err = k.fails(&[
            "patch",
            "service",
            "classy",
            "-p",
            r#"{"spec":{"loadBalancerClass":"other.example/lb"}}"#,
        ]);
        assert!(
            err.contains(&invalid("classy", "\"other.example/lb\"")),
            "{err}"
        );
        let svc = k.json(&["get", "service", "classy"]);
        assert_eq!(svc["spec"]["loadBalancerClass"], "example.com/lb");

        // Set together with the change from ClusterIP to LoadBalancer.
        k.ok(&["create", "service", "clusterip", "grows", "--tcp=80"]);
        let out = k.ok(&[
            "patch",
            "service",
            "grows",
            "-p",
            r#"{"spec":{"type":"LoadBalancer","loadBalancerClass":"example.com/lb"}}"#,
        ]);
        assert_eq!(out.trim(), "service/grows patched");
        let svc = k.json(&["get", "service", "grows"]);
        assert_eq!(svc["spec"]["type"], "LoadBalancer");
        assert_eq!(svc["spec"]["loadBalancerClass"], "example.com/lb");

        // Never on a ClusterIP Service.
        let cip = k.file("cip.yaml", &manifest("cip", "ClusterIP"));
        let err = k.fails(&["create", "-f", &cip]);
        assert!(
            err.contains(
                "The Service \"cip\" is invalid: spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'"
            ),
            "{err}"
        );
        k.fails(&["get", "service", "cip"]);
    });
}
