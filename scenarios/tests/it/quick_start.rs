//! The README's quick start, run as written: every command line of its ```` ```sh ````
//! blocks is classified in [`COMMANDS`] (run here, with what its output must contain; the
//! testbed it starts; or not run here, with the reason). A command missing from the list,
//! or an entry no command matches, fails. The commands run in the README's order with
//! `sh -c`, in a scratch directory where the testbed binary (`cargo run … --bin testbed`,
//! built by this package) writes `target/testbed/kubeconfig`, as it does in a checkout.
//! The prose's claims are checked too: the Service gets its EXTERNAL-IP (the README says
//! within about 15 s; the time is printed, not asserted), and the annotation costs about
//! 10 s of "no listener" on each VIP in fakecloud's availability oracle.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const TESTBED: &str = env!("CARGO_BIN_EXE_testbed");
/// Upper bound for anything the quick start waits for.
const LIMIT: Duration = Duration::from_secs(90);

#[derive(Debug, Clone, Copy)]
enum Here {
    /// Runs here; it must succeed and its stdout contain each of these.
    Run(&'static [&'static str]),
    /// Starts the testbed, which runs until the test ends.
    Testbed,
    /// Cannot run here as written, and why (and what the test does instead).
    Not(&'static str),
}

const COMMANDS: &[(&str, Here)] = &[
    (
        "cargo run --release -p scenarios --bin testbed -- --nodes 3",
        Here::Testbed,
    ),
    (
        "export KUBECONFIG=target/testbed/kubeconfig",
        Here::Run(&[]),
    ),
    (
        "kubectl create deployment web --image=nginx --replicas=3",
        Here::Run(&["deployment.apps/web created"]),
    ),
    (
        "kubectl rollout status deployment web",
        Here::Run(&["successfully rolled out"]),
    ),
    (
        "kubectl expose deployment web --type LoadBalancer --port 80",
        Here::Run(&["service/web exposed"]),
    ),
    (
        "kubectl get service web --watch",
        Here::Not(
            "watches until Ctrl-C; the test polls `kubectl get service web` until its EXTERNAL-IP shows",
        ),
    ),
    (
        "kubectl describe service web",
        Here::Run(&[
            "EnsuringLoadBalancer",
            "WaitingForLoadBalancer",
            "EnsuredLoadBalancer",
        ]),
    ),
    (
        "kubectl get pods -o wide; kubectl get endpointslices",
        Here::Run(&["Running", "node-1", "web-"]),
    ),
    (
        "kubectl annotate service web k8s.cloudscale.ch/loadbalancer-pool-algorithm=least_connections",
        Here::Run(&["service/web annotated"]),
    ),
    (
        "ci/test",
        Here::Not("the whole test suite, this test among it"),
    ),
    (
        "cargo test -p scenarios --test it kubectl::",
        Here::Not("a part of the test suite this test belongs to"),
    ),
    (
        "cargo run --release -p scenarios --bin sim -- --schedules 200",
        Here::Not("ci/test runs the simulation (2,000 schedules)"),
    ),
];

/// The command lines of the quick start's `sh` blocks, comments removed.
fn quick_start_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README.md");
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Quick start"))
        .expect("a Quick start section");
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in section.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            l if in_sh && !l.is_empty() => {
                let command = l.split(" #").next().unwrap_or(l).trim();
                out.push(command.to_string());
            }
            _ => {}
        }
    }
    out
}

fn classify(command: &str) -> Here {
    COMMANDS
        .iter()
        .find(|(c, _)| *c == command)
        .map(|(_, h)| *h)
        .unwrap_or_else(|| {
            panic!("the README's quick start command {command:?} is not in COMMANDS")
        })
}

#[test]
fn every_command_of_the_quick_start_is_classified() {
    let commands = quick_start_commands();
    for c in &commands {
        classify(c);
    }
    for (c, _) in COMMANDS {
        assert!(
            commands.iter().any(|x| x == c),
            "COMMANDS lists {c:?}, which the README's quick start no longer has"
        );
    }
}

/// The testbed binary, killed when the test ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A testbed started by the quick start, with what its banner names.
struct Testbed {
    _running: Running,
    cloud: String,
    ccm_log: PathBuf,
    /// The CCM's own kubeconfig (its ServiceAccount), as the banner names it.
    ccm_kubeconfig: PathBuf,
}

/// Starts the testbed in `dir` with the quick start's arguments; returns it with fakecloud's
/// URL and the CCM's log, read off its banner once it says it is ready.
fn start_testbed(dir: &Path, command: &str) -> Testbed {
    let args: Vec<&str> = command
        .split_once(" -- ")
        .map(|(_, a)| a.split_whitespace().collect())
        .unwrap_or_default();
    let mut child = Command::new(TESTBED)
        .args(&args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the testbed");
    let stdout = child.stdout.take().expect("stdout");
    let running = Running(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (mut cloud, mut ccm_log, mut ccm_kubeconfig) = (None, None, None);
    let deadline = Instant::now() + LIMIT;
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the testbed prints its banner");
        if let Some(rest) = line.strip_prefix("fakecloud: ") {
            cloud = rest.split_whitespace().next().map(str::to_string);
        }
        if let Some((_, path)) = line.split_once("its log (info): ") {
            ccm_log = Some(dir.join(path));
        }
        if let Some((_, rest)) = line.split_once("RBAC of deploy/config.yml): ") {
            ccm_kubeconfig = rest.split(';').next().map(|p| dir.join(p));
        }
        if line.starts_with("Ctrl-C to stop") {
            break;
        }
    }
    Testbed {
        _running: running,
        cloud: cloud.expect("the banner names fakecloud's URL"),
        ccm_log: ccm_log.expect("the banner names the CCM's log"),
        ccm_kubeconfig: ccm_kubeconfig.expect("the banner names the CCM's kubeconfig"),
    }
}

fn run(dir: &Path, command: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("KUBECONFIG", "target/testbed/kubeconfig")
        .output()
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{command} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Polls `f` until it gives a value, at most [`LIMIT`].
fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn get_json(url: &str) -> Option<Value> {
    let out = Command::new("curl").args(["-sf", url]).output().ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

/// Down intervals of `reason` since `from` (virtual), per entry address, from fakecloud's
/// oracle, in seconds; only intervals that have ended.
fn down_for(cloud: &str, from: &str, reason: &str) -> Vec<(String, f64)> {
    let state = get_json(&format!("{cloud}/_fake/state")).unwrap_or_default();
    let Some(uuid) = state["load_balancers"][0]["uuid"].as_str() else {
        return Vec::new();
    };
    let av = get_json(&format!(
        "{cloud}/_fake/load-balancers/{uuid}/availability?from={from}"
    ))
    .unwrap_or_default();
    let to = av["to"].as_str().unwrap_or_default().to_string();
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_default()).ok();
    let mut out = Vec::new();
    for entry in av["entries"].as_array().into_iter().flatten() {
        for d in entry["down"].as_array().into_iter().flatten() {
            let ended = d["to"].as_str() != Some(to.as_str());
            if let (true, true, Some(a), Some(b)) =
                (d["reason"] == reason, ended, at(&d["from"]), at(&d["to"]))
            {
                let secs = (b - a).num_milliseconds() as f64 / 1000.0;
                out.push((entry["address"].to_string(), secs));
            }
        }
    }
    out
}

#[test]
fn the_quick_start_runs_as_written() {
    let dir: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join("quick-start");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let mut testbed: Option<Testbed> = None;
    let mut annotated_at = None;
    for command in quick_start_commands() {
        if command.starts_with("kubectl annotate")
            && let Some(tb) = &testbed
        {
            let clock = get_json(&format!("{}/_fake/clock", tb.cloud)).unwrap_or_default();
            annotated_at = clock["now"].as_str().map(str::to_string);
        }
        match classify(&command) {
            Here::Testbed => testbed = Some(start_testbed(&dir, &command)),
            Here::Not(why) => eprintln!("not run: {command}: {why}"),
            Here::Run(wanted) => {
                assert!(testbed.is_some(), "{command} needs the testbed");
                let out = run(&dir, &command);
                for w in wanted {
                    assert!(out.contains(w), "{command}: no {w:?} in\n{out}");
                }
                eprintln!("ran: {command}");
            }
        }
        if command.starts_with("kubectl expose") {
            let started = Instant::now();
            poll("the Service's EXTERNAL-IP", || {
                let ip = run(
                    &dir,
                    "kubectl get service web -o jsonpath='{.status.loadBalancer.ingress[0].ip}'",
                );
                (!ip.trim().is_empty()).then_some(())
            });
            eprintln!("EXTERNAL-IP after {:.1?}", started.elapsed());
        }
    }
    let tb = testbed.expect("the quick start starts the testbed");
    let cloud = tb.cloud.clone();
    // The CCM's log file the banner names: info lines naming the Service, plain text.
    let log = std::fs::read_to_string(&tb.ccm_log).expect("the CCM's log");
    assert!(
        log.lines()
            .any(|l| l.contains(" INFO ") && l.contains("default/web")),
        "{}: no info line naming default/web:\n{log}",
        tb.ccm_log.display()
    );
    assert!(!log.contains('\u{1b}'), "no terminal colour codes: {log}");
    // Every line about a load balancer's steps or the cloud writes done for it names the
    // Service it serves.
    for l in log.lines() {
        if l.contains("load balancer step") || l.contains("cloudscale API write") {
            assert!(l.contains("service=default/web"), "no Service named: {l}");
        }
    }
    // The in-process CCM holds the leader Lease, as a deployed one would: a CCM an operator
    // starts beside it stands by. It runs as the ServiceAccount whose kubeconfig the banner
    // names.
    let holder = run(
        &dir,
        "kubectl -n kube-system get lease cloud-controller-manager -o jsonpath='{.spec.holderIdentity}'",
    );
    assert!(!holder.trim().is_empty(), "no leader in the Lease");
    let denied = run(
        &dir,
        &format!(
            "kubectl --kubeconfig {} -n kube-system get secrets 2>&1 || true",
            tb.ccm_kubeconfig.display()
        ),
    );
    assert!(
        denied.contains(
            "User \"system:serviceaccount:kube-system:cloudscale-cloud-controller-manager\" cannot list"
        ),
        "{denied}"
    );
    let from = annotated_at.expect("the quick start annotates the Service");
    // The annotation's downtime, as the prose says: about 10 s without a listener per VIP.
    let down = poll("the listener recreation's downtime", || {
        let d = down_for(&cloud, &from, "no listener");
        (d.len() >= 2 && d.iter().all(|(_, s)| *s > 0.0)).then_some(d)
    });
    for (address, secs) in &down {
        assert!(
            (5.0..=15.0).contains(secs),
            "{address}: {secs} s without a listener; the README says about 10 s"
        );
    }
}
