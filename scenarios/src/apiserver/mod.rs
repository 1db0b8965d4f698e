//! An embedded Kubernetes API server: real HTTP, real wire formats, for the resources the CCM
//! and its testbed use. kube-rs controllers and kubectl talk to it as to a real cluster.

pub mod discovery;
pub mod registry;
