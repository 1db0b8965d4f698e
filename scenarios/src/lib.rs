//! Testbed (embedded Kubernetes API server, simulated kubelets) and scenario suites.
//!
//! Empty for now: the testbed arrives with its own issue.
