//! The Table columns of each kind: name, type, priority and description, as a real API
//! server's printers declare them (`pkg/printers/internalversion`).

use super::{AGE_DOC, Col, NAME_DOC, apps, workloads};
use crate::apiserver::registry::ResourceType;

/// The columns of a type, in the printers' order.
pub(super) fn column_specs(rt: &ResourceType) -> Vec<Col> {
    let name: Col = ("Name", "string", 0, NAME_DOC);
    let age: Col = ("Age", "string", 0, AGE_DOC);
    match (rt.group, rt.kind) {
        ("", "Service") => service(name, age),
        ("", "Node") => node(name, age),
        ("", "Namespace") => namespace(name, age),
        ("", "Pod") => pod(name, age),
        ("", "ConfigMap") => config_map(name, age),
        ("", "Secret") => secret(name, age),
        ("", "ServiceAccount") => service_account(name, age),
        ("", "Endpoints") => endpoints(name, age),
        ("discovery.k8s.io", "EndpointSlice") => endpoint_slice(name, age),
        ("apps", kind @ ("Deployment" | "ReplicaSet")) => apps::columns(kind, name, age),
        ("apps", "DaemonSet")
        | ("batch", "Job" | "CronJob")
        | ("", "ReplicationController")
        | ("apiregistration.k8s.io", "APIService") => workloads::columns(rt.kind, name, age),
        ("coordination.k8s.io", "Lease") => lease(name, age),
        (_, "Event") => event(),
        _ => vec![name, ("Created At", "date", 0, AGE_DOC)],
    }
}

fn service(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Type",
            "string",
            0,
            "type determines how the Service is exposed.",
        ),
        (
            "Cluster-IP",
            "string",
            0,
            "clusterIP is the IP address of the service and is usually assigned randomly.",
        ),
        (
            "External-IP",
            "string",
            0,
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
        ),
        (
            "Port(s)",
            "string",
            0,
            "The list of ports that are exposed by this service.",
        ),
        age,
        (
            "Selector",
            "string",
            1,
            "Route service traffic to pods with label keys and values matching this selector.",
        ),
    ]
}

fn node(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        ("Status", "string", 0, "The status of the node"),
        ("Roles", "string", 0, "The roles of the node"),
        age,
        (
            "Version",
            "string",
            0,
            "Kubelet Version reported by the node.",
        ),
        (
            "Internal-IP",
            "string",
            1,
            "List of addresses reachable to the node. Queried from cloud provider, if available.",
        ),
        (
            "External-IP",
            "string",
            1,
            "List of addresses reachable to the node. Queried from cloud provider, if available.",
        ),
        (
            "OS-Image",
            "string",
            1,
            "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        ),
        (
            "Kernel-Version",
            "string",
            1,
            "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        ),
        (
            "Container-Runtime",
            "string",
            1,
            "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        ),
    ]
}

fn namespace(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        ("Status", "string", 0, "The status of the namespace"),
        age,
    ]
}

fn pod(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Ready",
            "string",
            0,
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        (
            "Status",
            "string",
            0,
            "The aggregate status of the containers in this pod.",
        ),
        (
            "Restarts",
            "string",
            0,
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        age,
        (
            "IP",
            "string",
            1,
            "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        ),
        (
            "Node",
            "string",
            1,
            "NodeName indicates in which node this pod is scheduled.",
        ),
        (
            "Nominated Node",
            "string",
            1,
            "nominatedNodeName is set only when this pod preempts other pods on the node.",
        ),
        (
            "Readiness Gates",
            "string",
            1,
            "If specified, all readiness gates will be evaluated for pod readiness.",
        ),
    ]
}

fn config_map(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        ("Data", "string", 0, "Data contains the configuration data."),
        age,
    ]
}

fn secret(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Type",
            "string",
            0,
            "Used to facilitate programmatic handling of secret data.",
        ),
        ("Data", "string", 0, "Data contains the secret data."),
        age,
    ]
}

fn service_account(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Secrets",
            "string",
            0,
            "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
        ),
        age,
    ]
}

fn endpoints(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Endpoints",
            "string",
            0,
            "Endpoints is the list of endpoints in the cluster.",
        ),
        age,
    ]
}

fn endpoint_slice(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "AddressType",
            "string",
            0,
            "addressType specifies the type of address carried by this EndpointSlice.",
        ),
        (
            "Ports",
            "string",
            0,
            "ports specifies the list of network ports exposed by each endpoint in this slice.",
        ),
        (
            "Endpoints",
            "string",
            0,
            "endpoints is a list of unique endpoints in this slice.",
        ),
        age,
    ]
}

fn lease(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Holder",
            "string",
            0,
            "holderIdentity contains the identity of the holder of a current lease.",
        ),
        age,
    ]
}

fn event() -> Vec<Col> {
    vec![
        (
            "Last Seen",
            "string",
            0,
            "The time at which the most recent occurrence of this event was recorded.",
        ),
        (
            "Type",
            "string",
            0,
            "Type of this event (Normal, Warning), new types could be added in the future",
        ),
        (
            "Reason",
            "string",
            0,
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        ),
        (
            "Object",
            "string",
            0,
            "The object that this event is about.",
        ),
        (
            "Subobject",
            "string",
            1,
            "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.",
        ),
        ("Source", "string", 1, "The component reporting this event."),
        (
            "Message",
            "string",
            0,
            "A human-readable description of the status of this operation.",
        ),
        (
            "First Seen",
            "string",
            1,
            "The time at which the event was first recorded.",
        ),
        (
            "Count",
            "string",
            1,
            "The number of times this event has occurred.",
        ),
        ("Name", "string", 1, NAME_DOC),
    ]
}
