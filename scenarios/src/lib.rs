//! Testbed (embedded Kubernetes API server, simulated kubelets) and scenario suites for the
//! cloudscale.ch cloud controller manager.

pub mod apiserver;
