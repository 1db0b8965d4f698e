//! OpenAPI documents for the served resource types: `/openapi/v2` (JSON, and gnostic protobuf
//! for kubectl 1.27's client-side validation) and `/openapi/v3` (discovery document plus one
//! JSON document per group-version, used by `kubectl explain` and kubectl's check for
//! server-side field validation).
//!
//! The schemas come from k8s-openapi's `schemars` output (descriptions included, names are
//! already the Kubernetes definition names such as `io.k8s.api.core.v1.ServiceSpec`), with the
//! extensions the real API server adds: `x-kubernetes-group-version-kind` on every top-level
//! kind, and the strategic-merge-patch and list/map-type markers
//! (`x-kubernetes-patch-merge-key`, `x-kubernetes-patch-strategy`, `x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`) from the Go type markers. Everything
//! is computed once and cached; nothing here does I/O.

use super::registry::{RESOURCES, ResourceType, group_versions};
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::autoscaling::v1 as autoscaling;
use k8s_openapi::api::batch::v1 as batch;
use k8s_openapi::api::coordination::v1 as coordination;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::events::v1 as events;
use k8s_openapi::api::policy::v1 as policy;
use k8s_openapi::api::rbac::v1 as rbac;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use k8s_openapi::schemars::generate::SchemaSettings;
use k8s_openapi::schemars::{Schema, SchemaGenerator};
use prost::Message as _;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The `Content-Type` of the protobuf v2 answer, as the real API server sends it: Go's
/// `mime.ParseMediaType` rejects the `@` of the form kubectl asks for in `Accept`
/// (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), and kubectl 1.27 and 1.28
/// fail with "mime: unexpected content after media subtype" when it is echoed back.
pub const V2_PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The version the documents' `info` reports.
pub const INFO_VERSION: &str = "v1.32.0";

const V2_REF: &str = "#/definitions/";
const V3_REF: &str = "#/components/schemas/";
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The Rust type behind each served kind (group, version, kind).
const KIND_SCHEMAS: &[(&str, &str, &str, SchemaFn)] = &[
    (
        "",
        "v1",
        "Namespace",
        SchemaGenerator::subschema_for::<core::Namespace>,
    ),
    (
        "",
        "v1",
        "Node",
        SchemaGenerator::subschema_for::<core::Node>,
    ),
    (
        "",
        "v1",
        "Service",
        SchemaGenerator::subschema_for::<core::Service>,
    ),
    (
        "",
        "v1",
        "Endpoints",
        SchemaGenerator::subschema_for::<core::Endpoints>,
    ),
    ("", "v1", "Pod", SchemaGenerator::subschema_for::<core::Pod>),
    (
        "",
        "v1",
        "Secret",
        SchemaGenerator::subschema_for::<core::Secret>,
    ),
    (
        "",
        "v1",
        "ConfigMap",
        SchemaGenerator::subschema_for::<core::ConfigMap>,
    ),
    (
        "",
        "v1",
        "Event",
        SchemaGenerator::subschema_for::<core::Event>,
    ),
    (
        "",
        "v1",
        "ServiceAccount",
        SchemaGenerator::subschema_for::<core::ServiceAccount>,
    ),
    (
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        SchemaGenerator::subschema_for::<discovery::EndpointSlice>,
    ),
    (
        "events.k8s.io",
        "v1",
        "Event",
        SchemaGenerator::subschema_for::<events::Event>,
    ),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        SchemaGenerator::subschema_for::<coordination::Lease>,
    ),
    (
        "apps",
        "v1",
        "Deployment",
        SchemaGenerator::subschema_for::<apps::Deployment>,
    ),
    (
        "apps",
        "v1",
        "ReplicaSet",
        SchemaGenerator::subschema_for::<apps::ReplicaSet>,
    ),
    (
        "apps",
        "v1",
        "DaemonSet",
        SchemaGenerator::subschema_for::<apps::DaemonSet>,
    ),
    (
        "batch",
        "v1",
        "Job",
        SchemaGenerator::subschema_for::<batch::Job>,
    ),
    (
        "batch",
        "v1",
        "CronJob",
        SchemaGenerator::subschema_for::<batch::CronJob>,
    ),
    (
        "",
        "v1",
        "ReplicationController",
        SchemaGenerator::subschema_for::<core::ReplicationController>,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        SchemaGenerator::subschema_for::<apiregistration::APIService>,
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        SchemaGenerator::subschema_for::<policy::PodDisruptionBudget>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        SchemaGenerator::subschema_for::<rbac::ClusterRole>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        SchemaGenerator::subschema_for::<rbac::ClusterRoleBinding>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        SchemaGenerator::subschema_for::<rbac::Role>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        SchemaGenerator::subschema_for::<rbac::RoleBinding>,
    ),
];

/// Meta types the paths refer to.
const META_SCHEMAS: &[SchemaFn] = &[
    SchemaGenerator::subschema_for::<meta::Status>,
    SchemaGenerator::subschema_for::<meta::DeleteOptions>,
    SchemaGenerator::subschema_for::<meta::ListMeta>,
    SchemaGenerator::subschema_for::<meta::Patch>,
    SchemaGenerator::subschema_for::<autoscaling::Scale>,
];

/// The definition of the `scale` subresource's object.
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// Markers of the Go types that k8s-openapi's schemas do not carry, as the real API server
/// publishes them: (definition, property or `""` for the definition itself, extension, value).
/// Extracted from the `+patchMergeKey`, `+patchStrategy`, `+listType`, `+listMapKey`,
/// `+mapType` and `+structType` markers of the Kubernetes API types, for the definitions the
/// served kinds reach. `x-kubernetes-list-map-keys` values are comma-separated here.
#[rustfmt::skip]
const MARKERS: &[(&str, &str, &str, &str)] = &[
    ("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "dryRun", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", "matchExpressions", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", "values", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "x-kubernetes-list-map-keys", "uid"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "x-kubernetes-list-type", "map"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "x-kubernetes-patch-merge-key", "uid"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "x-kubernetes-list-type", "set"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "managedFields", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails", "causes", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.batch.v1.CronJobStatus", "active", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.batch.v1.JobStatus", "conditions", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.batch.v1.JobStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.batch.v1.JobStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.batch.v1.PodFailurePolicy", "rules", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "values", "x-kubernetes-list-type", "set"),
    ("io.k8s.api.batch.v1.PodFailurePolicyRule", "onPodConditions", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.batch.v1.SuccessPolicy", "rules", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.batch.v1.UncountedTerminatedPods", "failed", "x-kubernetes-list-type", "set"),
    ("io.k8s.api.batch.v1.UncountedTerminatedPods", "succeeded", "x-kubernetes-list-type", "set"),
    ("io.k8s.api.core.v1.ReplicationControllerSpec", "selector", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec", "caBundle", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.discovery.v1.Endpoint", "addresses", "x-kubernetes-list-type", "set"),
    ("io.k8s.api.discovery.v1.EndpointHints", "forZones", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.discovery.v1.EndpointHints", "forNodes", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.discovery.v1.EndpointPort", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.discovery.v1.EndpointSlice", "endpoints", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.discovery.v1.EndpointSlice", "ports", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Capabilities", "add", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Capabilities", "drop", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ConfigMapKeySelector", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.ConfigMapProjection", "items", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ConfigMapVolumeSource", "items", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Container", "command", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Container", "args", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Container", "ports", "x-kubernetes-list-map-keys", "containerPort,protocol"),
    ("io.k8s.api.core.v1.Container", "ports", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.Container", "ports", "x-kubernetes-patch-merge-key", "containerPort"),
    ("io.k8s.api.core.v1.Container", "ports", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.Container", "envFrom", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Container", "env", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.Container", "env", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.Container", "env", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.Container", "env", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.Container", "resizePolicy", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Container", "restartPolicyRules", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Container", "volumeMounts", "x-kubernetes-list-map-keys", "mountPath"),
    ("io.k8s.api.core.v1.Container", "volumeMounts", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.Container", "volumeMounts", "x-kubernetes-patch-merge-key", "mountPath"),
    ("io.k8s.api.core.v1.Container", "volumeMounts", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.Container", "volumeDevices", "x-kubernetes-list-map-keys", "devicePath"),
    ("io.k8s.api.core.v1.Container", "volumeDevices", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.Container", "volumeDevices", "x-kubernetes-patch-merge-key", "devicePath"),
    ("io.k8s.api.core.v1.Container", "volumeDevices", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.ContainerImage", "names", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ContainerRestartRuleOnExitCodes", "values", "x-kubernetes-list-type", "set"),
    ("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", "x-kubernetes-list-map-keys", "mountPath"),
    ("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", "x-kubernetes-patch-merge-key", "mountPath"),
    ("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.ContainerStatus", "allocatedResourcesStatus", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.ContainerStatus", "allocatedResourcesStatus", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.ContainerStatus", "allocatedResourcesStatus", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.ContainerStatus", "allocatedResourcesStatus", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.DownwardAPIProjection", "items", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.DownwardAPIVolumeSource", "items", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.EndpointAddress", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.EndpointPort", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.EndpointSubset", "addresses", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.EndpointSubset", "notReadyAddresses", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.EndpointSubset", "ports", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.Endpoints", "subsets", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ExecAction", "command", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.FileKeySelector", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.HostAlias", "hostnames", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.LinuxContainerUser", "supplementalGroups", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.LoadBalancerIngress", "ports", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.LoadBalancerStatus", "ingress", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.LocalObjectReference", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.NamespaceSpec", "finalizers", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NamespaceStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.core.v1.NamespaceStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.NamespaceStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.core.v1.NamespaceStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.NodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeSelector", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.NodeSelector", "nodeSelectorTerms", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeSelectorRequirement", "values", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeSelectorTerm", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.NodeSelectorTerm", "matchExpressions", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeSelectorTerm", "matchFields", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeSpec", "podCIDRs", "x-kubernetes-list-type", "set"),
    ("io.k8s.api.core.v1.NodeSpec", "podCIDRs", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.NodeSpec", "taints", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.NodeStatus", "addresses", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.core.v1.NodeStatus", "addresses", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.NodeStatus", "addresses", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.core.v1.NodeStatus", "addresses", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.NodeStatus", "images", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeStatus", "volumesInUse", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeStatus", "volumesAttached", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeStatus", "runtimeHandlers", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.NodeStatus", "declaredFeatures", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ObjectFieldSelector", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.ObjectReference", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "accessModes", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodAffinityTerm", "namespaces", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodAffinityTerm", "matchLabelKeys", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodAffinityTerm", "mismatchLabelKeys", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodExtendedResourceClaimStatus", "requestMappings", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodSecurityContext", "supplementalGroups", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodSecurityContext", "sysctls", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodSpec", "volumes", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "volumes", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "volumes", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodSpec", "volumes", "x-kubernetes-patch-strategy", "merge,retainKeys"),
    ("io.k8s.api.core.v1.PodSpec", "initContainers", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "initContainers", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "initContainers", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodSpec", "initContainers", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodSpec", "tolerations", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", "x-kubernetes-list-map-keys", "ip"),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", "x-kubernetes-patch-merge-key", "ip"),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodSpec", "readinessGates", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", "x-kubernetes-list-map-keys", "topologyKey,whenUnsatisfiable"),
    ("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", "x-kubernetes-patch-merge-key", "topologyKey"),
    ("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodSpec", "schedulingGates", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "schedulingGates", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "schedulingGates", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodSpec", "schedulingGates", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", "x-kubernetes-patch-strategy", "merge,retainKeys"),
    ("io.k8s.api.core.v1.PodStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.core.v1.PodStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.core.v1.PodStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodStatus", "hostIPs", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodStatus", "hostIPs", "x-kubernetes-patch-merge-key", "ip"),
    ("io.k8s.api.core.v1.PodStatus", "hostIPs", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodStatus", "podIPs", "x-kubernetes-list-map-keys", "ip"),
    ("io.k8s.api.core.v1.PodStatus", "podIPs", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodStatus", "podIPs", "x-kubernetes-patch-merge-key", "ip"),
    ("io.k8s.api.core.v1.PodStatus", "podIPs", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.PodStatus", "initContainerStatuses", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodStatus", "containerStatuses", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodStatus", "ephemeralContainerStatuses", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", "x-kubernetes-patch-strategy", "merge,retainKeys"),
    ("io.k8s.api.core.v1.ProjectedVolumeSource", "sources", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ResourceFieldSelector", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.ResourceRequirements", "claims", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.ResourceRequirements", "claims", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.ResourceStatus", "resources", "x-kubernetes-list-map-keys", "resourceID"),
    ("io.k8s.api.core.v1.ResourceStatus", "resources", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.SecretKeySelector", "", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.SecretProjection", "items", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.SecretVolumeSource", "items", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ServiceAccount", "secrets", "x-kubernetes-list-map-keys", "name"),
    ("io.k8s.api.core.v1.ServiceAccount", "secrets", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.ServiceAccount", "secrets", "x-kubernetes-patch-merge-key", "name"),
    ("io.k8s.api.core.v1.ServiceAccount", "secrets", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.ServiceAccount", "imagePullSecrets", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", "x-kubernetes-list-map-keys", "port,protocol"),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", "x-kubernetes-patch-merge-key", "port"),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.ServiceSpec", "selector", "x-kubernetes-map-type", "atomic"),
    ("io.k8s.api.core.v1.ServiceSpec", "clusterIPs", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ServiceSpec", "externalIPs", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ServiceSpec", "loadBalancerSourceRanges", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilies", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.ServiceStatus", "conditions", "x-kubernetes-list-map-keys", "type"),
    ("io.k8s.api.core.v1.ServiceStatus", "conditions", "x-kubernetes-list-type", "map"),
    ("io.k8s.api.core.v1.ServiceStatus", "conditions", "x-kubernetes-patch-merge-key", "type"),
    ("io.k8s.api.core.v1.ServiceStatus", "conditions", "x-kubernetes-patch-strategy", "merge"),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "matchLabelKeys", "x-kubernetes-list-type", "atomic"),
    ("io.k8s.api.core.v1.TypedLocalObjectReference", "", "x-kubernetes-map-type", "atomic"),
];

/// One served kind's definition name and resource type.
struct Served {
    resource: &'static ResourceType,
    definition: String,
}

struct Model {
    /// v2-style definitions (`#/definitions/` references).
    definitions: BTreeMap<String, Value>,
    served: Vec<Served>,
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn ref_name(schema: &Schema, prefix: &str) -> Option<String> {
    schema
        .as_object()?
        .get("$ref")?
        .as_str()?
        .strip_prefix(prefix)
        .map(str::to_string)
}

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn apply_marker(def: &mut Value, property: &str, key: &str, value: &str) {
    let value = match key {
        "x-kubernetes-list-map-keys" => json!(value.split(',').collect::<Vec<_>>()),
        _ => json!(value),
    };
    if property.is_empty() {
        def[key] = value;
        return;
    }
    let Some(props) = def.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    let wanted = normalize(property);
    if let Some((_, prop)) = props.iter_mut().find(|(name, _)| normalize(name) == wanted) {
        prop[key] = value;
    }
}

static MODEL: LazyLock<Model> = LazyLock::new(build_model);

fn build_model() -> Model {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/definitions".into();
        s.meta_schema = None;
    });
    let mut generator = SchemaGenerator::new(settings);
    let served = served_kinds(&mut generator);
    for schema_fn in META_SCHEMAS {
        schema_fn(&mut generator);
    }
    let mut definitions: BTreeMap<String, Value> =
        generator.take_definitions(false).into_iter().collect();

    // Scalars that the real documents describe as strings.
    if let Some(d) = definitions.get_mut(INT_OR_STRING) {
        *d = json!({"description": d["description"], "type": "string", "format": "int-or-string"});
    }
    if let Some(d) = definitions.get_mut(QUANTITY) {
        *d = json!({"description": d["description"], "type": "string"});
    }
    for s in &served {
        let Some(def) = definitions.get_mut(&s.definition) else {
            continue;
        };
        adapt_kind_definition(def, s.resource);
        definitions.insert(format!("{}List", s.definition), list_definition(s));
    }
    mark_meta_kinds(&mut definitions);
    for (definition, property, key, value) in MARKERS {
        if let Some(def) = definitions.get_mut(*definition) {
            apply_marker(def, property, key, value);
        }
    }

    Model {
        definitions,
        served,
    }
}

/// Generates the schema of each served kind that has one, returning where it went.
fn served_kinds(generator: &mut SchemaGenerator) -> Vec<Served> {
    let mut served = Vec::new();
    for r in RESOURCES {
        let Some((_, _, _, schema_fn)) = KIND_SCHEMAS
            .iter()
            .find(|(g, v, k, _)| *g == r.group && *v == r.version && *k == r.kind)
        else {
            continue;
        };
        let reference = schema_fn(generator);
        if let Some(definition) = ref_name(&reference, V2_REF) {
            served.push(Served {
                resource: r,
                definition,
            });
        }
    }
    served
}

/// A served kind's definition as the real documents have it.
fn adapt_kind_definition(def: &mut Value, r: &ResourceType) {
    // k8s-openapi requires `metadata` because its Rust field is not optional; the real
    // schemas do not.
    if let Some(required) = def.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|v| v != "metadata");
        if required.is_empty() {
            def.as_object_mut().map(|o| o.remove("required"));
        }
    }
    def["x-kubernetes-group-version-kind"] = json!([gvk(r.group, r.version, r.kind)]);
}

/// The definition of a served kind's list.
fn list_definition(s: &Served) -> Value {
    let r = s.resource;
    json!({
        "description": format!("{} is a list of {} objects.", r.list_kind(), r.kind),
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string",
            },
            "items": {
                "description": format!("Items is the list of {} objects.", r.kind),
                "type": "array",
                "items": {"$ref": format!("{V2_REF}{}", s.definition)},
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string",
            },
            "metadata": {
                "$ref": format!("{V2_REF}{META}ListMeta"),
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "required": ["items"],
        "x-kubernetes-group-version-kind": [gvk(r.group, r.version, &r.list_kind())],
    })
}

/// The group-version-kinds of the meta kinds every group serves.
fn mark_meta_kinds(definitions: &mut BTreeMap<String, Value>) {
    let all_gvs: Vec<Value> = group_versions()
        .into_iter()
        .map(|(g, v)| gvk(g, v, "DeleteOptions"))
        .collect();
    if let Some(d) = definitions.get_mut(&format!("{META}DeleteOptions")) {
        d["x-kubernetes-group-version-kind"] = Value::Array(all_gvs);
    }
    if let Some(d) = definitions.get_mut(&format!("{META}Status")) {
        d["x-kubernetes-group-version-kind"] = json!([gvk("", "v1", "Status")]);
    }
    if let Some(d) = definitions.get_mut(SCALE) {
        d["x-kubernetes-group-version-kind"] = json!([gvk("autoscaling", "v1", "Scale")]);
    }
}

mod paths;
use paths::{Body, Loc, Op, Param, all_paths};

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
];
const PRODUCES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

fn body_def(body: Body, object: &str) -> Option<String> {
    match body {
        Body::None => None,
        Body::Object => Some(object.to_string()),
        Body::Patch => Some(format!("{META}Patch")),
        Body::DeleteOptions => Some(format!("{META}DeleteOptions")),
    }
}

fn op_extensions(o: &Op, r: &ResourceType, target: &mut Map<String, Value>) {
    target.insert("x-kubernetes-action".into(), json!(o.action));
    let kind = if o.response == SCALE {
        gvk("autoscaling", "v1", "Scale")
    } else {
        gvk(r.group, r.version, r.kind)
    };
    target.insert("x-kubernetes-group-version-kind".into(), kind);
}

fn v2_param(p: &Param) -> Value {
    let mut v = json!({
        "description": p.description,
        "in": match p.loc { Loc::Query => "query", Loc::Path => "path" },
        "name": p.name,
        "type": p.ty,
        "uniqueItems": true,
    });
    if p.loc == Loc::Path {
        v["required"] = json!(true);
    }
    v
}

fn v2_paths() -> Value {
    let mut paths = Map::new();
    for entry in all_paths() {
        let r = entry.resource;
        let mut item = Map::new();
        for o in &entry.ops {
            let mut params: Vec<Value> = Vec::new();
            if let Some(def) = body_def(o.body, &o.response) {
                params.push(json!({
                    "in": "body",
                    "name": "body",
                    "required": o.body != Body::DeleteOptions,
                    "schema": {"$ref": format!("{V2_REF}{def}")},
                }));
            }
            params.extend(o.params.iter().map(|p| v2_param(p)));
            let mut responses = Map::new();
            for code in o.codes {
                responses.insert(
                    (*code).into(),
                    json!({"description": "OK", "schema": {"$ref": format!("{V2_REF}{}", o.response)}}),
                );
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            let consumes: Vec<&str> = if o.body == Body::Patch {
                PATCH_TYPES.to_vec()
            } else {
                vec!["*/*"]
            };
            let mut op = Map::new();
            op.insert("consumes".into(), json!(consumes));
            op.insert("description".into(), json!(o.description));
            op.insert("operationId".into(), json!(o.operation_id));
            op.insert("parameters".into(), json!(params));
            op.insert("produces".into(), json!(PRODUCES));
            op.insert("responses".into(), Value::Object(responses));
            op.insert("schemes".into(), json!(["https"]));
            op.insert(
                "tags".into(),
                json!([format!("{}_{}", tag_group(r.group), r.version)]),
            );
            op_extensions(o, r, &mut op);
            item.insert(o.method.into(), Value::Object(op));
        }
        item.insert(
            "parameters".into(),
            json!(entry.params.iter().map(|p| v2_param(p)).collect::<Vec<_>>()),
        );
        paths.insert(entry.path, Value::Object(item));
    }
    Value::Object(paths)
}

fn tag_group(group: &str) -> String {
    if group.is_empty() {
        "core".into()
    } else {
        group.split('.').next().unwrap_or(group).to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v2

static V2_JSON: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": v2_paths(),
        "definitions": MODEL.definitions,
    })
});

static V2_PROTOBUF: LazyLock<Vec<u8>> = LazyLock::new(|| encode_v2(&V2_JSON));

/// The OpenAPI v2 (swagger 2.0) document as JSON (`GET /openapi/v2`, `Accept: application/json`).
pub fn v2_json() -> &'static Value {
    &V2_JSON
}

/// The OpenAPI v2 document as gnostic `openapi_v2.Document` protobuf (`GET /openapi/v2`,
/// `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`).
pub fn v2_protobuf() -> &'static [u8] {
    &V2_PROTOBUF
}

/// Encodes a swagger 2.0 JSON document (as [`v2_json`] returns it, or a variant of it) as
/// gnostic protobuf.
pub fn encode_v2(doc: &Value) -> Vec<u8> {
    gnostic::document(doc).encode_to_vec()
}

mod v3;
pub use v3::{v3_discovery, v3_document};

// ---------------------------------------------------------------------------------------------
// gnostic protobuf

mod gnostic;

// ---------------------------------------------------------------------------------------------
// YAML for gnostic's `Any` values

/// A string YAML reads back as the same string without quotes.
fn plain_yaml_string(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
    ];
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-' | ','))
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str())
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::String(s) if plain_yaml_string(s) => s.clone(),
        // A JSON string is a YAML double-quoted string.
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Object(o) if o.is_empty() => "{}".into(),
        other => other.to_string(),
    }
}

fn yaml_lines(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                let mut lines = Vec::new();
                yaml_lines(item, &mut lines);
                for (i, line) in lines.into_iter().enumerate() {
                    out.push(if i == 0 {
                        format!("- {line}")
                    } else {
                        format!("  {line}")
                    });
                }
            }
        }
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let key = yaml_scalar(&Value::String(k.clone()));
                let nested = matches!(v, Value::Array(a) if !a.is_empty())
                    || matches!(v, Value::Object(o) if !o.is_empty());
                if nested {
                    out.push(format!("{key}:"));
                    let mut lines = Vec::new();
                    yaml_lines(v, &mut lines);
                    out.extend(lines.into_iter().map(|l| format!("  {l}")));
                } else {
                    out.push(format!("{key}: {}", yaml_scalar(v)));
                }
            }
        }
        other => out.push(yaml_scalar(other)),
    }
}

/// Block-style YAML for a JSON value, as gnostic stores vendor extensions
/// (`- group: ""\n  kind: Service\n  version: v1\n`).
fn yaml(v: &Value) -> String {
    let mut lines = Vec::new();
    yaml_lines(v, &mut lines);
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests;
