//! A load balancer's configuration as fakecloud's API shows it, with what differs between
//! two equal configurations taken out (UUIDs, addresses, times, health states, the
//! Service's UID, creation order): two snapshots are equal when the configurations are.

use super::backend::Backend;
use serde_json::{Value, json};
use uuid::Uuid;

/// Keys that identify or time an object rather than configure it.
const DROPPED: &[&str] = &[
    "uuid",
    "href",
    "created_at",
    "status",
    "monitor_status",
    "operational_status",
];

/// `v` without [`DROPPED`] keys; a reference to another object (`pool`, `load_balancer`,
/// `subnet`) keeps only its name or CIDR.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, x) in map {
                if DROPPED.contains(&k.as_str()) {
                    continue;
                }
                let x = match (k.as_str(), x) {
                    ("pool" | "load_balancer" | "subnet" | "zone" | "flavor", Value::Object(r)) => {
                        r.get("name")
                            .or_else(|| r.get("cidr"))
                            .or_else(|| r.get("slug"))
                            .cloned()
                            .unwrap_or(Value::Null)
                    }
                    _ => normalized(x),
                };
                out.insert(k.clone(), x);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

fn sorted_by_name(mut items: Vec<Value>) -> Vec<Value> {
    items.sort_by_key(|v| v.to_string());
    items
}

fn belongs(v: &Value, lb: &str) -> bool {
    v["load_balancer"]["uuid"].as_str() == Some(lb)
}

/// Load balancer `lb` with its pools, members, listeners and health monitors, and the
/// networks of the floating IPs assigned to it, as fakecloud's API shows them.
pub async fn parts(b: &impl Backend, lb: Uuid) -> Result<Value, String> {
    let lb_s = lb.to_string();
    let get = |path: String| async move {
        match b.outside("GET", &path, None).await? {
            Value::Array(items) => Ok::<Vec<Value>, String>(items),
            other => Ok(vec![other]),
        }
    };
    let lbv = get(format!("/v1/load-balancers/{lb}")).await?;
    let lbv = lbv.into_iter().next().unwrap_or(Value::Null);
    let pools: Vec<Value> = get("/v1/load-balancers/pools".into())
        .await?
        .into_iter()
        .filter(|p| belongs(p, &lb_s))
        .collect();
    let mut members = Vec::new();
    for p in &pools {
        if let Some(id) = p["uuid"].as_str() {
            members.extend(get(format!("/v1/load-balancers/pools/{id}/members")).await?);
        }
    }
    let listeners: Vec<Value> = get("/v1/load-balancers/listeners".into())
        .await?
        .into_iter()
        .filter(|l| belongs(l, &lb_s))
        .collect();
    let monitors: Vec<Value> = get("/v1/load-balancers/health-monitors".into())
        .await?
        .into_iter()
        .filter(|m| belongs(m, &lb_s))
        .collect();
    let mut fips: Vec<Value> = get("/v1/floating-ips".into())
        .await?
        .into_iter()
        .filter(|f| belongs(f, &lb_s))
        .map(|f| f["network"].clone())
        .collect();
    fips.sort_by_key(|v| v.to_string());
    Ok(json!({
        "load_balancer": lbv,
        "pools": sorted_by_name(pools),
        "members": sorted_by_name(members),
        "listeners": sorted_by_name(listeners),
        "health_monitors": sorted_by_name(monitors),
        "floating_ips": fips,
    }))
}

/// The configuration of load balancer `lb` (of the Service with UID `uid`), normalized;
/// of its floating IPs only those `claimed` (one a Service stopped claiming stays assigned,
/// as documented, and is no part of what the Service asks for).
pub async fn snapshot(
    b: &impl Backend,
    lb: Uuid,
    uid: &str,
    claimed: &[String],
) -> Result<Value, String> {
    let mut all = parts(b, lb).await?;
    // VIP addresses differ between two load balancers; their kind does not.
    if let Some(vips) = all["load_balancer"]["vip_addresses"].as_array_mut() {
        for v in vips.iter_mut() {
            if let Some(m) = v.as_object_mut() {
                m.remove("address");
            }
        }
    }
    let norm =
        |v: &Value| sorted_by_name(v.as_array().into_iter().flatten().map(normalized).collect());
    let fips: Vec<Value> = all["floating_ips"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n.as_str().is_some_and(|n| claimed.iter().any(|c| c == n)))
        .cloned()
        .collect();
    let all = json!({
        "load_balancer": normalized(&all["load_balancer"]),
        "pools": norm(&all["pools"]),
        "members": norm(&all["members"]),
        "listeners": norm(&all["listeners"]),
        "health_monitors": norm(&all["health_monitors"]),
        "floating_ips": fips,
    });
    let text = all.to_string().replace(uid, "<uid>");
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The first line where the pretty forms of `a` and `b` differ, with its neighbours.
pub fn first_difference(a: &Value, b: &Value) -> Option<String> {
    let pa = serde_json::to_string_pretty(a).unwrap_or_default();
    let pb = serde_json::to_string_pretty(b).unwrap_or_default();
    let la: Vec<&str> = pa.lines().collect();
    let lb: Vec<&str> = pb.lines().collect();
    let i = (0..la.len().max(lb.len())).find(|i| la.get(*i) != lb.get(*i))?;
    let around = |l: &[&str]| {
        l[i.saturating_sub(3)..(i + 2).min(l.len())]
            .iter()
            .map(|s| s.trim())
            .collect::<Vec<_>>()
            .join(" ")
    };
    Some(format!(
        "after the changes: …{}… ; created from scratch: …{}…",
        around(&la),
        around(&lb)
    ))
}
