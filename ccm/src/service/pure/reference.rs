//! The annotation reference users read: every `k8s.cloudscale.ch/...` key with its values,
//! default and what a change does to a running load balancer. `ccm/README.md` shows
//! [`markdown`]'s table, and `tests/it/readme.rs` fails when the two differ
//! (`UPDATE_README=1` rewrites the README's copy).

use super::annotations::*;

/// One annotation as the reference shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnotationDoc {
    pub key: &'static str,
    /// Accepted values.
    pub values: &'static str,
    pub default: &'static str,
    /// What changing it on a running load balancer does, with its impact class.
    pub change: &'static str,
}

/// Every annotation, in the order of [`ALL_ANNOTATIONS`].
pub const ANNOTATIONS: [AnnotationDoc; 24] = [
    AnnotationDoc {
        key: LOADBALANCER_UUID,
        values: "UUID (written by the CCM)",
        default: "-",
        change: "none: the CCM finds a Service's load balancer by its `k8s.cloudscale.ch/service-uid` tag; a copied value never takes another Service's",
    },
    AnnotationDoc {
        key: LOADBALANCER_CONFIG_VERSION,
        values: "`1` (written by the CCM)",
        default: "`1`",
        change: "other values are refused",
    },
    AnnotationDoc {
        key: LOADBALANCER_NAME,
        values: "a name",
        default: "`k8s-service-<Service UID>`",
        change: "renamed in place: none; a name another Service's load balancer has is refused",
    },
    AnnotationDoc {
        key: LOADBALANCER_FLAVOR,
        values: "a load balancer flavor",
        default: "`lb-standard`",
        change: "refused (re-create the Service)",
    },
    AnnotationDoc {
        key: LOADBALANCER_ZONE,
        values: "a zone",
        default: "the nodes' zone (written back by the CCM)",
        change: "refused (re-create the Service); the value stays as written",
    },
    AnnotationDoc {
        key: LOADBALANCER_VIP_ADDRESSES,
        values: "JSON `[{\"subnet\": \"<uuid>\", \"address\": \"<ip>\"}]`, address optional",
        default: "public IPv4 and IPv6",
        change: "refused (re-create the Service)",
    },
    AnnotationDoc {
        key: LOADBALANCER_FLOATING_IPS,
        values: "JSON list of floating IP networks (`45.132.236.10/32`)",
        default: "`[]`",
        change: "assigned: minimal on that address until it propagates; one removed stays assigned; refused before any write: one the account lacks, a regional one of another region, one another Service keeps or another cluster's load balancer holds",
    },
    AnnotationDoc {
        key: LOADBALANCER_POOL_ALGORITHM,
        values: "`round_robin`, `least_connections`, `source_ip`",
        default: "`round_robin`",
        change: "a new pool next to the old one, then the listener switches: listener-recreate",
    },
    AnnotationDoc {
        key: LOADBALANCER_POOL_PROTOCOL,
        values: "`tcp`, `proxy`, `proxyv2` (TCP ports)",
        default: "`tcp`",
        change: "as the algorithm: listener-recreate",
    },
    AnnotationDoc {
        key: LOADBALANCER_FORCE_HOSTNAME,
        values: "a DNS name",
        default: "none (the VIPs)",
        change: "status only: none",
    },
    AnnotationDoc {
        key: LOADBALANCER_IP_MODE,
        values: "`Proxy`, `VIP`",
        default: "`Proxy`",
        change: "status only: none",
    },
    AnnotationDoc {
        key: LOADBALANCER_HEALTH_MONITOR_DELAY_S,
        values: "seconds ≥ 1",
        default: "`2`",
        change: "monitor PATCHed: minimal",
    },
    AnnotationDoc {
        key: LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S,
        values: "seconds ≥ 1",
        default: "`1`",
        change: "monitor PATCHed: minimal",
    },
    AnnotationDoc {
        key: LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
        values: "checks ≥ 1",
        default: "`2`",
        change: "monitor PATCHed: minimal",
    },
    AnnotationDoc {
        key: LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD,
        values: "checks ≥ 1",
        default: "`3`",
        change: "monitor PATCHed: minimal",
    },
    AnnotationDoc {
        key: LOADBALANCER_HEALTH_MONITOR_TYPE,
        values: "`ping`, `tcp`, `http`, `https`, `tls-hello`, `udp-connect`",
        default: "`tcp` for TCP ports, `udp-connect` for UDP ports (unless this says `ping`), `http` of kube-proxy's health check under `externalTrafficPolicy: Local`",
        change: "monitor replaced, members checked anew: minimal",
    },
    AnnotationDoc {
        key: LOADBALANCER_HEALTH_MONITOR_HTTP,
        values: "JSON object: `method`, `url_path`, `version`, `host`, `expected_codes`",
        default: "`{}` (GET / HTTP 1.1, 200)",
        change: "PATCHed (a new version replaces the monitor): minimal; only for `http` and `https` checks",
    },
    AnnotationDoc {
        key: LOADBALANCER_LISTENER_PROTOCOL,
        values: "`tcp` (TCP ports)",
        default: "`tcp`",
        change: "-",
    },
    AnnotationDoc {
        key: LOADBALANCER_LISTENER_ALLOWED_CIDRS,
        values: "JSON list of CIDRs or addresses",
        default: "`[]` (everyone; `spec.loadBalancerSourceRanges` when set)",
        change: "listeners PATCHed: minimal, for clients still allowed none",
    },
    AnnotationDoc {
        key: LOADBALANCER_TIMEOUT_CLIENT_DATA_MS,
        values: "milliseconds ≥ 1",
        default: "`50000`",
        change: "listeners PATCHed: none",
    },
    AnnotationDoc {
        key: LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
        values: "milliseconds ≥ 1",
        default: "`5000`",
        change: "listeners PATCHed: none",
    },
    AnnotationDoc {
        key: LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
        values: "milliseconds ≥ 1",
        default: "`50000`",
        change: "listeners PATCHed: none",
    },
    AnnotationDoc {
        key: LOADBALANCER_LISTENER_ALLOWED_SUBNETS,
        values: "JSON list of subnet UUIDs of the account",
        default: "`[]` (every subnet of the nodes)",
        change: "members added before others are removed: minimal; none left: outage; an unknown subnet is refused",
    },
    AnnotationDoc {
        key: LOADBALANCER_NODE_SELECTOR,
        values: "a label selector over Node labels",
        default: "every node",
        change: "members added before others are removed: minimal; none left: outage",
    },
];

/// The reference as a Markdown table.
pub fn markdown() -> String {
    let mut out =
        String::from("| annotation | values | default | a change on a running load balancer |\n");
    out.push_str("| --- | --- | --- | --- |\n");
    for a in &ANNOTATIONS {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            a.key, a.values, a.default, a.change
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_shown_are_the_parsers() {
        let shown = |key: &str| {
            ANNOTATIONS
                .iter()
                .find(|a| a.key == key)
                .map(|a| a.default)
                .unwrap_or_default()
        };
        let numbers = [
            (
                LOADBALANCER_HEALTH_MONITOR_DELAY_S,
                DEFAULT_HEALTH_MONITOR_DELAY_S,
            ),
            (
                LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S,
                DEFAULT_HEALTH_MONITOR_TIMEOUT_S,
            ),
            (
                LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
                DEFAULT_HEALTH_MONITOR_UP_THRESHOLD,
            ),
            (
                LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD,
                DEFAULT_HEALTH_MONITOR_DOWN_THRESHOLD,
            ),
            (
                LOADBALANCER_TIMEOUT_CLIENT_DATA_MS,
                DEFAULT_TIMEOUT_CLIENT_DATA_MS,
            ),
            (
                LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
                DEFAULT_TIMEOUT_MEMBER_CONNECT_MS,
            ),
            (
                LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
                DEFAULT_TIMEOUT_MEMBER_DATA_MS,
            ),
        ];
        for (key, value) in numbers {
            assert_eq!(shown(key), format!("`{value}`"), "{key}");
        }
        assert_eq!(shown(LOADBALANCER_FLAVOR), format!("`{DEFAULT_FLAVOR}`"));
        assert!(shown(LOADBALANCER_NAME).contains(DEFAULT_LB_NAME_PREFIX));
        assert_eq!(
            shown(LOADBALANCER_POOL_ALGORITHM),
            format!("`{}`", PoolAlgorithm::default())
        );
        assert_eq!(
            shown(LOADBALANCER_POOL_PROTOCOL),
            format!("`{}`", PoolProtocol::default())
        );
        assert_eq!(
            shown(LOADBALANCER_IP_MODE),
            format!("`{}`", IpMode::default())
        );
    }

    #[test]
    fn the_reference_lists_every_annotation_in_order() {
        let keys: Vec<&str> = ANNOTATIONS.iter().map(|a| a.key).collect();
        assert_eq!(keys, ALL_ANNOTATIONS);
    }
}
