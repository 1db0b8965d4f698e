//! The request bodies of the writes a plan's steps make (pure): built from the plan's typed
//! values, the UUIDs the run knows and the tags every created resource carries. A value the
//! API cannot take (a negative timeout) is refused here, naming the step and the field,
//! before anything is sent.

use crate::cloudscale::{self as api, Tags};
use crate::service::cloud::cloud_error::{ApplyError, invalid};
use crate::service::pure::model::{
    DesiredLb, HttpCheck, Listener, Member, Monitor, PoolAlgorithm, PoolProtocol,
};
use crate::service::pure::plan::{ListenerChanges, MonitorChanges};
use uuid::Uuid;

/// `v` as the API's unsigned field `field` of the step `action`.
fn u32_of(action: &str, field: &str, v: i64) -> Result<u32, ApplyError> {
    u32::try_from(v).map_err(|_| invalid(action, format!("{field} {v} is out of range")))
}

/// A new load balancer with the desired VIP addresses (none: the API picks public ones).
pub(super) fn create_lb(
    desired: &DesiredLb,
    (name, flavor, zone): (&str, &str, Option<&str>),
    tags: &Tags,
) -> api::CreateLoadBalancer {
    api::CreateLoadBalancer {
        name: name.to_string(),
        flavor: flavor.to_string(),
        vip_addresses: desired
            .vips
            .iter()
            .flatten()
            .map(|v| api::VipAddressRequest {
                subnet: v.subnet,
                address: v.address.map(|a| a.to_string()),
            })
            .collect(),
        zone: zone.map(str::to_string),
        tags: tags.clone(),
    }
}

pub(super) fn rename_lb(to: &str) -> api::UpdateLoadBalancer {
    api::UpdateLoadBalancer {
        name: Some(to.to_string()),
        tags: None,
    }
}

pub(super) fn tag_lb(tags: &Tags) -> api::UpdateLoadBalancer {
    api::UpdateLoadBalancer {
        name: None,
        tags: Some(tags.clone()),
    }
}

pub(super) fn create_pool(
    lb: Uuid,
    (name, algorithm, protocol): (&str, &PoolAlgorithm, &PoolProtocol),
    tags: &Tags,
) -> api::CreatePool {
    api::CreatePool {
        name: name.to_string(),
        load_balancer: lb,
        algorithm: algorithm.clone(),
        protocol: protocol.clone(),
        tags: tags.clone(),
    }
}

pub(super) fn rename_pool(to: &str) -> api::UpdatePool {
    api::UpdatePool {
        name: Some(to.to_string()),
        tags: None,
    }
}

pub(super) fn create_member(member: &Member, tags: &Tags) -> api::CreatePoolMember {
    api::CreatePoolMember {
        name: member.name.clone(),
        protocol_port: member.protocol_port,
        monitor_port: Some(member.monitor_port),
        address: member.address,
        subnet: member.subnet,
        enabled: None,
        tags: tags.clone(),
    }
}

/// A member renamed to `to`, or (`None`) enabled again.
pub(super) fn update_member(to: Option<&str>) -> api::UpdatePoolMember {
    match to {
        Some(to) => api::UpdatePoolMember {
            name: Some(to.to_string()),
            ..Default::default()
        },
        None => api::UpdatePoolMember {
            enabled: Some(true),
            ..Default::default()
        },
    }
}

pub(super) fn create_listener(
    action: &str,
    pool: Uuid,
    listener: &Listener,
    tags: &Tags,
) -> Result<api::CreateListener, ApplyError> {
    let t = |field: &str, v: i64| u32_of(action, field, v).map(Some);
    Ok(api::CreateListener {
        pool,
        name: listener.name.clone(),
        protocol: listener.protocol.clone(),
        protocol_port: listener.port,
        allowed_cidrs: listener.allowed_cidrs.clone(),
        timeout_client_data_ms: t("timeout_client_data_ms", listener.timeout_client_data_ms)?,
        timeout_member_connect_ms: t(
            "timeout_member_connect_ms",
            listener.timeout_member_connect_ms,
        )?,
        timeout_member_data_ms: t("timeout_member_data_ms", listener.timeout_member_data_ms)?,
        tags: tags.clone(),
    })
}

pub(super) fn update_listener(
    action: &str,
    c: &ListenerChanges,
) -> Result<api::UpdateListener, ApplyError> {
    let t = |field: &str, v: Option<i64>| v.map(|v| u32_of(action, field, v)).transpose();
    Ok(api::UpdateListener {
        name: c.name.clone(),
        protocol: c.protocol.clone(),
        protocol_port: c.port,
        allowed_cidrs: c.allowed_cidrs.clone(),
        timeout_client_data_ms: t("timeout_client_data_ms", c.timeout_client_data_ms)?,
        timeout_member_connect_ms: t("timeout_member_connect_ms", c.timeout_member_connect_ms)?,
        timeout_member_data_ms: t("timeout_member_data_ms", c.timeout_member_data_ms)?,
        tags: None,
    })
}

fn http_request(h: &HttpCheck) -> api::HealthMonitorHttpRequest {
    api::HealthMonitorHttpRequest {
        expected_codes: Some(h.expected_codes.clone()),
        method: Some(h.method.clone()),
        url_path: Some(h.url_path.clone()),
        version: Some(h.version.clone()),
        host: h.host.clone().map(Some),
    }
}

pub(super) fn create_monitor(
    action: &str,
    pool: Uuid,
    monitor: &Monitor,
    tags: &Tags,
) -> Result<api::CreateHealthMonitor, ApplyError> {
    let n = |field: &str, v: i64| u32_of(action, field, v).map(Some);
    Ok(api::CreateHealthMonitor {
        pool,
        kind: monitor.kind.clone(),
        delay_s: n("delay_s", monitor.delay_s)?,
        timeout_s: n("timeout_s", monitor.timeout_s)?,
        up_threshold: n("up_threshold", monitor.up_threshold)?,
        down_threshold: n("down_threshold", monitor.down_threshold)?,
        // HTTP options only for HTTP checks: other types ignore or echo them.
        http: monitor.http_options().map(http_request).unwrap_or_default(),
        tags: tags.clone(),
    })
}

pub(super) fn update_monitor(
    action: &str,
    from: &Monitor,
    c: &MonitorChanges,
) -> Result<api::UpdateHealthMonitor, ApplyError> {
    let n = |field: &str, v: Option<i64>| v.map(|v| u32_of(action, field, v)).transpose();
    let had_host = from.http_options().is_some_and(|h| h.host.is_some());
    Ok(api::UpdateHealthMonitor {
        delay_s: n("delay_s", c.delay_s)?,
        timeout_s: n("timeout_s", c.timeout_s)?,
        up_threshold: n("up_threshold", c.up_threshold)?,
        down_threshold: n("down_threshold", c.down_threshold)?,
        // The version is part of the monitor's identity (a change replaces the monitor), so
        // it is never PATCHed. A host that is no longer wanted is cleared with an explicit
        // null: a PATCH merges key by key, so leaving it out would keep it.
        http: c.http.as_ref().map(|h| api::HealthMonitorHttpRequest {
            version: None,
            host: match (&h.host, had_host) {
                (Some(host), _) => Some(Some(host.clone())),
                (None, true) => Some(None),
                (None, false) => None,
            },
            ..http_request(h)
        }),
        tags: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::pure::model::{HealthMonitorType, Vip};
    use crate::service::testkit::fixtures::Sample;
    use serde_json::json;

    fn sample() -> Sample {
        Sample {
            subnet: Uuid::from_u128(7),
            nodes: vec!["10.0.0.1".parse().unwrap_or_else(|e| panic!("{e}"))],
        }
    }

    fn tags() -> Tags {
        [("k8s-cluster".to_string(), "c1".to_string())].into()
    }

    fn wire<T: serde::Serialize>(body: &T) -> serde_json::Value {
        serde_json::to_value(body).unwrap_or_else(|e| panic!("a request body serializes: {e}"))
    }

    #[test]
    fn a_new_load_balancer_carries_the_desired_vips_zone_and_tags() {
        let mut desired = sample().desired();
        desired.vips = Some(vec![Vip {
            subnet: Uuid::from_u128(9),
            address: None,
        }]);
        let body = create_lb(&desired, ("lb", "lb-standard", Some("lpg1")), &tags());
        assert_eq!(body.zone.as_deref(), Some("lpg1"));
        assert_eq!(body.tags, tags());
        assert_eq!(body.vip_addresses.len(), 1);
        assert_eq!(body.vip_addresses[0].subnet, Uuid::from_u128(9));
        assert_eq!(
            body.vip_addresses[0].address, None,
            "the API picks the address"
        );
    }

    #[test]
    fn a_member_is_renamed_or_enabled_and_nothing_else_is_sent() {
        assert_eq!(
            wire(&update_member(Some("n2:30080"))),
            json!({"name": "n2:30080"})
        );
        assert_eq!(wire(&update_member(None)), json!({"enabled": true}));
    }

    #[test]
    fn a_timeout_the_api_cannot_take_is_refused_naming_the_step_and_field() {
        let s = sample();
        let mut listener = s.desired().pools[0].listener.clone();
        let ok = create_listener("create listener", Uuid::nil(), &listener, &tags());
        assert_eq!(
            ok.ok().and_then(|b| b.timeout_client_data_ms),
            u32::try_from(listener.timeout_client_data_ms).ok()
        );
        listener.timeout_member_data_ms = -1;
        let err = create_listener("create listener", Uuid::nil(), &listener, &tags())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("create listener"), "{err}");
        assert!(
            err.contains("timeout_member_data_ms -1 is out of range"),
            "{err}"
        );
        let changes = ListenerChanges {
            timeout_client_data_ms: Some(i64::from(u32::MAX) + 1),
            ..ListenerChanges::default()
        };
        let err = update_listener("update listener", &changes)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("timeout_client_data_ms"), "{err}");
    }

    fn http(host: Option<&str>) -> HttpCheck {
        HttpCheck {
            method: "GET".into(),
            url_path: "/healthz".into(),
            version: "1.1".into(),
            host: host.map(str::to_string),
            expected_codes: vec!["200".into()],
        }
    }

    #[test]
    fn http_options_go_only_with_http_checks_and_a_dropped_host_is_cleared() {
        let mut monitor = sample().desired().pools[0].monitor.clone();
        monitor.kind = HealthMonitorType::Tcp;
        monitor.http = Some(http(Some("a.example")));
        let tcp = create_monitor("create monitor", Uuid::nil(), &monitor, &tags());
        assert_eq!(
            tcp.ok().map(|b| b.http),
            Some(api::HealthMonitorHttpRequest::default())
        );

        monitor.kind = HealthMonitorType::Http;
        let changes = MonitorChanges {
            http: Some(http(None)),
            ..MonitorChanges::default()
        };
        let body =
            update_monitor("update monitor", &monitor, &changes).unwrap_or_else(|e| panic!("{e}"));
        let sent = wire(&body);
        assert_eq!(sent["http"]["host"], serde_json::Value::Null, "{sent}");
        assert!(
            sent["http"]
                .as_object()
                .is_some_and(|h| h.contains_key("host")),
            "an explicit null clears the host: {sent}"
        );
        assert!(
            sent["http"].get("version").is_none(),
            "never PATCHed: {sent}"
        );

        monitor.http = Some(http(None));
        let body =
            update_monitor("update monitor", &monitor, &changes).unwrap_or_else(|e| panic!("{e}"));
        let sent = wire(&body);
        assert!(
            sent["http"].get("host").is_none(),
            "nothing to clear: {sent}"
        );
    }
}
