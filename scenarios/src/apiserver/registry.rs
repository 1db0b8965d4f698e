//! The resource types the embedded API server serves: what discovery advertises and what
//! the REST handlers accept.

/// One served resource type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceType {
    /// API group; `""` for the core group (`/api/v1`).
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// URL segment, e.g. `services`.
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Has a `/status` subresource (updates through it touch only `status`, updates of the
    /// main resource never touch `status`).
    pub status: bool,
    pub categories: &'static [&'static str],
}

/// Verbs every served type supports.
pub const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const fn core(
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: bool,
) -> ResourceType {
    ResourceType {
        group: "",
        version: "v1",
        kind,
        plural,
        singular,
        namespaced,
        short_names,
        status,
        categories: &[],
    }
}

/// A `v1` type of a named group.
const fn group_type(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: bool,
) -> ResourceType {
    ResourceType {
        group,
        ..core(kind, plural, singular, namespaced, short_names, status)
    }
}

pub const RESOURCES: &[ResourceType] = &[
    core("Namespace", "namespaces", "namespace", false, &["ns"], true),
    core("Node", "nodes", "node", false, &["no"], true),
    ResourceType {
        categories: &["all"],
        ..core("Service", "services", "service", true, &["svc"], true)
    },
    core("Endpoints", "endpoints", "endpoints", true, &["ep"], false),
    ResourceType {
        categories: &["all"],
        ..core("Pod", "pods", "pod", true, &["po"], true)
    },
    core("Secret", "secrets", "secret", true, &[], false),
    core("ConfigMap", "configmaps", "configmap", true, &["cm"], false),
    core("Event", "events", "event", true, &["ev"], false),
    core(
        "ServiceAccount",
        "serviceaccounts",
        "serviceaccount",
        true,
        &["sa"],
        false,
    ),
    ResourceType {
        group: "discovery.k8s.io",
        version: "v1",
        kind: "EndpointSlice",
        plural: "endpointslices",
        singular: "endpointslice",
        namespaced: true,
        short_names: &[],
        status: false,
        categories: &[],
    },
    ResourceType {
        group: "events.k8s.io",
        version: "v1",
        kind: "Event",
        plural: "events",
        singular: "event",
        namespaced: true,
        short_names: &["ev"],
        status: false,
        categories: &[],
    },
    ResourceType {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        plural: "leases",
        singular: "lease",
        namespaced: true,
        short_names: &[],
        status: false,
        categories: &[],
    },
    // Deployments and ReplicaSets are defaulted and validated here (`apps.rs`) and have the
    // `scale` subresource; the testbed's controllers (`src/workloads/`) run them. No
    // controller acts on PodDisruptionBudgets: they are stored so that `kubectl apply -f
    // deploy/config.yml` and the Helm chart's render apply here. The RBAC objects are what
    // the authorizer (`rbac.rs`) reads.
    ResourceType {
        categories: &["all"],
        ..group_type(
            "apps",
            "Deployment",
            "deployments",
            "deployment",
            true,
            &["deploy"],
            true,
        )
    },
    ResourceType {
        categories: &["all"],
        ..group_type(
            "apps",
            "ReplicaSet",
            "replicasets",
            "replicaset",
            true,
            &["rs"],
            true,
        )
    },
    // DaemonSets, Jobs, CronJobs and ReplicationControllers run through the testbed's
    // controllers like Deployments (`src/workloads/`); APIServices are stored for manifests
    // that register an aggregated API (nothing serves them here).
    ResourceType {
        categories: &["all"],
        ..group_type(
            "apps",
            "DaemonSet",
            "daemonsets",
            "daemonset",
            true,
            &["ds"],
            true,
        )
    },
    ResourceType {
        categories: &["all"],
        ..group_type("batch", "Job", "jobs", "job", true, &[], true)
    },
    ResourceType {
        categories: &["all"],
        ..group_type(
            "batch",
            "CronJob",
            "cronjobs",
            "cronjob",
            true,
            &["cj"],
            true,
        )
    },
    ResourceType {
        categories: &["all"],
        ..core(
            "ReplicationController",
            "replicationcontrollers",
            "replicationcontroller",
            true,
            &["rc"],
            true,
        )
    },
    group_type(
        "apiregistration.k8s.io",
        "APIService",
        "apiservices",
        "apiservice",
        false,
        &[],
        true,
    ),
    group_type(
        "policy",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        true,
        &["pdb"],
        true,
    ),
    group_type(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        "clusterrole",
        false,
        &[],
        false,
    ),
    group_type(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "clusterrolebinding",
        false,
        &[],
        false,
    ),
    group_type(
        "rbac.authorization.k8s.io",
        "Role",
        "roles",
        "role",
        true,
        &[],
        false,
    ),
    group_type(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        "rolebindings",
        "rolebinding",
        true,
        &[],
        false,
    ),
];

impl ResourceType {
    /// Has a `scale` subresource (`autoscaling/v1` `Scale`).
    pub fn scale(&self) -> bool {
        has_scale(self.group, self.kind)
    }

    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The resource as kube-apiserver names it in messages (`schema.GroupResource.String()`):
    /// `services`, `deployments.apps`.
    pub fn qualified_resource(&self) -> String {
        qualify(self.plural, self.group)
    }

    /// The kind as `Invalid` errors name it (`schema.GroupKind.String()`): `Service`,
    /// `Deployment.apps`.
    pub fn qualified_kind(&self) -> String {
        qualify(self.kind, self.group)
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The path prefix of the group-version: `/api/v1` or `/apis/group/version`.
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// Storage identity: the core and `events.k8s.io` Events are one store (the real API
    /// server converts between the two versions).
    pub fn storage_key(&self) -> &'static str {
        match (self.group, self.plural) {
            ("events.k8s.io", "events") | ("", "events") => "events",
            (_, p) => p,
        }
    }
}

/// `name.group`, or `name` in the core group.
pub fn qualify(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}

/// The served type for a group, version and plural.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Served group-versions in discovery order (core first).
pub fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for r in RESOURCES {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}

/// Kinds with a `scale` subresource.
pub fn has_scale(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apps", "Deployment" | "ReplicaSet") | ("", "ReplicationController")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_and_group_paths() {
        let svc = find("", "v1", "services").expect("services");
        assert_eq!(svc.api_version(), "v1");
        assert_eq!(svc.group_version_path(), "/api/v1");
        let lease = find("coordination.k8s.io", "v1", "leases").expect("leases");
        assert_eq!(lease.api_version(), "coordination.k8s.io/v1");
        assert_eq!(lease.group_version_path(), "/apis/coordination.k8s.io/v1");
        assert_eq!(lease.list_kind(), "LeaseList");
    }

    #[test]
    fn both_event_versions_share_storage() {
        let core = find("", "v1", "events").expect("core events");
        let new = find("events.k8s.io", "v1", "events").expect("events.k8s.io");
        assert_eq!(core.storage_key(), new.storage_key());
    }

    #[test]
    fn plurals_are_unique_per_group_version() {
        for (i, a) in RESOURCES.iter().enumerate() {
            for b in &RESOURCES[i + 1..] {
                assert!(
                    !(a.group == b.group && a.version == b.version && a.plural == b.plural),
                    "{} twice",
                    a.plural
                );
            }
        }
    }
}
