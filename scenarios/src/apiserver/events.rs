//! `core/v1` Event <-> `events.k8s.io/v1` Event. Both APIs serve the same stored objects (in
//! the `core/v1` shape), as on a real API server, so `kubectl describe` shows the Events a
//! kube-rs `Recorder` writes through `events.k8s.io/v1`.

use serde_json::{Map, Value};

/// Field renames between the two versions: (core/v1, events.k8s.io/v1).
const RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

fn rename(obj: &Value, to_new: bool, api_version: &str) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let key = RENAMES
            .iter()
            .find_map(|(core, new)| match to_new {
                true if k == core => Some(*new),
                false if k == new => Some(*core),
                _ => None,
            })
            .unwrap_or(k.as_str());
        out.insert(key.to_string(), v.clone());
    }
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String("Event".into()));
    Value::Object(out)
}

/// The stored (core/v1) shape of an `events.k8s.io/v1` Event.
pub fn to_core(obj: &Value) -> Value {
    rename(obj, false, "v1")
}

/// The `events.k8s.io/v1` shape of a stored Event.
pub fn to_events_v1(obj: &Value) -> Value {
    rename(obj, true, "events.k8s.io/v1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_keeps_every_field() {
        let new = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "regarding": {"kind": "Service", "name": "web"},
            "note": "Ensured load balancer", "reason": "EnsuredLoadBalancer", "type": "Normal",
            "reportingController": "cloudscale-ccm", "reportingInstance": "ccm-1",
            "eventTime": "2026-01-01T00:00:00.000000Z", "action": "Ensure",
        });
        let core = to_core(&new);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["message"], "Ensured load balancer");
        assert_eq!(core["reportingComponent"], "cloudscale-ccm");
        assert!(core.get("note").is_none());
        assert_eq!(to_events_v1(&core), new);
    }
}
