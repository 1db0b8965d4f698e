//! The scenarios' integration tests, one binary: a binary per file would link the whole of
//! `scenarios` (the API server, fakecloud, the CCM) again for each. The one
//! target apart is `tests/ccm_nodes.rs`: it installs a process-wide log subscriber at debug level
//! to prove no log line carries the token, which in this binary would capture every other test's
//! logs.

mod adoption;
mod ccm_events;
mod ccm_impact_table;
mod ccm_leader;
mod ccm_metrics;
mod ccm_process;
mod ccm_service;
mod ccm_services;
mod ccm_services_faults;
mod ccm_services_scenarios;
mod deploy;
mod kube_client;
mod kube_python;
mod kubectl;
mod manual;
mod openapi_kubectl;
mod prometheus;
mod props;
mod props_socket;
mod protobuf_bodies;
mod quick_start;
mod rbac;
mod sim;
mod testbed;
mod workload_controllers;
mod workload_kinds;
mod workloads;
