//! Cascading deletion, the API server's part (`DeleteOptions.propagationPolicy`, the
//! `propagationPolicy` query parameter, the legacy `orphanDependents`;
//! https://kubernetes.io/docs/concepts/architecture/garbage-collection/): which policy a
//! delete asks for, and the finalizer it leaves on the owner for the garbage collector
//! (`src/workloads/gc.rs`): `foregroundDeletion` (its dependents go first), `orphan` (its
//! dependents lose their owner reference to it). `Background` leaves none: the owner goes
//! now and the collector deletes its dependents after.
//!
//! Without a policy, core/v1 ReplicationControllers and batch/v1 Jobs orphan their
//! dependents (kube-apiserver keeps that default for backwards compatibility, and warns for
//! Jobs: [`JOB_DEFAULT_WARNING`]); everything else is `Background`. An owner that has no
//! dependents at the time of its deletion gets no finalizer (nothing to wait for), so it
//! goes at once even where no collector runs.

use super::registry::ResourceType;
use super::status::{ApiError, ApiResult, Cause};
use super::store::Store;
use serde_json::Value;

pub const ORPHAN: &str = "orphan";
pub const FOREGROUND: &str = "foregroundDeletion";

/// kube-apiserver's warning for a Job deleted without a policy (`deleteOptionWarnings` of
/// its Job storage), which kubectl prints as `Warning: …`.
pub const JOB_DEFAULT_WARNING: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Orphan,
    Background,
    Foreground,
}

impl Policy {
    /// The finalizer the owner keeps while the collector works.
    pub fn finalizer(self) -> Option<&'static str> {
        match self {
            Policy::Orphan => Some(ORPHAN),
            Policy::Foreground => Some(FOREGROUND),
            Policy::Background => None,
        }
    }
}

/// Whether the type orphans its dependents when the delete names no policy.
pub fn orphans_by_default(rt: &ResourceType) -> bool {
    (rt.group.is_empty() && rt.kind == "ReplicationController")
        || (rt.group == "batch" && rt.kind == "Job")
}

/// Whether the delete options name a policy (`propagationPolicy` or `orphanDependents`).
pub fn given(options: &Value) -> bool {
    options
        .get("propagationPolicy")
        .is_some_and(|p| !p.is_null())
        || options
            .get("orphanDependents")
            .is_some_and(|o| !o.is_null())
}

fn invalid(field: &str, message: String, reason: &'static str) -> ApiError {
    ApiError::Invalid {
        kind: "DeleteOptions.meta.k8s.io".into(),
        name: String::new(),
        causes: vec![Cause {
            reason,
            field: field.into(),
            message,
        }],
    }
}

/// The policy of a delete of `rt` with `options` (`ValidateDeleteOptions`' checks, then
/// the type's default).
pub fn policy(rt: &ResourceType, options: &Value) -> ApiResult<Policy> {
    let orphan = options.get("orphanDependents").and_then(Value::as_bool);
    let named = options.get("propagationPolicy").and_then(Value::as_str);
    if orphan.is_some() && named.is_some() {
        return Err(invalid(
            "propagationPolicy",
            "Invalid value: \"\": orphanDependents and deletionPropagation cannot be both set"
                .into(),
            "FieldValueInvalid",
        ));
    }
    match (named, orphan) {
        (Some("Orphan"), _) | (None, Some(true)) => Ok(Policy::Orphan),
        (Some("Background"), _) | (None, Some(false)) => Ok(Policy::Background),
        (Some("Foreground"), _) => Ok(Policy::Foreground),
        (Some(other), _) => Err(invalid(
            "propagationPolicy",
            format!(
                "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            ),
            "FieldValueNotSupported",
        )),
        (None, None) if orphans_by_default(rt) => Ok(Policy::Orphan),
        (None, None) => Ok(Policy::Background),
    }
}

/// Whether any stored object names `uid` among its owners.
pub fn has_dependents(store: &Store, uid: &str) -> bool {
    !uid.is_empty()
        && store.any(|o| {
            o.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                })
        })
}

/// `old`'s finalizers with `finalizer` added (once).
pub fn with_finalizer(old: &Value, finalizer: &str) -> Value {
    let mut list: Vec<Value> = old
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !list.iter().any(|f| f.as_str() == Some(finalizer)) {
        list.push(Value::from(finalizer));
    }
    Value::Array(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt(group: &str, kind: &str) -> ResourceType {
        super::super::registry::RESOURCES
            .iter()
            .find(|r| r.group == group && r.kind == kind)
            .cloned()
            .expect("registered")
    }

    #[test]
    fn jobs_and_rcs_orphan_by_default_and_options_win() {
        let (job, rc, deploy) = (
            rt("batch", "Job"),
            rt("", "ReplicationController"),
            rt("apps", "Deployment"),
        );
        assert_eq!(policy(&job, &json!({})), Ok(Policy::Orphan));
        assert_eq!(policy(&rc, &json!({})), Ok(Policy::Orphan));
        assert_eq!(policy(&deploy, &json!({})), Ok(Policy::Background));
        assert_eq!(
            policy(&job, &json!({"propagationPolicy": "Background"})),
            Ok(Policy::Background)
        );
        assert_eq!(
            policy(&deploy, &json!({"orphanDependents": true})),
            Ok(Policy::Orphan)
        );
        assert_eq!(
            policy(&rc, &json!({"orphanDependents": false})),
            Ok(Policy::Background)
        );
        assert_eq!(
            policy(&deploy, &json!({"propagationPolicy": "Foreground"})),
            Ok(Policy::Foreground)
        );
        assert!(policy(&deploy, &json!({"propagationPolicy": "Sideways"})).is_err());
        assert!(
            policy(
                &deploy,
                &json!({"propagationPolicy": "Orphan", "orphanDependents": true})
            )
            .is_err()
        );
        assert!(!given(&json!({})) && given(&json!({"orphanDependents": false})));
    }
}
