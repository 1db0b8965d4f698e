//! Legacy discovery documents (`/api`, `/apis`, `/api/v1`, `/apis/{group}/{version}`) and
//! `/version`. Recent clients ask for aggregated discovery first and fall back to these when
//! the answer is plain JSON.

use super::registry::{RESOURCES, ResourceType, VERBS, group_versions};
use serde_json::{Value, json};

/// The Kubernetes version the server reports. kubectl's dispatcher picks the client of the
/// same minor version, so this is what plain `kubectl` runs against.
pub const MAJOR: &str = "1";
pub const MINOR: &str = "32";

pub fn version() -> Value {
    json!({
        "major": MAJOR,
        "minor": MINOR,
        "gitVersion": format!("v{MAJOR}.{MINOR}.0"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// `/apis`
pub fn group_list() -> Value {
    let groups: Vec<Value> = group_versions()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, v)| {
            let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
            json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`
pub fn group(name: &str) -> Option<Value> {
    let (g, v) = group_versions().into_iter().find(|(g, _)| *g == name)?;
    let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
    Some(json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": g,
        "versions": [gv.clone()],
        "preferredVersion": gv,
    }))
}

fn resource_entry(r: &ResourceType) -> Value {
    let mut v = json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": VERBS,
    });
    if !r.short_names.is_empty() {
        v["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        v["categories"] = json!(r.categories);
    }
    v
}

/// `/api/v1` or `/apis/{group}/{version}`.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceType> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for r in served {
        resources.push(resource_entry(r));
        if r.status {
            resources.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.plural == "serviceaccounts" && r.group.is_empty() {
            // `kubectl create token` (see `tokens.rs`).
            resources.push(json!({
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": true,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
        if r.scale() {
            // Group and version name the Scale's own: the scale client of `kubectl scale`
            // reads them to decode the answer.
            resources.push(json!({
                "name": format!("{}/scale", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resource_list_has_status_subresources() {
        let list = resource_list("", "v1").expect("core");
        let names: Vec<&str> = list["resources"]
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(names.contains(&"services"));
        assert!(names.contains(&"services/status"));
        assert!(names.contains(&"nodes/status"));
        assert!(!names.contains(&"configmaps/status"));
    }

    #[test]
    fn groups_exclude_core_and_include_coordination() {
        let list = group_list();
        let names: Vec<&str> = list["groups"]
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|g| g["name"].as_str())
            .collect();
        assert!(names.contains(&"coordination.k8s.io"));
        assert!(!names.contains(&""));
        assert!(resource_list("nope.example", "v1").is_none());
    }
}
