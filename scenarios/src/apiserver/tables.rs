//! Server-side printing: `meta.k8s.io` Tables (what `kubectl get` asks for with
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) with the columns and cell values
//! of a real API server's printers (`pkg/printers/internalversion`), and
//! `PartialObjectMetadata` for metadata-only clients. The server always prints "wide" (the
//! columns of priority 1 are in every row; kubectl shows them with `-o wide`).

use super::events;
use super::registry::ResourceType;
use super::server::IncludeObject;
use serde_json::{Value, json};

mod apps;
mod columns;
mod pods;
mod workloads;

/// What the client asked for in `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The plain object or list.
    Json,
    /// `as=Table`, with the `meta.k8s.io` version asked for (`v1` or `v1beta1`).
    Table(&'static str),
    /// `as=PartialObjectMetadata` / `as=PartialObjectMetadataList`.
    Metadata(&'static str),
}

/// The first media range of `Accept` the server can answer (JSON only: protobuf ranges are
/// skipped, as are transformations it does not know). No acceptable range means plain JSON.
pub fn negotiate(accept: &str) -> Format {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        if !matches!(
            media.as_str(),
            "application/json" | "application/*" | "*/*" | ""
        ) {
            continue;
        }
        let (mut as_, mut g, mut v) = (None, None, None);
        for p in parts {
            if let Some((k, val)) = p.split_once('=') {
                let val = val.trim().trim_matches('"');
                match k.trim() {
                    "as" => as_ = Some(val.to_string()),
                    "g" => g = Some(val.to_string()),
                    "v" => v = Some(val.to_string()),
                    _ => {}
                }
            }
        }
        let Some(as_) = as_ else {
            return Format::Json;
        };
        if g.as_deref() != Some("meta.k8s.io") {
            continue;
        }
        let version = match v.as_deref() {
            Some("v1") => "meta.k8s.io/v1",
            Some("v1beta1") => "meta.k8s.io/v1beta1",
            _ => continue,
        };
        match as_.as_str() {
            "Table" => return Format::Table(version),
            "PartialObjectMetadata" | "PartialObjectMetadataList" => {
                return Format::Metadata(version);
            }
            _ => continue,
        }
    }
    Format::Json
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value, api_version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// A list (`items`, `metadata`) as `PartialObjectMetadataList`.
pub fn partial_metadata_list(list: &Value, api_version: &str) -> Value {
    let items: Vec<Value> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| partial_metadata(o, api_version))
        .collect();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": api_version,
        "metadata": list.get("metadata").cloned().unwrap_or(json!({})),
        "items": items,
    })
}

const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// (name, type, priority, description); `Name` gets `format: name`.
type Col = (&'static str, &'static str, u8, &'static str);

/// The Table's `columnDefinitions` for a type.
pub fn column_definitions(rt: &ResourceType) -> Vec<Value> {
    columns::column_specs(rt)
        .into_iter()
        .map(|(name, ty, priority, description)| {
            json!({
                "name": name,
                "type": ty,
                "format": if name == "Name" { "name" } else { "" },
                "description": description,
                "priority": priority,
            })
        })
        .collect()
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn or_none(v: &str) -> String {
    if v.is_empty() {
        "<none>".into()
    } else {
        v.to_string()
    }
}

fn arr<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn count(v: &Value, pointer: &str) -> i64 {
    match v.pointer(pointer) {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

/// `duration.HumanDuration` of apimachinery.
pub fn human_duration(d: chrono::Duration) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".into();
    } else if seconds < 0 {
        return "0s".into();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d.num_minutes();
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d.num_hours();
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// `translateTimestampSince`: the age of an RFC 3339 timestamp, `<unknown>` when unset.
fn since(ts: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => human_duration(now.signed_duration_since(t.with_timezone(&chrono::Utc))),
        Err(_) => "<unknown>".into(),
    }
}

fn service_cells(o: &Value) -> Vec<Value> {
    let ty = match s(o, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    let cluster_ip = match arr(o, "/spec/clusterIPs").first().and_then(Value::as_str) {
        Some(ip) => ip.to_string(),
        None => or_none(s(o, "/spec/clusterIP")),
    };
    let external_ips: Vec<&str> = arr(o, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external = match ty {
        "ClusterIP" | "NodePort" if !external_ips.is_empty() => external_ips.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let mut all: Vec<String> = arr(o, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    let ip = s(i, "/ip");
                    let host = s(i, "/hostname");
                    match (ip.is_empty(), host.is_empty()) {
                        (false, _) => Some(ip.to_string()),
                        (true, false) => Some(host.to_string()),
                        _ => None,
                    }
                })
                .collect();
            all.extend(external_ips.iter().map(|s| s.to_string()));
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => s(o, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = arr(o, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or_default();
            let proto = match s(p, "/protocol") {
                "" => "TCP",
                x => x,
            };
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(np) if np > 0 => format!("{port}:{np}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect();
    let selector = format_labels(o.pointer("/spec/selector"));
    vec![
        json!(ty),
        json!(cluster_ip),
        json!(external),
        json!(or_none(&ports.join(","))),
        Value::Null, // age, filled by the caller
        json!(selector),
    ]
}

/// `labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty.
fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    or_none(&pairs.join(","))
}

fn node_cells(o: &Value) -> Vec<Value> {
    let conditions = arr(o, "/status/conditions");
    let mut status: Vec<String> = conditions
        .iter()
        .filter(|c| s(c, "/type") == "Ready")
        .take(1)
        .map(|c| {
            if s(c, "/status") == "True" {
                "Ready".to_string()
            } else {
                "NotReady".to_string()
            }
        })
        .collect();
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let mut roles: Vec<String> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                (!role.is_empty()).then(|| role.to_string())
            } else if k == "kubernetes.io/role" {
                v.as_str().filter(|r| !r.is_empty()).map(str::to_string)
            } else {
                None
            }
        })
        .collect();
    roles.sort();
    roles.dedup();
    let address = |ty: &str| {
        arr(o, "/status/addresses")
            .iter()
            .find(|a| s(a, "/type") == ty)
            .map(|a| s(a, "/address").to_string())
            .unwrap_or_else(|| "<none>".into())
    };
    let unknown = |p: &str| match s(o, p) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    vec![
        json!(status.join(",")),
        json!(or_none(&roles.join(","))),
        Value::Null,
        json!(s(o, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(unknown("/status/nodeInfo/osImage")),
        json!(unknown("/status/nodeInfo/kernelVersion")),
        json!(unknown("/status/nodeInfo/containerRuntimeVersion")),
    ]
}

/// `formatEndpoints` of the Endpoints printer.
fn endpoints_cell(o: &Value) -> String {
    let subsets = arr(o, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 3;
    let (mut list, mut more, mut total) = (Vec::<String>::new(), false, 0usize);
    for ss in subsets {
        let addresses = arr(ss, "/addresses");
        let ports = arr(ss, "/ports");
        if ports.is_empty() {
            total += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(s(a, "/ip").to_string());
            }
            continue;
        }
        for p in ports {
            total += addresses.len();
            let port = p.get("port").and_then(Value::as_i64).unwrap_or_default();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                let ip = s(a, "/ip");
                if ip.contains(':') {
                    list.push(format!("[{ip}]:{port}"));
                } else {
                    list.push(format!("{ip}:{port}"));
                }
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", total - MAX)
    } else if ret.is_empty() {
        "<none>".into()
    } else {
        ret
    }
}

/// `listWithMoreString` of the EndpointSlice printer.
fn list_with_more(items: Vec<String>) -> String {
    const MAX: usize = 3;
    let total = items.len();
    let ret = items.into_iter().take(MAX).collect::<Vec<_>>().join(",");
    if total > MAX {
        format!("{ret} + {} more...", total - MAX)
    } else if ret.is_empty() {
        "<unset>".into()
    } else {
        ret
    }
}

fn endpoint_slice_cells(o: &Value) -> Vec<Value> {
    let ports: Vec<String> = arr(o, "/ports")
        .iter()
        .map(
            |p| match (p.get("port").and_then(Value::as_i64), s(p, "/name")) {
                (Some(n), _) => n.to_string(),
                (None, name) if p.get("name").is_some() => name.to_string(),
                _ => "*".to_string(),
            },
        )
        .collect();
    let addresses: Vec<String> = arr(o, "/endpoints")
        .iter()
        .flat_map(|e| arr(e, "/addresses").iter())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    vec![
        json!(s(o, "/addressType")),
        json!(list_with_more(ports)),
        json!(list_with_more(addresses)),
        Value::Null,
    ]
}

/// All ten cells of a (core/v1 shaped) Event.
fn event_cells(o: &Value, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let first = if s(o, "/firstTimestamp").is_empty() {
        since(s(o, "/eventTime"), now)
    } else {
        since(s(o, "/firstTimestamp"), now)
    };
    let mut last = if s(o, "/lastTimestamp").is_empty() {
        first.clone()
    } else {
        since(s(o, "/lastTimestamp"), now)
    };
    let mut count = o.get("count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = o.get("series").filter(|v| v.is_object()) {
        last = since(s(series, "/lastObservedTime"), now);
        count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = s(o, "/involvedObject/kind").to_lowercase();
    let target = match s(o, "/involvedObject/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let first_non_empty = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            a.to_string()
        }
    };
    let component = first_non_empty(s(o, "/source/component"), s(o, "/reportingComponent"));
    let instance = first_non_empty(s(o, "/source/host"), s(o, "/reportingInstance"));
    let source = match (component.is_empty(), instance.is_empty()) {
        (true, _) => "<unknown>".to_string(),
        (false, true) => component,
        (false, false) => format!("{component}, {instance}"),
    };
    vec![
        json!(last),
        json!(s(o, "/type")),
        json!(s(o, "/reason")),
        json!(target),
        json!(s(o, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(o, "/message").trim()),
        json!(first),
        json!(count),
        json!(s(o, "/metadata/name")),
    ]
}

/// The cells of one row (every column, priority 1 included).
pub fn cells(rt: &ResourceType, obj: &Value, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let name = json!(s(obj, "/metadata/name"));
    let age = json!(since(s(obj, "/metadata/creationTimestamp"), now));
    let mut rest = match (rt.group, rt.kind) {
        (_, "Event") => {
            let core = if rt.group == "events.k8s.io" {
                events::to_core(obj)
            } else {
                obj.clone()
            };
            return event_cells(&core, now);
        }
        ("", "Service") => service_cells(obj),
        ("", "Node") => node_cells(obj),
        ("", "Pod") => pods::pod_cells(obj, now),
        ("", "Namespace") => vec![json!(s(obj, "/status/phase")), Value::Null],
        ("", "ConfigMap") => vec![
            json!(count(obj, "/data") + count(obj, "/binaryData")),
            Value::Null,
        ],
        ("", "Secret") => {
            let mut keys: Vec<&String> = ["/data", "/stringData"]
                .iter()
                .filter_map(|p| obj.pointer(p).and_then(Value::as_object))
                .flat_map(|m| m.keys())
                .collect();
            keys.sort();
            keys.dedup();
            let ty = match s(obj, "/type") {
                "" => "Opaque",
                t => t,
            };
            vec![json!(ty), json!(keys.len()), Value::Null]
        }
        ("", "ServiceAccount") => vec![json!(count(obj, "/secrets")), Value::Null],
        ("", "Endpoints") => vec![json!(endpoints_cell(obj)), Value::Null],
        ("discovery.k8s.io", "EndpointSlice") => endpoint_slice_cells(obj),
        ("apps", kind @ ("Deployment" | "ReplicaSet")) => apps::cells(kind, obj),
        ("apps", "DaemonSet")
        | ("batch", "Job" | "CronJob")
        | ("", "ReplicationController")
        | ("apiregistration.k8s.io", "APIService") => workloads::cells(rt.kind, obj, now),
        ("coordination.k8s.io", "Lease") => {
            vec![json!(s(obj, "/spec/holderIdentity")), Value::Null]
        }
        _ => vec![json!(s(obj, "/metadata/creationTimestamp"))],
    };
    for c in &mut rest {
        if c.is_null() {
            *c = age.clone();
        }
    }
    let mut out = vec![name];
    out.extend(rest);
    out
}

fn row(
    rt: &ResourceType,
    obj: &Value,
    include: IncludeObject,
    meta_version: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let mut row = json!({"cells": cells(rt, obj, now)});
    if rt.kind == "Pod" && rt.group.is_empty() {
        let phase = s(obj, "/status/phase");
        if phase == "Succeeded" || phase == "Failed" {
            row["conditions"] = json!([{
                "type": "Completed",
                "status": "True",
                "reason": phase,
                "message": if phase == "Succeeded" {
                    "The pod has completed successfully."
                } else {
                    "The pod failed."
                },
            }]);
        }
    }
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => row["object"] = partial_metadata(obj, meta_version),
        IncludeObject::Object => row["object"] = obj.clone(),
    }
    row
}

/// A Table of `objects` (as the clients of `rt` see them). `metadata` is the list metadata
/// (`resourceVersion`, `continue`); `headers: false` leaves out the column definitions (the
/// watch events after the first one).
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    metadata: Value,
    include: IncludeObject,
    meta_version: &str,
    headers: bool,
) -> Value {
    let now = chrono::Utc::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| row(rt, o, include, meta_version, now))
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": meta_version,
        "metadata": metadata,
        "columnDefinitions": if headers { column_definitions(rt) } else { Vec::new() },
        "rows": rows,
    })
}

/// A list answer (`items`, `metadata`) as a Table.
pub fn list_table(rt: &ResourceType, list: &Value, include: IncludeObject, version: &str) -> Value {
    let items = list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let metadata = list.get("metadata").cloned().unwrap_or(json!({}));
    table(rt, items, metadata, include, version, true)
}

/// One object as a Table of one row.
pub fn object_table(
    rt: &ResourceType,
    obj: &Value,
    include: IncludeObject,
    version: &str,
) -> Value {
    let mut metadata = json!({});
    if let Some(rv) = obj.pointer("/metadata/resourceVersion") {
        metadata["resourceVersion"] = rv.clone();
    }
    table(
        rt,
        std::slice::from_ref(obj),
        metadata,
        include,
        version,
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::registry;

    fn rt(group: &str, plural: &str) -> &'static ResourceType {
        registry::find(group, "v1", plural).expect("served type")
    }

    #[test]
    fn negotiation_follows_the_order_of_accept() {
        assert_eq!(
            negotiate(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
            ),
            Format::Table("meta.k8s.io/v1")
        );
        assert_eq!(
            negotiate("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            Format::Table("meta.k8s.io/v1beta1")
        );
        assert_eq!(negotiate("application/json, */*"), Format::Json);
        assert_eq!(negotiate(""), Format::Json);
        assert_eq!(
            negotiate(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json"
            ),
            Format::Json
        );
        assert_eq!(
            negotiate("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
            Format::Metadata("meta.k8s.io/v1")
        );
        assert_eq!(
            negotiate("application/json;as=Unknown;v=v1;g=meta.k8s.io"),
            Format::Json
        );
    }

    #[test]
    fn human_durations_match_apimachinery() {
        let d = chrono::Duration::seconds;
        assert_eq!(human_duration(d(-5)), "<invalid>");
        assert_eq!(human_duration(d(-1)), "0s");
        assert_eq!(human_duration(d(119)), "119s");
        assert_eq!(human_duration(d(125)), "2m5s");
        assert_eq!(human_duration(d(600)), "10m");
        assert_eq!(human_duration(d(3 * 3600 + 60)), "3h1m");
        assert_eq!(human_duration(d(10 * 3600)), "10h");
        assert_eq!(human_duration(d(50 * 3600)), "2d2h");
        assert_eq!(human_duration(d(30 * 86400)), "30d");
        assert_eq!(human_duration(d(800 * 86400)), "2y70d");
    }

    #[test]
    fn service_row_has_the_real_columns() {
        let svc = json!({
            "metadata": {"name": "web", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"],
                     "selector": {"b": "2", "a": "1"},
                     "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"hostname": "lb.example"}]}},
        });
        let cols: Vec<Value> = column_definitions(rt("", "services"))
            .into_iter()
            .map(|c| c["name"].clone())
            .collect();
        assert_eq!(
            cols,
            vec![
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector"
            ]
        );
        let c = cells(rt("", "services"), &svc, chrono::Utc::now());
        assert_eq!(
            c[..5],
            [
                json!("web"),
                json!("LoadBalancer"),
                json!("10.0.0.1"),
                json!("192.0.2.1,lb.example"),
                json!("80:30080/TCP,53/UDP")
            ]
        );
        assert!(
            c[5].as_str()
                .is_some_and(|a| a.ends_with('y') || a.contains('y'))
        );
        assert_eq!(c[6], "a=1,b=2");
        let pending = json!({"metadata": {"name": "p"}, "spec": {"type": "LoadBalancer"}});
        let c = cells(rt("", "services"), &pending, chrono::Utc::now());
        assert_eq!(c[2], "<none>");
        assert_eq!(c[3], "<pending>");
        assert_eq!(c[4], "<none>");
        assert_eq!(c[5], "<unknown>");
    }

    #[test]
    fn node_row_reports_ready_roles_and_addresses() {
        let node = json!({
            "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Ubuntu"}},
        });
        let c = cells(rt("", "nodes"), &node, chrono::Utc::now());
        assert_eq!(c[1], "NotReady,SchedulingDisabled");
        assert_eq!(c[2], "control-plane,edge,worker");
        assert_eq!(c[4], "v1.32.0");
        assert_eq!(c[5], "10.0.0.5");
        assert_eq!(c[6], "<none>");
        assert_eq!(c[7], "Ubuntu");
        assert_eq!(c[8], "<unknown>");
    }

    #[test]
    fn event_rows_for_both_versions() {
        let core = json!({
            "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Service", "name": "web"},
            "reason": "EnsuredLoadBalancer", "type": "Normal", "message": " Ensured ",
            "source": {"component": "ccm"}, "count": 3,
            "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z",
        });
        let c = cells(rt("", "events"), &core, chrono::Utc::now());
        assert_eq!(c.len(), 10);
        assert_eq!(
            c[1..4],
            [
                json!("Normal"),
                json!("EnsuredLoadBalancer"),
                json!("service/web")
            ]
        );
        assert_eq!(c[5], "ccm");
        assert_eq!(c[6], "Ensured");
        assert_eq!(c[8], 3);
        assert_eq!(c[9], "web.1");
        let new = events::to_events_v1(&core);
        let ev = registry::find("events.k8s.io", "v1", "events").expect("events.k8s.io");
        assert_eq!(cells(ev, &new, chrono::Utc::now()), c);
    }

    #[test]
    fn pod_status_and_counts() {
        let pod = json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.1.0.4",
                       "containerStatuses": [
                           {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                           {"name": "b", "ready": false, "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
        });
        let c = cells(rt("", "pods"), &pod, chrono::Utc::now());
        assert_eq!(c[1], "1/2");
        assert_eq!(c[2], "CrashLoopBackOff");
        assert_eq!(c[3], "2");
        assert_eq!(c[5], "10.1.0.4");
        assert_eq!(c[6], "n1");
        assert_eq!(c[8], "<none>");
    }

    #[test]
    fn other_rows() {
        let now = chrono::Utc::now();
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
        assert_eq!(cells(rt("", "configmaps"), &cm, now)[1], 3);
        let sec = json!({"metadata": {"name": "s"}, "data": {"a": ""}, "stringData": {"b": ""}});
        assert_eq!(
            cells(rt("", "secrets"), &sec, now)[1..3],
            [json!("Opaque"), json!(2)]
        );
        let ep = json!({"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}], "ports": [{"port": 80}]}]});
        assert_eq!(
            cells(rt("", "endpoints"), &ep, now)[1],
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
        );
        let slice = json!({"metadata": {"name": "es"}, "addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}], "endpoints": []});
        let es = registry::find("discovery.k8s.io", "v1", "endpointslices").expect("slices");
        assert_eq!(
            cells(es, &slice, now)[1..4],
            [json!("IPv4"), json!("80,x"), json!("<unset>")]
        );
        let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}});
        let lt = registry::find("coordination.k8s.io", "v1", "leases").expect("leases");
        assert_eq!(cells(lt, &lease, now)[1], "me");
    }

    #[test]
    fn tables_carry_rows_objects_and_metadata() {
        let svc = rt("", "services");
        let obj = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "resourceVersion": "7", "labels": {"x": "y"}}, "spec": {}});
        let t = object_table(svc, &obj, IncludeObject::Metadata, "meta.k8s.io/v1");
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"]["labels"]["x"], "y");
        let list =
            json!({"metadata": {"resourceVersion": "9", "continue": "c"}, "items": [obj.clone()]});
        let t = list_table(svc, &list, IncludeObject::Object, "meta.k8s.io/v1beta1");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t["metadata"]["continue"], "c");
        assert_eq!(t["rows"][0]["object"], obj);
        let t = table(
            svc,
            &[obj],
            json!({}),
            IncludeObject::None,
            "meta.k8s.io/v1",
            false,
        );
        assert!(t["rows"][0].get("object").is_none());
        assert_eq!(t["columnDefinitions"], json!([]));
    }
}
