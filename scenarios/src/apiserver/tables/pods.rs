//! The Pod printer of `pkg/printers/internalversion`: the ready count, the status reason
//! (from the init containers, then the containers), the restarts and the readiness gates.

use super::{arr, human_duration, or_none, s};
use chrono::{DateTime, FixedOffset, Utc};
use serde_json::{Value, json};

pub(super) fn pod_cells(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = s(o, "/status/phase");
    let mut reason = match s(o, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    if arr(o, "/status/conditions")
        .iter()
        .any(|c| s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let init_specs = arr(o, "/spec/initContainers");
    let total = arr(o, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| s(c, "/restartPolicy") == "Always")
            .count();
    let mut tally = Tally::default();
    let (initializing, init_restarts) = tally.init_containers(o, init_specs, &mut reason);
    let initialized = arr(o, "/status/conditions")
        .iter()
        .any(|c| s(c, "/type") == "Initialized" && s(c, "/status") == "True");
    if !initializing || initialized {
        tally.restarts = init_restarts;
        tally.containers(o, &mut reason);
    }
    let deleting = o.pointer("/metadata/deletionTimestamp").is_some();
    if deleting && s(o, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let ip = arr(o, "/status/podIPs")
        .first()
        .map(|p| s(p, "/ip").to_string())
        .unwrap_or_else(|| s(o, "/status/podIP").to_string());
    vec![
        json!(format!("{}/{total}", tally.ready)),
        json!(reason),
        json!(tally.restarts_cell(now)),
        Value::Null,
        json!(or_none(&ip)),
        json!(or_none(s(o, "/spec/nodeName"))),
        json!(or_none(s(o, "/status/nominatedNodeName"))),
        json!(readiness_gates_cell(o)),
    ]
}

/// What the printer counts over a Pod's container statuses.
#[derive(Default)]
struct Tally {
    ready: usize,
    restarts: i64,
    last_restart: Option<DateTime<FixedOffset>>,
}

impl Tally {
    /// The restart count of container status `c`, noting when it last restarted.
    fn note_restart(&mut self, c: &Value) -> i64 {
        if let Ok(t) = DateTime::parse_from_rfc3339(s(c, "/lastState/terminated/finishedAt"))
            && self.last_restart.is_none_or(|l| l < t)
        {
            self.last_restart = Some(t);
        }
        c.get("restartCount").and_then(Value::as_i64).unwrap_or(0)
    }

    /// Goes through the init containers' statuses up to the first unfinished one, whose
    /// state becomes `reason`. Returns whether there is one, and the restarts of the
    /// restartable (sidecar) init containers, counted apart from the others'.
    fn init_containers(
        &mut self,
        o: &Value,
        init_specs: &[Value],
        reason: &mut String,
    ) -> (bool, i64) {
        let restartable = |name: &str| {
            init_specs
                .iter()
                .any(|c| s(c, "/name") == name && s(c, "/restartPolicy") == "Always")
        };
        let mut init_restarts = 0i64;
        for (i, c) in arr(o, "/status/initContainerStatuses").iter().enumerate() {
            let r = self.note_restart(c);
            if restartable(s(c, "/name")) {
                init_restarts += r;
                if c.get("started").and_then(Value::as_bool) == Some(true)
                    && c.get("ready").and_then(Value::as_bool) == Some(true)
                {
                    self.ready += 1;
                }
                continue;
            }
            self.restarts += r;
            if let Some(r) = init_container_reason(c, i, init_specs.len()) {
                *reason = r;
                return (true, init_restarts);
            }
        }
        (false, init_restarts)
    }

    /// Goes through the containers' statuses, the last one's state winning `reason`.
    fn containers(&mut self, o: &Value, reason: &mut String) {
        let mut has_running = false;
        for c in arr(o, "/status/containerStatuses").iter().rev() {
            let r = self.note_restart(c);
            self.restarts += r;
            let term = c.pointer("/state/terminated");
            let waiting = s(c, "/state/waiting/reason");
            if !waiting.is_empty() {
                *reason = waiting.to_string();
            } else if let Some(t) = term {
                *reason = terminated_reason(t, "");
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && c.pointer("/state/running").is_some()
            {
                has_running = true;
                self.ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = arr(o, "/status/conditions")
                .iter()
                .any(|c| s(c, "/type") == "Ready" && s(c, "/status") == "True");
            *reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }

    /// The restart count, with how long ago the last restart was.
    fn restarts_cell(&self, now: DateTime<Utc>) -> String {
        match self.last_restart {
            Some(t) if self.restarts != 0 => format!(
                "{} ({} ago)",
                self.restarts,
                human_duration(now.signed_duration_since(t.with_timezone(&Utc)))
            ),
            _ => self.restarts.to_string(),
        }
    }
}

/// The status of init container `i` of `count` unless it finished successfully.
fn init_container_reason(c: &Value, i: usize, count: usize) -> Option<String> {
    let waiting = s(c, "/state/waiting/reason");
    match c.pointer("/state/terminated") {
        Some(t) if t.get("exitCode").and_then(Value::as_i64).unwrap_or(0) == 0 => None,
        Some(t) => Some(terminated_reason(t, "Init:")),
        None if !waiting.is_empty() && waiting != "PodInitializing" => {
            Some(format!("Init:{waiting}"))
        }
        None => Some(format!("Init:{i}/{count}")),
    }
}

/// A terminated state's reason, else its exit code or signal, after `prefix`.
fn terminated_reason(t: &Value, prefix: &str) -> String {
    match s(t, "/reason") {
        "" => match t.get("signal").and_then(Value::as_i64).unwrap_or(0) {
            0 => format!(
                "{prefix}ExitCode:{}",
                t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
            ),
            sig => format!("{prefix}Signal:{sig}"),
        },
        r => format!("{prefix}{r}"),
    }
}

/// The readiness gates whose condition is true, of all, or `<none>`.
fn readiness_gates_cell(o: &Value) -> String {
    let gates = arr(o, "/spec/readinessGates");
    if gates.is_empty() {
        return "<none>".to_string();
    }
    let conditions = arr(o, "/status/conditions");
    let true_count = gates
        .iter()
        .filter(|g| {
            conditions
                .iter()
                .find(|c| s(c, "/type") == s(g, "/conditionType"))
                .is_some_and(|c| s(c, "/status") == "True")
        })
        .count();
    format!("{true_count}/{}", gates.len())
}
