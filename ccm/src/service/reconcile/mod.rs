//! The reconcile of the service controller: the controller's watches and queue, one
//! Service's pipeline (prepare, ensure, wait), its progress and errors, the floating IP
//! claims between Services, and what it remembers of each Service between reconciles.

pub mod claims;
pub mod context;
pub mod controller;
pub mod ensure;
pub mod error;
pub mod prepare;
pub mod progress;
pub mod state;
pub mod wait;
