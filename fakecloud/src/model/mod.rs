//! The resource model: records, the rules for creating and changing them (validation that
//! needs the store, state transitions on the virtual clock, cascades) and their JSON
//! rendering. No HTTP here: handlers in `crate::api` parse requests and call these
//! functions. The data plane (`crate::dataplane`) is kept in step by the model alone.

pub mod bucket_metrics;
pub mod buckets;
pub mod custom_images;
pub mod floating_ips;
pub mod load_balancers;
pub mod networks;
pub mod objects_users;
pub mod project_logs;
pub mod routers;
pub mod server_groups;
pub mod servers;
pub mod store;
pub mod volume_snapshots;
pub mod volumes;
