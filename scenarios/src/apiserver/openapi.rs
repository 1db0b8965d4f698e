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
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// The media type kubectl asks for in `Accept` when it wants the protobuf v2 document.
pub const V2_PROTOBUF_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The `Content-Type` of the protobuf v2 answer, as the real API server sends it: Go's
/// `mime.ParseMediaType` rejects the `@` of the `Accept` form, and kubectl 1.27 and 1.28 fail
/// with "mime: unexpected content after media subtype" when it is echoed back.
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
    let mut served = Vec::new();
    for r in RESOURCES {
        let Some((_, _, _, schema_fn)) = KIND_SCHEMAS
            .iter()
            .find(|(g, v, k, _)| *g == r.group && *v == r.version && *k == r.kind)
        else {
            continue;
        };
        let reference = schema_fn(&mut generator);
        if let Some(definition) = ref_name(&reference, V2_REF) {
            served.push(Served {
                resource: r,
                definition,
            });
        }
    }
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
        let r = s.resource;
        let Some(def) = definitions.get_mut(&s.definition) else {
            continue;
        };
        // k8s-openapi requires `metadata` because its Rust field is not optional; the real
        // schemas do not.
        if let Some(required) = def.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|v| v != "metadata");
            if required.is_empty() {
                def.as_object_mut().map(|o| o.remove("required"));
            }
        }
        def["x-kubernetes-group-version-kind"] = json!([gvk(r.group, r.version, r.kind)]);
        let list_name = format!("{}List", s.definition);
        let list = json!({
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
        });
        definitions.insert(list_name, list);
    }

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

// ---------------------------------------------------------------------------------------------
// Paths

#[derive(Clone, Copy, PartialEq, Eq)]
enum Loc {
    Query,
    Path,
}

struct Param {
    name: &'static str,
    loc: Loc,
    ty: &'static str,
    description: &'static str,
}

const fn query(name: &'static str, ty: &'static str, description: &'static str) -> Param {
    Param {
        name,
        loc: Loc::Query,
        ty,
        description,
    }
}

const DRY_RUN: Param = query(
    "dryRun",
    "string",
    "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
);
const FIELD_MANAGER: Param = query(
    "fieldManager",
    "string",
    "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
);
const FIELD_VALIDATION: Param = query(
    "fieldValidation",
    "string",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.",
);
const FORCE: Param = query(
    "force",
    "boolean",
    "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
);
const PRETTY: Param = query(
    "pretty",
    "string",
    "If 'true', then the output is pretty printed.",
);
const LIST_PARAMS: &[Param] = &[
    query(
        "allowWatchBookmarks",
        "boolean",
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
    ),
    query(
        "continue",
        "string",
        "The continue option should be set when retrieving more results from the server.",
    ),
    query(
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    query(
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    query(
        "limit",
        "integer",
        "limit is a maximum number of responses to return for a list call.",
    ),
    query(
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    query(
        "resourceVersionMatch",
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    query(
        "sendInitialEvents",
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
    ),
    query(
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call.",
    ),
    query(
        "watch",
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
    ),
];
const DELETE_PARAMS: &[Param] = &[
    DRY_RUN,
    query(
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    query(
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.",
    ),
    query(
        "propagationPolicy",
        "string",
        "Whether and how garbage collection will be performed.",
    ),
];

const NAME: Param = Param {
    name: "name",
    loc: Loc::Path,
    ty: "string",
    description: "name of the object",
};
const NAMESPACE: Param = Param {
    name: "namespace",
    loc: Loc::Path,
    ty: "string",
    description: "object name and auth scope, such as for teams and projects",
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    None,
    Object,
    Patch,
    DeleteOptions,
}

struct Op {
    method: &'static str,
    action: &'static str,
    operation_id: String,
    description: String,
    params: Vec<&'static Param>,
    body: Body,
    /// Response definition, and the success codes.
    response: String,
    codes: &'static [&'static str],
}

struct PathEntry {
    path: String,
    params: Vec<&'static Param>,
    ops: Vec<Op>,
    resource: &'static ResourceType,
}

fn group_prefix(group: &str) -> String {
    let first = group.split('.').next().unwrap_or("");
    if first.is_empty() {
        return "Core".to_string();
    }
    let mut chars = first.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn write_params(patch: bool) -> Vec<&'static Param> {
    let mut p = vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION];
    if patch {
        p.push(&FORCE);
    }
    p
}

fn paths_for(s: &Served) -> Vec<PathEntry> {
    let r = s.resource;
    let gv = format!("{}{}", group_prefix(r.group), capitalized(r.version));
    let ns = if r.namespaced { "Namespaced" } else { "" };
    let kind = r.kind;
    let def = &s.definition;
    let list_def = format!("{def}List");
    let status_def = format!("{META}Status");
    let base = r.group_version_path();
    let collection = if r.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{base}/{}", r.plural)
    };
    let mut scope: Vec<&'static Param> = Vec::new();
    if r.namespaced {
        scope.push(&NAMESPACE);
    }
    scope.push(&PRETTY);
    let mut item_scope = vec![&NAME];
    item_scope.extend(scope.iter().copied());

    let op = |method, action, id: String, description: String, params, body, response, codes| Op {
        method,
        action,
        operation_id: id,
        description,
        params,
        body,
        response,
        codes,
    };
    let mut deletecollection_params: Vec<&'static Param> = DELETE_PARAMS.iter().collect();
    deletecollection_params.extend(LIST_PARAMS.iter());
    let mut out = vec![
        PathEntry {
            path: collection.clone(),
            params: scope.clone(),
            resource: r,
            ops: vec![
                op(
                    "get",
                    "list",
                    format!("list{gv}{ns}{kind}"),
                    format!("list or watch objects of kind {kind}"),
                    LIST_PARAMS.iter().collect(),
                    Body::None,
                    list_def.clone(),
                    &["200"],
                ),
                op(
                    "post",
                    "post",
                    format!("create{gv}{ns}{kind}"),
                    format!("create a {kind}"),
                    write_params(false),
                    Body::Object,
                    def.clone(),
                    &["200", "201", "202"],
                ),
                op(
                    "delete",
                    "deletecollection",
                    format!("delete{gv}Collection{ns}{kind}"),
                    format!("delete collection of {kind}"),
                    deletecollection_params,
                    Body::DeleteOptions,
                    status_def.clone(),
                    &["200"],
                ),
            ],
        },
        PathEntry {
            path: format!("{collection}/{{name}}"),
            params: item_scope.clone(),
            resource: r,
            ops: vec![
                op(
                    "get",
                    "get",
                    format!("read{gv}{ns}{kind}"),
                    format!("read the specified {kind}"),
                    Vec::new(),
                    Body::None,
                    def.clone(),
                    &["200"],
                ),
                op(
                    "put",
                    "put",
                    format!("replace{gv}{ns}{kind}"),
                    format!("replace the specified {kind}"),
                    write_params(false),
                    Body::Object,
                    def.clone(),
                    &["200", "201"],
                ),
                op(
                    "patch",
                    "patch",
                    format!("patch{gv}{ns}{kind}"),
                    format!("partially update the specified {kind}"),
                    write_params(true),
                    Body::Patch,
                    def.clone(),
                    &["200", "201"],
                ),
                op(
                    "delete",
                    "delete",
                    format!("delete{gv}{ns}{kind}"),
                    format!("delete a {kind}"),
                    DELETE_PARAMS.iter().collect(),
                    Body::DeleteOptions,
                    status_def.clone(),
                    &["200", "202"],
                ),
            ],
        },
    ];
    if r.status {
        out.push(PathEntry {
            path: format!("{collection}/{{name}}/status"),
            params: item_scope.clone(),
            resource: r,
            ops: vec![
                op(
                    "get",
                    "get",
                    format!("read{gv}{ns}{kind}Status"),
                    format!("read status of the specified {kind}"),
                    Vec::new(),
                    Body::None,
                    def.clone(),
                    &["200"],
                ),
                op(
                    "put",
                    "put",
                    format!("replace{gv}{ns}{kind}Status"),
                    format!("replace status of the specified {kind}"),
                    write_params(false),
                    Body::Object,
                    def.clone(),
                    &["200", "201"],
                ),
                op(
                    "patch",
                    "patch",
                    format!("patch{gv}{ns}{kind}Status"),
                    format!("partially update status of the specified {kind}"),
                    write_params(true),
                    Body::Patch,
                    def.clone(),
                    &["200", "201"],
                ),
            ],
        });
    }
    if r.scale() {
        let scale = SCALE.to_string();
        out.push(PathEntry {
            path: format!("{collection}/{{name}}/scale"),
            params: item_scope,
            resource: r,
            ops: vec![
                op(
                    "get",
                    "get",
                    format!("read{gv}{ns}{kind}Scale"),
                    format!("read scale of the specified {kind}"),
                    Vec::new(),
                    Body::None,
                    scale.clone(),
                    &["200"],
                ),
                op(
                    "put",
                    "put",
                    format!("replace{gv}{ns}{kind}Scale"),
                    format!("replace scale of the specified {kind}"),
                    write_params(false),
                    Body::Object,
                    scale.clone(),
                    &["200", "201"],
                ),
                op(
                    "patch",
                    "patch",
                    format!("patch{gv}{ns}{kind}Scale"),
                    format!("partially update scale of the specified {kind}"),
                    write_params(true),
                    Body::Patch,
                    scale,
                    &["200", "201"],
                ),
            ],
        });
    }
    if r.namespaced {
        out.push(PathEntry {
            path: format!("{base}/{}", r.plural),
            params: vec![&PRETTY],
            resource: r,
            ops: vec![op(
                "get",
                "list",
                format!("list{gv}{kind}ForAllNamespaces"),
                format!("list or watch objects of kind {kind}"),
                LIST_PARAMS.iter().collect(),
                Body::None,
                list_def,
                &["200"],
            )],
        });
    }
    out
}

fn all_paths() -> Vec<PathEntry> {
    MODEL.served.iter().flat_map(paths_for).collect()
}

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

// ---------------------------------------------------------------------------------------------
// OpenAPI v3

/// Rewrites a v2-style schema into its OpenAPI 3.0 form.
fn to_v3_schema(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                if k == "$ref" {
                    let name = v
                        .as_str()
                        .unwrap_or_default()
                        .strip_prefix(V2_REF)
                        .unwrap_or_default();
                    out.insert(k.clone(), json!(format!("{V3_REF}{name}")));
                } else if k == "properties" || k == "definitions" {
                    let props = v
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(n, s)| (n.clone(), to_v3_schema(s)))
                                .collect::<Map<_, _>>()
                        })
                        .unwrap_or_default();
                    out.insert(k.clone(), Value::Object(props));
                } else {
                    out.insert(k.clone(), to_v3_schema(v));
                }
            }
            // OpenAPI 3.0 ignores siblings of `$ref`: the real documents wrap such references.
            if out.len() > 1
                && let Some(reference) = out.remove("$ref")
            {
                out.insert("allOf".into(), json!([{"$ref": reference}]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(to_v3_schema).collect()),
        other => other.clone(),
    }
}

fn v3_definition(name: &str, def: &Value) -> Value {
    match name {
        INT_OR_STRING => json!({
            "description": def["description"],
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }),
        QUANTITY => json!({
            "description": def["description"],
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }),
        _ => to_v3_schema(def),
    }
}

fn v3_param(p: &Param) -> Value {
    let mut v = json!({
        "description": p.description,
        "in": match p.loc { Loc::Query => "query", Loc::Path => "path" },
        "name": p.name,
        "schema": {"type": p.ty, "uniqueItems": true},
    });
    if p.loc == Loc::Path {
        v["required"] = json!(true);
    }
    v
}

fn collect_refs(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    if let Some(name) = v.as_str().and_then(|s| s.strip_prefix(prefix)) {
                        out.insert(name.to_string());
                    }
                } else {
                    collect_refs(v, prefix, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, prefix, out)),
        _ => {}
    }
}

fn build_v3(group: &str, version: &str) -> Value {
    let mut paths = Map::new();
    for entry in all_paths()
        .into_iter()
        .filter(|e| e.resource.group == group && e.resource.version == version)
    {
        let r = entry.resource;
        let mut item = Map::new();
        for o in &entry.ops {
            let mut op = Map::new();
            op.insert("description".into(), json!(o.description));
            op.insert("operationId".into(), json!(o.operation_id));
            op.insert(
                "parameters".into(),
                json!(o.params.iter().map(|p| v3_param(p)).collect::<Vec<_>>()),
            );
            if let Some(def) = body_def(o.body, &o.response) {
                let types: Vec<&str> = if o.body == Body::Patch {
                    PATCH_TYPES.to_vec()
                } else {
                    vec!["*/*"]
                };
                let content: Map<String, Value> = types
                    .into_iter()
                    .map(|t| {
                        (
                            t.to_string(),
                            json!({"schema": {"$ref": format!("{V3_REF}{def}")}}),
                        )
                    })
                    .collect();
                op.insert(
                    "requestBody".into(),
                    json!({"content": content, "required": o.body != Body::DeleteOptions}),
                );
            }
            let mut responses = Map::new();
            for code in o.codes {
                let content: Map<String, Value> = PRODUCES
                    .iter()
                    .map(|t| {
                        (
                            t.to_string(),
                            json!({"schema": {"$ref": format!("{V3_REF}{}", o.response)}}),
                        )
                    })
                    .collect();
                responses.insert(
                    (*code).into(),
                    json!({"description": "OK", "content": content}),
                );
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            op.insert("responses".into(), Value::Object(responses));
            op.insert(
                "tags".into(),
                json!([format!("{}_{}", tag_group(r.group), r.version)]),
            );
            op_extensions(o, r, &mut op);
            item.insert(o.method.into(), Value::Object(op));
        }
        item.insert(
            "parameters".into(),
            json!(entry.params.iter().map(|p| v3_param(p)).collect::<Vec<_>>()),
        );
        paths.insert(entry.path, Value::Object(item));
    }

    // The definitions the paths reach, and everything they reference.
    let mut wanted = BTreeSet::new();
    let paths = Value::Object(paths);
    collect_refs(&paths, V3_REF, &mut wanted);
    let mut schemas = Map::new();
    let mut queue: Vec<String> = wanted.into_iter().collect();
    while let Some(name) = queue.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        let Some(def) = MODEL.definitions.get(&name) else {
            continue;
        };
        let mut refs = BTreeSet::new();
        collect_refs(def, V2_REF, &mut refs);
        queue.extend(refs.into_iter().filter(|n| !schemas.contains_key(n)));
        schemas.insert(name.clone(), v3_definition(&name, def));
    }
    let schemas: BTreeMap<String, Value> = schemas.into_iter().collect();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                },
            },
        },
        "security": [{"BearerToken": []}],
    })
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

static V3_DOCS: LazyLock<BTreeMap<String, Value>> = LazyLock::new(|| {
    group_versions()
        .into_iter()
        .filter(|(g, v)| {
            MODEL
                .served
                .iter()
                .any(|s| s.resource.group == *g && s.resource.version == *v)
        })
        .map(|(g, v)| (gv_path(g, v), build_v3(g, v)))
        .collect()
});

/// A stable hash of a document, for the `hash` query parameter of the v3 discovery document.
fn hash_of(v: &Value) -> String {
    // FNV-1a, twice with different offsets, for 32 hex digits.
    let text = v.to_string();
    let mut out = String::new();
    for offset in [0xcbf2_9ce4_8422_2325_u64, 0x6c62_272e_07bb_0142] {
        let mut h = offset;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        out.push_str(&format!("{h:016X}"));
    }
    out
}

static V3_DISCOVERY: LazyLock<Value> = LazyLock::new(|| {
    let paths: Map<String, Value> = V3_DOCS
        .iter()
        .map(|(path, doc)| {
            (
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash_of(doc))}),
            )
        })
        .collect();
    json!({"paths": paths})
});

/// `GET /openapi/v3`: the group-versions with a document, and where to fetch each.
pub fn v3_discovery() -> Value {
    V3_DISCOVERY.clone()
}

/// `GET /openapi/v3/{group_version_path}` for `api/v1`, `apis/discovery.k8s.io/v1`, ... (a
/// leading `/` or `/openapi/v3/` is ignored); `None` for a group-version that is not served.
pub fn v3_document(group_version_path: &str) -> Option<&'static Value> {
    let path = group_version_path.trim_start_matches('/');
    let path = path.strip_prefix("openapi/v3/").unwrap_or(path);
    let path = path.split('?').next().unwrap_or(path).trim_end_matches('/');
    V3_DOCS.get(path)
}

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
