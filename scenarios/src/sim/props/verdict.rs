//! What every part of a case's judgement reports (`play.rs`, `measure.rs`, `neighbours.rs`):
//! a broken property. A leaf, so that the measurements do not import the player for it.

/// A broken property.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub property: &'static str,
    pub detail: String,
}
