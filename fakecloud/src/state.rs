//! The in-memory store. It lives in `model::store` (the model owns its records and the
//! rules for changing them); this path stays for users of `fakecloud::state`.

pub use crate::model::store::*;
