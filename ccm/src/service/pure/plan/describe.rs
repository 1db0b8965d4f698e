//! Plans in plain words: for the `plan` preview one line per step, `impact [port]: what`,
//! values shown as `old → new`; for the `PlannedChange` Event a one-line summary.

use super::super::model::{HttpCheck, Listener, Monitor};
use super::{Action, ListenerChanges, MonitorChanges, Plan};

pub(super) fn plan(p: &Plan) -> String {
    lines(p).join("\n")
}

/// The steps, refusals and warnings of [`plan`] on one line, separated by `; ` (an error
/// message, which Kubernetes shows as one row of `kubectl describe`).
pub(super) fn inline(p: &Plan) -> String {
    lines(p).join("; ")
}

fn lines(p: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    for s in &p.steps {
        let port = s
            .port
            .as_deref()
            .map(|p| format!(" [{p}]"))
            .unwrap_or_default();
        out.push(format!("{}{port}: {}", s.impact, action(&s.action)));
    }
    for r in &p.refusals {
        out.push(format!("refused: {} ({})", r.message, r.annotation));
    }
    for n in &p.notes {
        out.push(format!("warning: {} ({})", n.message, n.field));
    }
    out
}

/// The plan in one line, for the `PlannedChange` Event (pure): the worst impact, then each
/// port whose traffic the change touches with its worst impact (and whether its health
/// monitor is replaced: its members are checked anew), the steps that concern every port,
/// each floating IP taken from another holder, and how many steps there are; `plan --service
/// NAMESPACE/NAME` lists them. Kubernetes shows an Event's message as one row of `kubectl
/// describe`: a line per step broke it.
pub(super) fn summary(p: &Plan, service: &str) -> String {
    let mut ports: Vec<(&str, super::Impact, bool)> = Vec::new();
    let mut every = super::Impact::None;
    for s in &p.steps {
        let replaces = matches!(
            s.action,
            Action::CreateMonitor { .. } | Action::DeleteMonitor { .. }
        );
        match s.port.as_deref() {
            None => every = every.max(s.impact),
            Some(port) => match ports.iter_mut().find(|(name, _, _)| *name == port) {
                Some(entry) => {
                    entry.1 = entry.1.max(s.impact);
                    entry.2 |= replaces;
                }
                None => ports.push((port, s.impact, replaces)),
            },
        }
    }
    let mut parts: Vec<String> = ports
        .iter()
        .filter(|(_, impact, replaces)| *impact > super::Impact::None || *replaces)
        .map(|(port, impact, replaces)| {
            let monitor = if *replaces {
                " (health monitor replaced)"
            } else {
                ""
            };
            format!("{port} {impact}{monitor}")
        })
        .collect();
    if every > super::Impact::None {
        parts.push(format!("all ports {every}"));
    }
    // A floating IP taken from a server or another load balancer concerns more than this
    // Service: its holder is named here, not only in the step list.
    let taken: Vec<String> = p
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::AssignFloatingIp { from: Some(_), .. }))
        .map(|s| format!("; {}", action(&s.action)))
        .collect();
    let steps = p.steps.len();
    format!(
        "impact {}: {}{}; {steps} step{} (`cloudscale-cloud-controller-manager plan --service {service}` lists them)",
        p.steps_impact(),
        parts.join(", "),
        taken.concat(),
        if steps == 1 { "" } else { "s" }
    )
}

/// One action in plain words.
pub fn action(a: &Action) -> String {
    match a {
        Action::CreateLb { name, flavor, zone } => format!(
            "create load balancer {name} ({flavor}, {})",
            zone.as_deref()
                .map_or("zone chosen by the API".to_string(), |z| format!(
                    "zone {z}"
                ))
        ),
        Action::WaitLbReady => "wait until the load balancer is provisioned".into(),
        Action::RenameLb { from, to, .. } => format!("rename load balancer {from} to {to}"),
        Action::TagLb { tags, .. } => format!(
            "tag load balancer with {} (adopt it)",
            tags.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Action::CreatePool {
            name,
            algorithm,
            protocol,
            ..
        } => format!("create pool {name} ({protocol}, {algorithm})"),
        Action::RenamePool { from, to, .. } => format!("rename pool {from} to {to}"),
        Action::DeletePool { name, .. } => {
            format!("delete pool {name} with its members, listener and health monitor")
        }
        Action::CreateMember { member, .. } => format!("add member {}", member.name),
        Action::EnableMember { name, .. } => format!("enable member {name}"),
        Action::RenameMember { from, to, .. } => format!("rename member {from} to {to}"),
        Action::DeleteMember { name, .. } => format!("remove member {name}"),
        Action::CreateListener { listener, .. } => create_listener(listener),
        Action::UpdateListener { from, changes, .. } => {
            format!(
                "update listener {}: {}",
                from.name,
                listener_changes(from, changes)
            )
        }
        Action::DeleteListener { name, .. } => format!("delete listener {name}"),
        Action::CreateMonitor { monitor, .. } => create_monitor(monitor),
        Action::UpdateMonitor { from, changes, .. } => {
            format!(
                "update {} health monitor: {}",
                from.kind,
                monitor_changes(from, changes)
            )
        }
        Action::DeleteMonitor { kind, .. } => format!("delete {kind} health monitor"),
        Action::WaitMembersUp { members, .. } => {
            if members.is_empty() {
                "wait until the load balancer has applied the changes above".into()
            } else {
                format!(
                    "wait until the new members on nodes that serve now are up ({})",
                    members.join(", ")
                )
            }
        }
        Action::AssignFloatingIp {
            network,
            from: None,
        } => format!("assign floating IP {network}"),
        Action::AssignFloatingIp {
            network,
            from: Some(holder),
        } => format!("assign floating IP {network}, taking it from {holder}"),
    }
}

fn cidrs(c: &[String]) -> String {
    if c.is_empty() {
        "everyone".into()
    } else {
        c.join(", ")
    }
}

fn create_listener(l: &Listener) -> String {
    let mut s = format!(
        "create listener {} on {} port {}",
        l.name, l.protocol, l.port
    );
    if !l.allowed_cidrs.is_empty() {
        s.push_str(&format!(" for {}", cidrs(&l.allowed_cidrs)));
    }
    s
}

fn listener_changes(from: &Listener, c: &ListenerChanges) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &c.protocol {
        parts.push(format!("protocol {} → {p}", from.protocol));
    }
    if let Some(p) = c.port {
        parts.push(format!("port {} → {p}", from.port));
    }
    if let Some(n) = &c.name {
        parts.push(format!("name {} → {n}", from.name));
    }
    if let Some(a) = &c.allowed_cidrs {
        parts.push(format!(
            "allowed clients {} → {}",
            cidrs(&from.allowed_cidrs),
            cidrs(a)
        ));
    }
    let timeouts = [
        (
            "client data timeout",
            from.timeout_client_data_ms,
            c.timeout_client_data_ms,
        ),
        (
            "member connect timeout",
            from.timeout_member_connect_ms,
            c.timeout_member_connect_ms,
        ),
        (
            "member data timeout",
            from.timeout_member_data_ms,
            c.timeout_member_data_ms,
        ),
    ];
    for (what, old, new) in timeouts {
        if let Some(new) = new {
            parts.push(format!("{what} {old} → {new} ms"));
        }
    }
    parts.join(", ")
}

fn http(h: &HttpCheck) -> String {
    let mut s = format!("{} {} HTTP/{}", h.method, h.url_path, h.version);
    if let Some(host) = &h.host {
        s.push_str(&format!(" host {host}"));
    }
    s.push_str(&format!(" expecting {}", h.expected_codes.join(", ")));
    s
}

fn create_monitor(m: &Monitor) -> String {
    let mut s = format!(
        "create {} health monitor (every {} s, up after {}, down after {}",
        m.kind, m.delay_s, m.up_threshold, m.down_threshold
    );
    if let Some(h) = m.http_options() {
        s.push_str(&format!(", {}", http(h)));
    }
    s.push(')');
    s
}

fn monitor_changes(from: &Monitor, c: &MonitorChanges) -> String {
    let mut parts = Vec::new();
    let numbers = [
        ("delay", from.delay_s, c.delay_s, " s"),
        ("timeout", from.timeout_s, c.timeout_s, " s"),
        ("up threshold", from.up_threshold, c.up_threshold, ""),
        ("down threshold", from.down_threshold, c.down_threshold, ""),
    ];
    for (what, old, new, unit) in numbers {
        if let Some(new) = new {
            parts.push(format!("{what} {old} → {new}{unit}"));
        }
    }
    if let Some(h) = &c.http {
        let old = from
            .http_options()
            .map_or("no HTTP options".to_string(), http);
        parts.push(format!("{old} → {}", http(h)));
    }
    parts.join(", ")
}
