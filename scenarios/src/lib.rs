//! Testbed (embedded Kubernetes API server, simulated kubelets) and scenario suites for the
//! cloudscale.ch cloud controller manager.

pub mod apiserver;
pub mod ccm_bed;
pub mod ccm_identity;
pub mod cluster;
pub mod kubectl;
pub mod kubelet;
pub mod proxy;
pub mod reference_lbs;
pub mod sim;
pub mod testbed;
pub mod wait;
pub mod workloads;
