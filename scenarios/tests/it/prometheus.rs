//! `deploy/prometheus/alerts.yaml` and `deploy/grafana/cloudscale-ccm.json` held to the CCM:
//!
//! - every metric name in their expressions is a family the CCM exports
//!   (`ccm::metrics::FAMILIES`), and every label its selectors use is one the family has
//!   (found by a small PromQL tokenizer, [`selectors`]);
//! - every alert has a severity and annotations, and deploy/README.md's table lists it;
//! - the Helm chart's PrometheusRule holds exactly the rules of alerts.yaml (rendered with
//!   `CHART_RENDER`, as `deploy.rs` does; skipped, saying so, without it);
//! - live: a real Prometheus (Debian's package, which ci/test installs; skipped, saying so,
//!   without the binary) scrapes a testbed's CCM every second with alerts.yaml loaded, and
//!   its HTTP API (<https://prometheus.io/docs/prometheus/latest/querying/api/>) shows the
//!   target up, every rule loaded and evaluated without error, every alert expression and
//!   dashboard query answered, the rules' metrics live, and no alert pending or firing.

use ccm::metrics::{FAMILIES, Family, Kind};
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed, web_service};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Families whose series exist only in trouble, so a healthy testbed has none: the wrong
/// API root's gauge, a series while the root is wrong (ccm/src/metrics/families.rs).
const TROUBLE_ONLY: &[&str] = &["cloudscale_api_root_wrong"];

/// Alerts that may be pending or firing on the healthy testbed, and why.
const MAY_ALERT: &[(&str, &str)] = &[(
    "CloudscaleCCMMemoryNearLimit",
    "the in-process CCM's process_* metrics are the test binary's, whose resident memory \
     holds the testbed and the other tests running alongside",
)];

fn alerts_path() -> String {
    format!("{ROOT}/deploy/prometheus/alerts.yaml")
}

fn alerts() -> Value {
    let text = std::fs::read_to_string(alerts_path()).expect("deploy/prometheus/alerts.yaml");
    serde_yaml_ng::from_str(&text).expect("alerts.yaml parses")
}

/// Every rule of alerts.yaml.
fn rules() -> Vec<Value> {
    let groups = alerts()["groups"].as_array().cloned().expect("groups");
    let rules = groups.iter().map(|g| g["rules"].as_array().cloned());
    rules.flat_map(|r| r.expect("rules")).collect()
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().trim().to_string()
}

/// (alert name, expression) of every rule.
fn alert_rules() -> Vec<(String, String)> {
    rules()
        .iter()
        .map(|r| (text(&r["alert"]), text(&r["expr"])))
        .collect()
}

/// (panel title, expression) of every query of the dashboard, rows' nested panels included.
fn dashboard_queries() -> Vec<(String, String)> {
    let path = format!("{ROOT}/deploy/grafana/cloudscale-ccm.json");
    let json = std::fs::read_to_string(&path).expect("the dashboard");
    fn walk(panels: &Value, out: &mut Vec<(String, String)>) {
        for p in panels.as_array().into_iter().flatten() {
            for t in p["targets"].as_array().into_iter().flatten() {
                out.push((text(&p["title"]), text(&t["expr"])));
            }
            walk(&p["panels"], out);
        }
    }
    let (doc, mut out): (Value, _) = (serde_json::from_str(&json).expect("JSON"), Vec::new());
    walk(&doc["panels"], &mut out);
    out
}

/// PromQL words that are not metric names, and those followed by a list of label names.
const KEYWORDS: &str = "and or unless bool offset inf nan";
const GROUPING: &str = "by without on ignoring group_left group_right";

/// The metric names of a PromQL expression, each with the label names its matchers use.
/// A metric name is an identifier outside matchers `{...}`, ranges `[...]`, strings,
/// comments and grouping lists (`by (...)`), neither a keyword nor followed by `(` (a
/// function) or `by`/`without` (an aggregation). Grafana's `$variables` are skipped.
fn selectors(expr: &str) -> BTreeMap<String, BTreeSet<String>> {
    let c: Vec<char> = expr.chars().collect();
    let ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':';
    let quote = |ch: char| matches!(ch, '"' | '\'' | '`');
    // The index after what closes the bracket or string opening at `i`.
    let close = |i: usize, end: char| {
        let (string, mut open) = (quote(end), quote(end).then_some(end));
        let mut j = i + 1;
        while j < c.len() {
            match open {
                Some(q) if c[j] == '\\' && q != '`' => j += 1,
                Some(q) if c[j] == q && string => return j + 1,
                Some(q) if c[j] == q => open = None,
                Some(_) => {}
                None if c[j] == end => return j + 1,
                None if quote(c[j]) => open = Some(c[j]),
                None => {}
            }
            j += 1;
        }
        c.len()
    };
    let word_end = |i: usize| (i..c.len()).find(|&j| !ident(c[j])).unwrap_or(c.len());
    let (mut out, mut i, mut labels_next) = (BTreeMap::new(), 0, false);
    while i < c.len() {
        match c[i] {
            '{' => i = close(i, '}'),
            '[' => i = close(i, ']'),
            '(' if labels_next => (i, labels_next) = (close(i, ')'), false),
            q if quote(q) => i = close(i, q),
            '#' => i = (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len()),
            '$' => i = word_end(i + 1),
            // A number or a duration (`0.9`, `1e3`, `5m`).
            ch if ch.is_ascii_digit() || ch == '.' => i = word_end(i + 1).max(i + 1),
            ch if ident(ch) => {
                let end = word_end(i);
                let word: String = c[i..end].iter().collect();
                let rest: String = c[end..].iter().collect();
                let rest = rest.trim_start();
                let before = |k: &str| rest.strip_prefix(k).is_some_and(|r| !r.starts_with(ident));
                let aggregation = before("by") || before("without");
                if GROUPING.split(' ').any(|k| k == word) {
                    labels_next = true;
                } else if !rest.starts_with('(')
                    && !aggregation
                    && !KEYWORDS.split(' ').any(|k| k == word.to_lowercase())
                {
                    let labels: &mut BTreeSet<String> = out.entry(word).or_default();
                    if c.get(end) == Some(&'{') {
                        // `l="v", m=~"w"`: the label names before each operator.
                        let block: String = c[end + 1..close(end, '}') - 1].iter().collect();
                        let outside_strings = block.split('"').step_by(2);
                        let name = |p: &str| p.trim().chars().take_while(|&c| ident(c)).collect();
                        let names = outside_strings.flat_map(|p| p.split(',')).map(name);
                        labels.extend(names.filter(|l: &String| !l.is_empty()));
                    }
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

/// The family a series name belongs to (a histogram's by its `_bucket`, `_sum`, `_count`).
fn family_of(name: &str) -> Option<&'static Family> {
    let base = ["_bucket", "_sum", "_count"].map(|s| name.strip_suffix(s));
    let histogram = |f: &Family| f.kind == Kind::Histogram && base.contains(&Some(f.name));
    FAMILIES.iter().find(|f| f.name == name || histogram(f))
}

#[test]
fn the_tokenizer_finds_metric_names_and_their_labels() {
    let found = selectors(
        r#"sum by (code, endpoint) (rate(a_total{code=~"5..|<error>", x="}"}[$__rate_interval]))
           / ignoring (x) group_left b offset 5m > 0.9 * 1e3 and on (instance, job) c_info
           unless BOOL d{} # e_comment"#,
    );
    let labels = |n: &str| found[n].iter().cloned().collect::<Vec<_>>().join(",");
    let all: Vec<_> = found
        .keys()
        .map(|n| format!("{n}{{{}}}", labels(n)))
        .collect();
    assert_eq!(all, ["a_total{code,x}", "b{}", "c_info{}", "d{}"]);
    let names = |e: &str| selectors(e).into_keys().collect::<Vec<_>>();
    let e = "histogram_quantile(0.99, sum(rate(h_bucket[5m])) by (le)) or vector($limit)";
    assert_eq!(names(e), ["h_bucket"]);
    let e = r#"time() - label_replace(s, "d", "$1", "l", "(.*)")"#;
    assert_eq!(names(e), ["s"]);
    assert!(family_of("cloudscale_api_request_duration_seconds_bucket").is_some());
    assert!(family_of("cloudscale_api_requests_total_bucket").is_none());
}

#[test]
fn every_metric_of_the_alerts_and_the_dashboard_is_exported_with_its_labels() {
    let (rules, queries) = (alert_rules(), dashboard_queries());
    assert!(rules.len() >= 15, "few alerts in alerts.yaml: {rules:?}");
    assert!(queries.len() >= 20, "few dashboard queries: {queries:?}");
    let (mut problems, mut shown) = (Vec::new(), BTreeSet::new());
    let files = rules.iter().map(|r| ("alerts.yaml", r));
    for (file, (what, expr)) in files.chain(queries.iter().map(|q| ("the dashboard", q))) {
        let found = selectors(expr);
        if found.is_empty() && !expr.starts_with("vector(") {
            problems.push(format!("{file}, {what}: no metric in `{expr}`"));
        }
        for (name, labels) in found {
            let Some(f) = family_of(&name) else {
                problems.push(format!("{file}, {what}: `{name}` is not exported"));
                continue;
            };
            shown.insert(f.name);
            // The scrape adds job and instance; a histogram's buckets have le.
            let known = |l: &&String| ["job", "instance", "le"].contains(&l.as_str());
            for l in labels
                .iter()
                .filter(|l| !known(l) && !f.labels.contains(&l.as_str()))
            {
                problems.push(format!("{file}, {what}: `{name}` has no label `{l}`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let unshown = FAMILIES
        .iter()
        .map(|f| f.name)
        .filter(|n| !shown.contains(n));
    let unshown: Vec<_> = unshown.collect();
    assert!(unshown.is_empty(), "families on no panel: {unshown:?}");
}

#[test]
fn every_alert_is_annotated_and_in_the_manual() {
    let mut want = BTreeSet::new();
    for r in rules() {
        let severity = text(&r["labels"]["severity"]);
        assert!(
            ["warning", "critical"].contains(&severity.as_str()),
            "{r:#}"
        );
        let long = |k: &str| text(&r["annotations"][k]).len() > 20;
        assert!(long("summary") && long("description"), "{r:#}");
        want.insert((text(&r["alert"]), severity));
    }
    let md = std::fs::read_to_string(format!("{ROOT}/deploy/README.md")).expect("the manual");
    let rows = md
        .lines()
        .filter_map(|l| l.strip_prefix("| `Cloudscale")?.split_once("` | "));
    let rows = rows.map(|(name, rest)| (name, rest.split(" | ").next().unwrap_or_default()));
    let listed: BTreeSet<_> = rows
        .map(|(n, s)| (format!("Cloudscale{n}"), s.into()))
        .collect();
    assert_eq!(
        listed, want,
        "deploy/README.md's table of alerts, and alerts.yaml"
    );
}

#[test]
fn the_chart_prometheus_rule_holds_the_rules_of_alerts_yaml() {
    let cmd = std::env::var("CHART_RENDER").unwrap_or_default();
    let cmd: Vec<&str> = cmd.split_whitespace().collect();
    if cmd.is_empty() {
        let why = "CHART_RENDER is not set (ci/test sets it, see deploy/chart/README.md)";
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the chart's PrometheusRule: {why}"
        );
        return;
    }
    let render = |sets: &[&str]| -> Option<Value> {
        let chart = format!("{ROOT}/deploy/chart");
        let mut command = Command::new(cmd[0]);
        command
            .args(&cmd[1..])
            .args([chart.as_str(), "-n", "kube-system", "--strict"]);
        let out = command
            .args(sets.iter().flat_map(|s| ["--set", s]))
            .output();
        let out = out.expect("CHART_RENDER runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut docs = serde_yaml_ng::Deserializer::from_str(&text).map(Value::deserialize);
        docs.find_map(|d| d.ok().filter(|d| d["kind"] == "PrometheusRule"))
    };
    assert_eq!(render(&[]), None, "a PrometheusRule by default");
    let on = [
        "prometheusRule.enabled=true",
        "prometheusRule.labels.release=a",
    ];
    let rule = render(&on).expect("a PrometheusRule");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["metadata"]["namespace"], "kube-system");
    assert_eq!(rule["metadata"]["labels"]["release"], "a");
    assert!(
        rule["spec"] == alerts(),
        "deploy/chart/templates/prometheusrule.yaml's rules are not alerts.yaml's:\n{:#}",
        rule["spec"]
    );
}

// ---------------------------------------------------------------------------------------
// Live

/// Prometheus, killed (and its directory removed) when dropped; its log shown on a failure.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    api: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
            let _ = writeln!(std::io::stderr(), "prometheus' log:\n{log}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Prometheus {
    /// Starts `bin` on a free loopback port, scraping `target` and evaluating alerts.yaml
    /// every second.
    fn start(bin: PathBuf, target: std::net::SocketAddr) -> Prometheus {
        let dir = std::env::temp_dir().join(format!("prometheus-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let config = format!(
            "global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}\n\
             rule_files: [{:?}]\n\
             scrape_configs: [{{job_name: ccm, static_configs: [{{targets: [{:?}]}}]}}]\n",
            alerts_path(),
            target.to_string()
        );
        std::fs::write(dir.join("prometheus.yml"), config).expect("prometheus.yml");
        let free = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr());
        let port = free.expect("a free port").port();
        let log = std::fs::File::create(dir.join("log")).expect("a log file");
        let child = Command::new(bin)
            .arg(format!("--config.file={}/prometheus.yml", dir.display()))
            .arg(format!("--storage.tsdb.path={}/data", dir.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let api = format!("http://127.0.0.1:{port}/api/v1");
        Prometheus { child, dir, api }
    }

    /// GET `path?query` of the API: its `data`, or the error it answered (a bad query is
    /// a 400 with a JSON body) or met.
    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, String> {
        let mut url = format!("{}/{path}?", self.api);
        let start = url.len();
        form_urlencoded::Serializer::for_suffix(&mut url, start).extend_pairs(query);
        let err = |e: reqwest::Error| e.to_string();
        let body: Value = reqwest::get(url)
            .await
            .map_err(err)?
            .json()
            .await
            .map_err(err)?;
        match body["status"].as_str() {
            Some("success") => Ok(body["data"].clone()),
            _ => Err(format!("{}: {}", body["errorType"], body["error"])),
        }
    }

    /// The instant vector `expr` evaluates to now.
    async fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let data = self.get("query", &[("query", expr)]).await?;
        Ok(data["result"].as_array().cloned().unwrap_or_default())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_prometheus_evaluates_the_alerts_and_the_dashboard_on_the_testbed() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = std::env::split_paths(&path).map(|d| d.join("prometheus"));
    let Some(bin) = on_path.into_iter().find(|p| p.is_file()) else {
        let why = "no prometheus on the PATH (ci/test installs Debian's prometheus package)";
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the live Prometheus check: {why}"
        );
        return;
    };
    // A converged LoadBalancer Service: the API, reconcile, queue and Event series exist.
    let bed = CcmBed::start_default().await;
    bed.create_converged(&web_service(json!({})), 2).await;
    let started = bed.ccm.as_ref().and_then(|c| c.started());
    let target = started.and_then(|s| s.0).expect("the CCM's address");
    let prom = Prometheus::start(bin, target);
    let limit = Duration::from_secs(60);

    // Three scrapes (rate() needs two samples), then an evaluation of the rules after them.
    let scraped_at = eventually("three scrapes of the CCM", limit, || async {
        let v = prom.query("count_over_time(up[1m]) >= 3").await;
        v.ok()?.first()?["value"][0].as_f64()
    })
    .await;
    let groups = eventually("an evaluation of the rules after them", limit, || async {
        let groups = prom.get("rules", &[]).await.ok()?["groups"]
            .as_array()?
            .clone();
        let evaluated = |g: &Value| {
            let t = chrono::DateTime::parse_from_rfc3339(g["lastEvaluation"].as_str()?).ok()?;
            Some(t.timestamp_millis() as f64 / 1000.0 > scraped_at)
        };
        groups
            .iter()
            .all(|g| evaluated(g) == Some(true))
            .then_some(groups)
    })
    .await;
    let targets = prom.get("targets", &[]).await.expect("/api/v1/targets");
    let active = &targets["activeTargets"];
    let one = active.as_array().map(Vec::len) == Some(1);
    assert!(
        one && active[0]["health"] == "up",
        "the target: {targets:#}"
    );

    // Every rule of alerts.yaml loaded and evaluated without error, none pending or firing.
    let rules = groups.iter().flat_map(|g| g["rules"].as_array().cloned());
    let rules: Vec<Value> = rules.flatten().collect();
    let file = alert_rules();
    let loaded: BTreeSet<String> = rules.iter().map(|r| text(&r["name"])).collect();
    assert_eq!(
        loaded,
        file.iter().map(|(n, _)| n.clone()).collect(),
        "the rules loaded"
    );
    let mut alerting = Vec::new();
    for r in &rules {
        assert_eq!(r["health"], "ok", "{}: {}", r["name"], r["lastError"]);
        if r["state"] != "inactive" {
            let may = MAY_ALERT.iter().any(|(n, _)| r["name"] == *n);
            assert!(may, "an alert on a healthy testbed: {r:#}");
            alerting.push(format!("{} ({})", r["name"], r["state"]));
        }
    }

    // Every alert expression and dashboard query is answered without error, the dashboard's
    // variables filled in as Grafana does (`$__rate_interval`: four scrape intervals at least).
    for (name, expr) in &file {
        let answer = prom.query(expr).await;
        answer.unwrap_or_else(|e| panic!("{name}: `{expr}`: {e}"));
    }
    let vars = [("$__rate_interval", "1m"), ("$memory_limit", "268435456")];
    let vars = vars
        .into_iter()
        .chain([("$instance", ".*"), ("$job", "ccm")]);
    let vars: Vec<_> = vars.collect();
    let (queries, mut with_data) = (dashboard_queries(), 0);
    for (panel, expr) in &queries {
        let q = vars.iter().fold(expr.clone(), |q, (k, v)| q.replace(k, v));
        assert!(
            !q.contains('$'),
            "{panel}: a variable the test does not fill: {q}"
        );
        let answer = prom.query(&q).await;
        with_data += usize::from(
            !answer
                .unwrap_or_else(|e| panic!("{panel}: {q}: {e}"))
                .is_empty(),
        );
    }

    // The rules' metrics have live series, but for those that exist only in trouble.
    let names = file.iter().flat_map(|(_, e)| selectors(e).into_keys());
    let (names, mut live): (BTreeSet<String>, _) = (names.collect(), Vec::new());
    for name in &names {
        let series = prom.query(&format!("count({name})")).await.expect("count");
        if TROUBLE_ONLY.contains(&name.as_str()) {
            assert!(family_of(name).is_some(), "{name}: not a family of the CCM");
            assert!(
                series.is_empty(),
                "{name} is live when healthy: not TROUBLE_ONLY"
            );
        } else {
            assert!(!series.is_empty(), "{name}: no live series in Prometheus");
            live.push(name.as_str());
        }
    }
    println!(
        "{} rules loaded, health ok, pending or firing: {alerting:?}; {} alert expressions and \
         {} dashboard queries evaluated ({with_data} with data); the rules' metrics live: \
         {live:?}; trouble only: {TROUBLE_ONLY:?}",
        rules.len(),
        file.len(),
        queries.len(),
    );
}
