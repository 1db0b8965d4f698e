//! Testbed and scenario suites for the cloudscale.ch cloud controller manager, one folder
//! per part:
//! - [`apiserver`]: the embedded Kubernetes API server, speaking the real wire protocol;
//! - [`workloads`]: the workload controllers it runs (Deployments, Jobs, EndpointSlices, …);
//! - [`testbed`]: fakecloud, a cluster, simulated kubelets and the CCM, connected;
//! - [`sim`]: the deterministic simulation, with the property-based suite in [`sim::props`].

pub mod apiserver;
pub mod sim;
pub mod testbed;
pub mod workloads;
