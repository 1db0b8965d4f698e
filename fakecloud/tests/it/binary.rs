//! The `fakecloud` binary as a user runs it (fakecloud/README.md, "Run it"): start-up line,
//! tokens, seed files, start-up errors, signals and `--public-url`.
//!
//! Every test spawns the real binary; a guard kills it when the test ends, pass or fail.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_fakecloud");
/// How long start-up, a failing start or a signalled shutdown may take.
const DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crate lies in the workspace")
        .to_path_buf()
}

/// A running (or exited) `fakecloud` process; killed and reaped on drop.
struct Proc {
    child: Child,
    stdout: Receiver<String>,
    stdout_seen: Vec<String>,
    stderr: Option<JoinHandle<String>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Proc {
    /// Spawns the binary from the workspace root, without `RUST_BACKTRACE` in its
    /// environment unless `env` sets it.
    fn spawn(args: &[&str], env: &[(&str, &str)]) -> Proc {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(workspace_root())
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn fakecloud");
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Proc {
            child,
            stdout: rx,
            stdout_seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// The next stdout line, waiting at most until the deadline.
    fn next_line(&mut self) -> String {
        match self.stdout.recv_timeout(DEADLINE) {
            Ok(line) => {
                self.stdout_seen.push(line.clone());
                line
            }
            Err(RecvTimeoutError::Timeout) => panic!(
                "no stdout line within {DEADLINE:?}; seen so far: {:?}",
                self.stdout_seen
            ),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.wait_exit();
                let stderr = self.take_stderr();
                panic!(
                    "stdout closed ({status:?}); seen: {:?}; stderr: {stderr}",
                    self.stdout_seen
                )
            }
        }
    }

    /// Reads stdout until a line contains `needle`; returns all lines read so far.
    fn stdout_until(&mut self, needle: &str) -> Vec<String> {
        while !self.stdout_seen.iter().any(|l| l.contains(needle)) {
            self.next_line();
        }
        self.stdout_seen.clone()
    }

    /// Waits (bounded) for the process to exit.
    fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "fakecloud still running after {DEADLINE:?}"
            );
            std::thread::sleep(POLL);
        }
    }

    /// Everything written to stderr; call once the process has exited.
    fn take_stderr(&mut self) -> String {
        self.stderr
            .take()
            .map(|h| h.join().expect("stderr reader"))
            .unwrap_or_default()
    }

    fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args([sig, &self.pid()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {sig} failed");
    }
}

/// Parses `fakecloud listening on http://127.0.0.1:PORT` (exactly) into the base URL.
fn parse_listening_line(line: &str) -> String {
    let port = line
        .strip_prefix("fakecloud listening on http://127.0.0.1:")
        .unwrap_or_else(|| panic!("unexpected first stdout line: {line:?}"));
    let port: u16 = port
        .parse()
        .unwrap_or_else(|_| panic!("first line does not end in a port: {line:?}"));
    assert_ne!(port, 0, "the real port is printed, not 0");
    format!("http://127.0.0.1:{port}")
}

/// Spawns a server and returns it with its base URL read off the first stdout line.
fn start(args: &[&str]) -> (Proc, String) {
    let mut p = Proc::spawn(args, &[]);
    let first = p.next_line();
    let base = parse_listening_line(&first);
    (p, base)
}

async fn call(
    method: Method,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let http = reqwest::Client::new();
    let mut rb = http.request(method.clone(), url);
    if let Some(t) = token {
        rb = rb.bearer_auth(t);
    }
    if let Some(b) = body {
        rb = rb.json(&b);
    }
    let resp = rb
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = resp.status();
    let text = resp.text().await.expect("read body");
    let v = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, v)
}

/// Runs the binary with `args`, expects a quick non-zero exit, and returns stderr.
fn failing_start(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut p = Proc::spawn(args, env);
    let status = p.wait_exit();
    let stderr = p.take_stderr();
    assert!(
        !status.success(),
        "{args:?} must fail, exited {status:?}; stderr: {stderr}"
    );
    let lower = stderr.to_lowercase();
    assert!(
        !lower.contains("panicked"),
        "{args:?}: no panic expected: {stderr}"
    );
    stderr
}

/// The first non-empty stderr line, which must name the problem.
fn first_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("stderr is empty"))
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fakecloud-binary-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("write temp file");
    path
}

#[tokio::test]
async fn tokens_read_only_tokens_and_unknown_tokens() {
    let (_p, base) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--token",
        "a",
        "--token",
        "b",
        "--read-only-token",
        "r",
    ]);
    let servers = format!("{base}/v1/servers");
    let networks = format!("{base}/v1/networks");
    for token in ["a", "b"] {
        let (st, v) = call(Method::GET, &servers, Some(token), None).await;
        assert_eq!(st, StatusCode::OK, "GET with {token}: {v}");
        let body = json!({"name": format!("net-{token}")});
        let (st, v) = call(Method::POST, &networks, Some(token), Some(body)).await;
        assert_eq!(st, StatusCode::CREATED, "POST with {token}: {v}");
    }

    let (st, v) = call(Method::GET, &networks, Some("r"), None).await;
    assert_eq!(st, StatusCode::OK, "GET with the read-only token: {v}");
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
    let (st, v) = call(
        Method::POST,
        &networks,
        Some("r"),
        Some(json!({"name": "x"})),
    )
    .await;
    assert_eq!(
        st,
        StatusCode::FORBIDDEN,
        "POST with the read-only token: {v}"
    );

    for token in ["unknown", "fakecloud-token"] {
        let (st, v) = call(Method::GET, &servers, Some(token), None).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "GET with {token}: {v}");
    }
    let (st, v) = call(Method::GET, &servers, None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "GET without a token: {v}");
}

#[tokio::test]
async fn default_token_is_printed_and_accepted() {
    let (mut p, base) = start(&["--listen", "127.0.0.1:0"]);
    let out = p.stdout_until("fakecloud-token");
    assert!(
        out.iter().skip(1).any(|l| l.contains("fakecloud-token")),
        "stdout mentions the default token: {out:?}"
    );
    let (st, v) = call(
        Method::GET,
        &format!("{base}/v1/servers"),
        Some("fakecloud-token"),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v, json!([]));
}

#[tokio::test]
async fn example_seed_file_is_served() {
    let rel = "fakecloud/examples/seed.yaml";
    let text = std::fs::read_to_string(workspace_root().join(rel)).expect("read example seed");
    let seed = fakecloud::parse_seed(&text).expect("example seed parses");
    assert!(!seed.servers.is_empty());

    let (_p, base) = start(&["--listen", "127.0.0.1:0", "--seed", rel]);
    let (st, v) = call(
        Method::GET,
        &format!("{base}/v1/servers"),
        Some("fakecloud-token"),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let listed = v.as_array().expect("bare array");
    assert_eq!(listed.len(), seed.servers.len(), "{v}");
    for want in &seed.servers {
        let got = listed
            .iter()
            .find(|s| s["name"] == want.name.as_str())
            .unwrap_or_else(|| panic!("server {} is listed: {v}", want.name));
        let private: Vec<&str> = got["interfaces"]
            .as_array()
            .expect("interfaces")
            .iter()
            .filter(|i| i["type"] == "private")
            .flat_map(|i| i["addresses"].as_array().into_iter().flatten())
            .filter_map(|a| a["address"].as_str())
            .collect();
        assert_eq!(private.len(), want.private.len(), "{}: {got}", want.name);
        for (addr, spec) in private.iter().zip(&want.private) {
            match spec.address {
                Some(fixed) => assert_eq!(*addr, fixed.to_string(), "{}", want.name),
                None => assert!(addr.starts_with("10.100.0."), "{}: {addr}", want.name),
            }
        }
        if let Some(slug) = want
            .image
            .as_deref()
            .and_then(|i| i.strip_prefix("custom:"))
        {
            assert_eq!(got["image"]["slug"], format!("custom:{slug}"), "{got}");
        }
    }
    assert_seeded_storage_and_routers(&base, &seed, listed).await;
}

/// The names of a list's entries, in order.
fn names(list: &[Value]) -> Vec<&str> {
    list.iter().filter_map(|v| v["name"].as_str()).collect()
}

/// The example's custom images, volumes, snapshots and routers are served, settled
/// (fakecloud/README.md, "Seed files").
async fn assert_seeded_storage_and_routers(base: &str, seed: &fakecloud::Seed, servers: &[Value]) {
    let list = |path: &'static str| async move {
        let (st, v) = call(
            Method::GET,
            &format!("{base}/v1{path}"),
            Some("fakecloud-token"),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "GET {path}: {v}");
        v.as_array().cloned().unwrap_or_default()
    };
    assert!(!seed.custom_images.is_empty() && !seed.volumes.is_empty());
    assert!(!seed.volume_snapshots.is_empty() && !seed.routers.is_empty());
    let images = list("/custom-images").await;
    let want: Vec<&str> = seed.custom_images.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names(&images), want, "imported at once");
    let volumes = list("/volumes").await;
    for want in &seed.volumes {
        let got = volumes
            .iter()
            .find(|v| v["name"] == want.name.as_str())
            .unwrap_or_else(|| panic!("volume {} is listed", want.name));
        assert_eq!(got["size_gb"], want.size_gb, "{got}");
        if let Some(server) = &want.server {
            let uuid = servers
                .iter()
                .find(|s| s["name"] == server.as_str())
                .map(|s| s["uuid"].clone());
            assert_eq!(Some(got["server_uuids"][0].clone()), uuid, "{got}");
        }
    }
    let snapshots = list("/volume-snapshots").await;
    let want: Vec<&str> = seed
        .volume_snapshots
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names(&snapshots), want);
    assert!(
        snapshots.iter().all(|s| s["status"] == "available"),
        "{snapshots:?}"
    );
    let routers = list("/routers").await;
    for want in &seed.routers {
        let got = routers
            .iter()
            .find(|r| r["name"] == want.name.as_str())
            .unwrap_or_else(|| panic!("router {} is listed", want.name));
        assert_eq!(got["status"], "active", "{got}");
        assert_eq!(got["internet_gateway"], want.internet_gateway, "{got}");
        let interfaces = got["interfaces"].as_array().map_or(0, Vec::len);
        assert_eq!(interfaces, want.interfaces.len(), "{got}");
    }
}

#[test]
fn seed_file_with_a_bad_reference_fails_naming_the_entry() {
    let path = temp_file(
        "bad-ref.yaml",
        "servers:\n  - name: lonely\n    private:\n      - network: no-such-net\n",
    );
    let p = path.to_str().expect("utf-8 path");
    let stderr = failing_start(&["--listen", "127.0.0.1:0", "--seed", p], &[]);
    let line = first_line(&stderr);
    for needle in [p, "lonely", "no-such-net"] {
        assert!(line.contains(needle), "{needle:?} in {line:?}");
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn seed_file_error_is_a_plain_sentence() {
    let path = temp_file(
        "bad-ref-plain.yaml",
        "servers:\n  - name: lonely\n    private:\n      - network: no-such-net\n",
    );
    let p = path.to_str().expect("utf-8 path");
    let stderr = failing_start(&["--listen", "127.0.0.1:0", "--seed", p], &[]);
    let line = first_line(&stderr);
    assert!(!line.contains("BadRequest"), "no Debug output: {line}");
    assert!(!line.contains("\\\""), "no escaped quotes: {line}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn seed_file_with_an_unknown_key_fails_naming_the_key() {
    let path = temp_file(
        "bad-key.yaml",
        "servers:\n  - name: a\n    flavour: flex-4-2\n",
    );
    let p = path.to_str().expect("utf-8 path");
    let stderr = failing_start(&["--listen", "127.0.0.1:0", "--seed", p], &[]);
    let line = first_line(&stderr);
    assert!(line.contains(p), "{line}");
    assert!(line.contains("unknown field `flavour`"), "{line}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn missing_seed_file_fails_naming_the_file() {
    let stderr = failing_start(
        &[
            "--listen",
            "127.0.0.1:0",
            "--seed",
            "/nonexistent/seed.yaml",
        ],
        &[],
    );
    assert!(
        first_line(&stderr).contains("cannot read seed file /nonexistent/seed.yaml"),
        "{stderr}"
    );
}

#[test]
fn unknown_flag_fails_naming_the_flag() {
    let stderr = failing_start(&["--listen", "127.0.0.1:0", "--no-such-flag"], &[]);
    let line = first_line(&stderr);
    assert!(line.contains("unexpected argument"), "{line}");
    assert!(line.contains("--no-such-flag"), "{line}");
}

#[test]
fn time_scale_zero_is_refused() {
    let stderr = failing_start(&["--listen", "127.0.0.1:0", "--time-scale", "0"], &[]);
    let line = first_line(&stderr);
    assert!(
        line.contains("--time-scale must be a positive number, got 0"),
        "{line}"
    );
}

#[test]
fn listen_on_a_port_in_use_fails_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("local addr").to_string();
    let stderr = failing_start(&["--listen", &addr], &[]);
    let line = first_line(&stderr);
    assert!(line.contains(&format!("cannot listen on {addr}")), "{line}");
    assert!(
        stderr.to_lowercase().contains("address already in use"),
        "{stderr}"
    );
    drop(taken);
}

#[test]
fn startup_errors_print_no_backtrace_even_with_rust_backtrace_set() {
    let stderr = failing_start(
        &["--listen", "127.0.0.1:0", "--time-scale", "0"],
        &[("RUST_BACKTRACE", "1")],
    );
    assert!(
        !stderr.to_lowercase().contains("backtrace"),
        "no backtrace expected: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
}

fn exits_zero_on(sig: &str) {
    let (mut p, _base) = start(&["--listen", "127.0.0.1:0"]);
    p.stdout_until("admin API");
    p.signal(sig);
    let status = p.wait_exit();
    assert!(status.success(), "exit after {sig}: {status:?}");
    // The log goes to a pipe here, as to a file or a pod's log: plain text.
    let log = p.take_stderr();
    assert!(log.contains("shutting down"), "{log}");
    assert!(!log.contains('\u{1b}'), "no terminal colour codes: {log}");
}

#[test]
fn sigterm_exits_zero() {
    exits_zero_on("-TERM");
}

#[test]
fn sigint_exits_zero() {
    exits_zero_on("-INT");
}

#[tokio::test]
async fn public_url_is_the_base_of_hrefs() {
    let (_p, base) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--public-url",
        "https://fake.example",
    ]);
    let (st, net) = call(
        Method::POST,
        &format!("{base}/v1/networks"),
        Some("fakecloud-token"),
        Some(json!({"name": "n"})),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{net}");
    let href = net["href"].as_str().expect("href");
    assert_eq!(
        href,
        format!(
            "https://fake.example/v1/networks/{}",
            net["uuid"].as_str().expect("uuid")
        )
    );
    let (st, subnets) = call(
        Method::GET,
        &format!("{base}/v1/subnets"),
        Some("fakecloud-token"),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{subnets}");
    for s in subnets.as_array().expect("array") {
        for h in [&s["href"], &s["network"]["href"]] {
            let h = h.as_str().expect("href string");
            assert!(h.starts_with("https://fake.example/v1/"), "{h}");
        }
    }
}

#[test]
fn first_line_shows_the_bound_address_even_with_public_url() {
    let (_p, base) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--public-url",
        "https://fake.example",
    ]);
    assert!(base.starts_with("http://127.0.0.1:"));
}

#[tokio::test]
async fn rule_flags_set_the_api_rules() {
    let (_p, base) = start(&["--listen", "127.0.0.1:0"]);
    let (st, v) = call(Method::GET, &format!("{base}/_fake/rules"), None, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"duplicate_members": "strict", "non_http_monitor_http": "strict"}),
        "strict without flags"
    );

    let (_p, base) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--duplicate-members",
        "lenient",
        "--non-http-monitor-http",
        "lenient",
    ]);
    let (st, v) = call(Method::GET, &format!("{base}/_fake/rules"), None, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"duplicate_members": "lenient", "non_http_monitor_http": "lenient"})
    );

    // And the API follows them: a second member for the same address and port is created.
    let token = Some("fakecloud-token");
    let v1 = |path: &str| format!("{base}/v1{path}");
    let (st, net) = call(
        Method::POST,
        &v1("/networks"),
        token,
        Some(json!({"name": "n"})),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{net}");
    let subnet = net["subnets"][0]["uuid"].clone();
    let (st, lb) = call(
        Method::POST,
        &v1("/load-balancers"),
        token,
        Some(json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1"})),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{lb}");
    let (st, pool) = call(
        Method::POST,
        &v1("/load-balancers/pools"),
        token,
        Some(
            json!({"name": "p", "algorithm": "round_robin", "protocol": "tcp",
                    "load_balancer": lb["uuid"]}),
        ),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{pool}");
    let members = v1(&format!(
        "/load-balancers/pools/{}/members",
        pool["uuid"].as_str().expect("pool uuid")
    ));
    for monitor_port in [8001, 8002] {
        let body = json!({"name": "m", "address": "172.16.0.11", "protocol_port": 80,
                          "monitor_port": monitor_port, "subnet": subnet});
        let (st, v) = call(Method::POST, &members, token, Some(body)).await;
        assert_eq!(st, StatusCode::CREATED, "{v}");
    }
}

#[test]
fn bad_rule_flag_values_fail_naming_the_flag() {
    for flag in ["--duplicate-members", "--non-http-monitor-http"] {
        let stderr = failing_start(&["--listen", "127.0.0.1:0", flag, "sloppy"], &[]);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one line: {stderr}");
        assert!(
            lines[0].contains(flag) && lines[0].contains("sloppy"),
            "names the flag and the value: {stderr}"
        );
        assert!(lines[0].contains("strict or lenient"), "{stderr}");
    }
}

/// Under `--time-scale 100` an hour of virtual time passes in 36 real seconds. With the
/// default `--timestamps wall` a resource created after that hour is stamped near the wall
/// clock; with `--timestamps virtual` it is stamped an hour ahead, which clients comparing
/// timestamps with their own clock reject.
#[tokio::test]
async fn created_at_stays_near_wall_time_under_a_time_scale() {
    async fn created_at_after_an_hour(extra: &[&str]) -> (chrono::TimeDelta, Value) {
        let mut args = vec!["--listen", "127.0.0.1:0", "--time-scale", "100"];
        args.extend_from_slice(extra);
        let (_p, base) = start(&args);
        let (st, v) = call(
            Method::POST,
            &format!("{base}/_fake/clock/advance"),
            None,
            Some(json!({"seconds": 3600})),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{v}");
        let (st, net) = call(
            Method::POST,
            &format!("{base}/v1/networks"),
            Some("fakecloud-token"),
            Some(json!({"name": "n"})),
        )
        .await;
        assert_eq!(st, StatusCode::CREATED, "{net}");
        let stamped = net["created_at"]
            .as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .unwrap_or_else(|| panic!("created_at is RFC 3339: {net}"));
        let (_, clock) = call(Method::GET, &format!("{base}/_fake/clock"), None, None).await;
        (
            stamped.with_timezone(&chrono::Utc) - chrono::Utc::now(),
            clock,
        )
    }

    let (ahead, clock) = created_at_after_an_hour(&[]).await;
    assert_eq!(clock["timestamps"], "wall", "{clock}");
    assert!(
        ahead < chrono::TimeDelta::seconds(60),
        "wall timestamps: created_at is {ahead} ahead of the wall clock"
    );
    assert!(ahead > chrono::TimeDelta::seconds(-60), "{ahead}");
    let (ahead, clock) = created_at_after_an_hour(&["--timestamps", "virtual"]).await;
    assert_eq!(clock["timestamps"], "virtual", "{clock}");
    assert!(
        ahead > chrono::TimeDelta::seconds(3000),
        "virtual timestamps run an hour ahead: {ahead}"
    );
}

#[test]
fn an_unknown_timestamps_value_is_refused_naming_the_flag() {
    let stderr = failing_start(&["--listen", "127.0.0.1:0", "--timestamps", "local"], &[]);
    assert!(stderr.contains("--timestamps"), "{stderr}");
    assert!(stderr.contains("expected `wall` or `virtual`"), "{stderr}");
}

/// The flag table of fakecloud/README.md ("Run it") lists exactly the flags the binary
/// accepts, so a new flag cannot ship undocumented nor a removed one stay documented.
#[test]
fn the_readme_flag_table_lists_every_flag_of_help() {
    let out = Command::new(BIN)
        .arg("--help")
        .output()
        .expect("run fakecloud --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let flags = |text: &str, only_rows: bool| -> std::collections::BTreeSet<String> {
        text.lines()
            .filter(|l| !only_rows || l.starts_with("| `--"))
            .filter_map(|l| {
                let start = l.find("--")?;
                let name: String = l[start + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                    .collect();
                (!name.is_empty()).then_some(name)
            })
            .filter(|f| f != "help" && f != "version")
            .collect()
    };
    let readme = std::fs::read_to_string(workspace_root().join("fakecloud/README.md"))
        .expect("read fakecloud/README.md");
    let documented = flags(&readme, true);
    let accepted: std::collections::BTreeSet<String> = help
        .lines()
        .filter(|l| l.trim_start().starts_with("--") || l.trim_start().starts_with('-'))
        .flat_map(|l| flags(l, false))
        .collect();
    assert_eq!(documented, accepted, "README flag table vs --help");
}
