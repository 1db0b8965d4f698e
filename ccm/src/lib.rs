//! The cloudscale.ch cloud controller manager.
//!
//! Nothing lives here yet: the node and service controllers arrive with their own issues.
//! The crate exists so the workspace has its final shape from the start.
