//! The CCM's identity in the test clusters: the ServiceAccount and RBAC objects of
//! `deploy/config.yml`, applied to the embedded API server, and a kubeconfig with that
//! ServiceAccount's token. Every suite runs the CCM with it, so a rule missing from the
//! shipped manifest fails them (the server answers 403, as a real one does).

use crate::apiserver::Shared;
use crate::apiserver::{rbac, registry};
use serde::Deserialize;

/// The manifest operators apply (`deploy/config.yml`).
pub const MANIFEST: &str = include_str!("../../../deploy/config.yml");

/// Kinds of the manifest that make up the CCM's identity (its Deployment runs nowhere here:
/// the suites start the CCM themselves).
const IDENTITY_KINDS: &[&str] = &[
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("deploy/config.yml: {0}")]
    Manifest(String),
    #[error("applying {kind} {name}: {reason}")]
    Apply {
        kind: String,
        name: String,
        reason: String,
    },
}

/// The manifest's documents as JSON values, parsed once per process: every simulated
/// schedule installs the identity, and parsing the YAML each time cost about 1 % of a sweep.
pub fn manifest_documents() -> Result<&'static [serde_json::Value], IdentityError> {
    static DOCS: std::sync::LazyLock<Result<Vec<serde_json::Value>, String>> =
        std::sync::LazyLock::new(|| {
            serde_yaml_ng::Deserializer::from_str(MANIFEST)
                .map(|d| serde_json::Value::deserialize(d).map_err(|e| e.to_string()))
                .collect()
        });
    DOCS.as_deref()
        .map_err(|e| IdentityError::Manifest(e.clone()))
}

/// `(namespace, name)` of the manifest's ServiceAccount.
pub fn service_account() -> Result<(String, String), IdentityError> {
    let docs = manifest_documents()?;
    let sa = docs
        .iter()
        .find(|d| d["kind"] == "ServiceAccount")
        .ok_or_else(|| IdentityError::Manifest("no ServiceAccount".into()))?;
    let meta = &sa["metadata"];
    match (meta["namespace"].as_str(), meta["name"].as_str()) {
        (Some(ns), Some(name)) => Ok((ns.to_string(), name.to_string())),
        _ => Err(IdentityError::Manifest(
            "the ServiceAccount has no namespace or name".into(),
        )),
    }
}

/// The user name the API server gives the CCM's requests.
pub fn user_name() -> Result<String, IdentityError> {
    let (ns, name) = service_account()?;
    Ok(format!("system:serviceaccount:{ns}:{name}"))
}

/// The annotation `kubectl apply` keeps its last applied manifest in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `doc` as `kubectl apply` would have created it: with its last applied configuration, the
/// manifest in compact JSON with sorted keys, an empty `annotations` and a newline, as
/// kubectl writes it. The operator's own `kubectl apply -f deploy/config.yml` then finds
/// them unchanged instead of warning that the annotation is missing.
fn as_applied(doc: &serde_json::Value) -> serde_json::Value {
    let mut applied = doc.clone();
    let annotations = &mut applied["metadata"]["annotations"];
    if let Some(map) = annotations.as_object_mut() {
        map.remove(LAST_APPLIED);
    } else {
        *annotations = serde_json::json!({});
    }
    // serde_json's maps are sorted (no `preserve_order` here), as Go's encoding/json sorts.
    let text = format!("{applied}\n");
    let mut out = doc.clone();
    out["metadata"]["annotations"][LAST_APPLIED] = serde_json::Value::String(text);
    out
}

/// Creates the ServiceAccount and RBAC objects in the embedded API server, as `kubectl
/// apply` would have; returns the ServiceAccount's bearer token.
pub fn install(api: &Shared) -> Result<String, IdentityError> {
    for doc in manifest_documents()? {
        let kind = doc["kind"].as_str().unwrap_or_default();
        if !IDENTITY_KINDS.contains(&kind) {
            continue;
        }
        let (group, version) = match doc["apiVersion"].as_str().unwrap_or_default() {
            gv @ "v1" => ("", gv),
            gv => gv.split_once('/').unwrap_or(("", gv)),
        };
        let name = doc["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let rt = registry::RESOURCES
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .ok_or_else(|| IdentityError::Apply {
                kind: kind.into(),
                name: name.clone(),
                reason: "not served by the embedded API server".into(),
            })?;
        let namespace = doc["metadata"]["namespace"].as_str().map(str::to_string);
        api.create_object(rt, namespace.as_deref(), as_applied(doc), false)
            .map_err(|e| IdentityError::Apply {
                kind: kind.into(),
                name,
                reason: e.to_string(),
            })?;
    }
    let (ns, name) = service_account()?;
    Ok(rbac::service_account_token(&ns, &name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_object_carries_what_kubectl_apply_would_have_written() {
        let doc = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "ccm", "namespace": "kube-system"}});
        let got = as_applied(&doc);
        assert_eq!(
            got["metadata"]["annotations"][LAST_APPLIED],
            "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\
             \"metadata\":{\"annotations\":{},\"name\":\"ccm\",\"namespace\":\"kube-system\"}}\n"
        );
        // Everything else is the manifest's.
        let mut rest = got.clone();
        rest["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("annotations");
        assert_eq!(rest, doc);
    }
}
