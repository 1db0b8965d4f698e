//! Request body parsing with Django-REST-framework-style field errors.
//!
//! Handlers pull typed fields out of a [`Body`]; every problem is recorded under the field's
//! name and reported together, so a client sees all missing fields at once (reference check 5).
//! Nothing here panics on any input.

use crate::error::ApiError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

pub const REQUIRED: &str = "This field is required.";
pub const NOT_NULL: &str = "This field may not be null.";
pub const NOT_BLANK: &str = "This field may not be blank.";
pub const NOT_STRING: &str = "Not a valid string.";
pub const NOT_INTEGER: &str = "A valid integer is required.";
pub const NOT_BOOLEAN: &str = "Must be a valid boolean.";
pub const NOT_UUID: &str = "Must be a valid UUID.";
pub const IMMUTABLE: &str = "This field cannot be changed once set.";

/// A parsed JSON object body plus the errors found while reading its fields.
#[derive(Debug, Default)]
pub struct Body {
    map: Map<String, Value>,
    errors: BTreeMap<String, String>,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

impl Body {
    /// Parses raw bytes. An empty body is an empty object (the Go SDK sends `Content-Type:
    /// application/json` with no body on actions).
    pub fn parse(bytes: &[u8]) -> Result<Body, ApiError> {
        if bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(Body::default());
        }
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| ApiError::detail(format!("JSON parse error - {e}")))?;
        match value {
            Value::Object(map) => Ok(Body {
                map,
                errors: BTreeMap::new(),
            }),
            other => Err(ApiError::field(
                "non_field_errors",
                format!(
                    "Invalid data. Expected a dictionary, but got {}.",
                    type_name(&other)
                ),
            )),
        }
    }

    pub fn from_map(map: Map<String, Value>) -> Body {
        Body {
            map,
            errors: BTreeMap::new(),
        }
    }

    /// Records an error for `key` unless one is already there.
    pub fn error(&mut self, key: &str, message: impl Into<String>) {
        self.errors
            .entry(key.to_string())
            .or_insert_with(|| message.into());
    }

    pub fn has_error(&self, key: &str) -> bool {
        self.errors.contains_key(key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    pub fn raw(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    /// Fails with every recorded field error.
    pub fn finish(self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::BadRequest(self.errors))
        }
    }

    /// Whether errors were recorded so far (handlers stop before cross-field checks).
    pub fn ok_so_far(&self) -> bool {
        self.errors.is_empty()
    }

    fn present(&mut self, key: &str, required: bool) -> Option<Value> {
        match self.map.get(key) {
            None => {
                if required {
                    self.error(key, REQUIRED);
                }
                None
            }
            Some(Value::Null) => {
                self.error(key, NOT_NULL);
                None
            }
            Some(v) => Some(v.clone()),
        }
    }

    /// A non-null, non-blank string.
    pub fn string(&mut self, key: &str, required: bool) -> Option<String> {
        match self.present(key, required)? {
            Value::String(s) if s.is_empty() && required => {
                self.error(key, NOT_BLANK);
                None
            }
            Value::String(s) => Some(s),
            _ => {
                self.error(key, NOT_STRING);
                None
            }
        }
    }

    /// A string that may also be `null`: `Some(None)` for an explicit null.
    pub fn nullable_string(&mut self, key: &str) -> Option<Option<String>> {
        match self.map.get(key)? {
            Value::Null => Some(None),
            Value::String(s) => Some(Some(s.clone())),
            _ => {
                self.error(key, NOT_STRING);
                None
            }
        }
    }

    /// An integer within `min..=max`; `range_msg` is the error text for values outside.
    pub fn int(&mut self, key: &str, required: bool) -> Option<i64> {
        match self.present(key, required)? {
            Value::Number(n) => match n.as_i64() {
                Some(i) => Some(i),
                None => {
                    self.error(key, NOT_INTEGER);
                    None
                }
            },
            _ => {
                self.error(key, NOT_INTEGER);
                None
            }
        }
    }

    /// An integer that may be `null`.
    pub fn nullable_int(&mut self, key: &str) -> Option<Option<i64>> {
        match self.map.get(key)? {
            Value::Null => Some(None),
            Value::Number(n) if n.as_i64().is_some() => Some(n.as_i64()),
            _ => {
                self.error(key, NOT_INTEGER);
                None
            }
        }
    }

    pub fn boolean(&mut self, key: &str) -> Option<bool> {
        match self.present(key, false)? {
            Value::Bool(b) => Some(b),
            _ => {
                self.error(key, NOT_BOOLEAN);
                None
            }
        }
    }

    /// A list of strings; `null` is an error.
    pub fn string_list(&mut self, key: &str) -> Option<Vec<String>> {
        let value = self.present(key, false)?;
        self.strings_of(key, value)
    }

    /// A list of strings that may be `null`.
    pub fn nullable_string_list(&mut self, key: &str) -> Option<Option<Vec<String>>> {
        match self.map.get(key)?.clone() {
            Value::Null => Some(None),
            v => self.strings_of(key, v).map(Some),
        }
    }

    fn strings_of(&mut self, key: &str, value: Value) -> Option<Vec<String>> {
        let Value::Array(items) = value else {
            self.error(
                key,
                format!(
                    "Expected a list of items but got type \"{}\".",
                    type_name(&value)
                ),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::String(s) => out.push(s),
                _ => {
                    self.error(key, NOT_STRING);
                    return None;
                }
            }
        }
        Some(out)
    }

    /// A list of objects (e.g. `interfaces`, `vip_addresses`).
    pub fn object_list(&mut self, key: &str) -> Option<Vec<Map<String, Value>>> {
        let value = self.present(key, false)?;
        let Value::Array(items) = value else {
            self.error(
                key,
                format!(
                    "Expected a list of items but got type \"{}\".",
                    type_name(&value)
                ),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::Object(m) => out.push(m),
                other => {
                    self.error(
                        key,
                        format!(
                            "Invalid data. Expected a dictionary, but got {}.",
                            type_name(&other)
                        ),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    /// An object that may be `null`.
    pub fn nullable_object(&mut self, key: &str) -> Option<Option<Map<String, Value>>> {
        match self.map.get(key)?.clone() {
            Value::Null => Some(None),
            Value::Object(m) => Some(Some(m)),
            other => {
                self.error(
                    key,
                    format!(
                        "Invalid data. Expected a dictionary, but got {}.",
                        type_name(&other)
                    ),
                );
                None
            }
        }
    }

    /// `tags`: an object of strings.
    pub fn tags(&mut self) -> Option<BTreeMap<String, String>> {
        let value = self.present("tags", false)?;
        let Value::Object(map) = value else {
            self.error(
                "tags",
                format!(
                    "Expected a dictionary of items but got type \"{}\".",
                    type_name(&value)
                ),
            );
            return None;
        };
        let mut out = BTreeMap::new();
        for (k, v) in map {
            match v {
                Value::String(s) => {
                    out.insert(k, s);
                }
                _ => {
                    self.error(
                        "tags",
                        format!("The value of tag \"{k}\" must be a string."),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    /// A UUID given as a string (a reference to another resource).
    pub fn uuid(&mut self, key: &str, required: bool) -> Option<uuid::Uuid> {
        let s = self.string(key, required)?;
        match parse_uuid(&s) {
            Some(u) => Some(u),
            None => {
                self.error(key, NOT_UUID);
                None
            }
        }
    }

    /// A UUID that may be `null`.
    pub fn nullable_uuid(&mut self, key: &str) -> Option<Option<uuid::Uuid>> {
        match self.nullable_string(key)? {
            None => Some(None),
            Some(s) => match parse_uuid(&s) {
                Some(u) => Some(Some(u)),
                None => {
                    self.error(key, NOT_UUID);
                    None
                }
            },
        }
    }

    /// Records an error if `key` is present with a value that differs from `current`
    /// (sending the unchanged value back is harmless, and some clients do).
    pub fn immutable(&mut self, key: &str, current: &Value) {
        if let Some(sent) = self.map.get(key)
            && !same_reference(sent, current)
        {
            self.error(key, IMMUTABLE);
        }
    }
}

/// Compares a value sent by a client with the stored one, where the stored one may be a stub
/// object (`{"slug": ..}` or `{"uuid": ..}`) and the client sends just the slug or UUID.
fn same_reference(sent: &Value, current: &Value) -> bool {
    if sent == current {
        return true;
    }
    match (sent, current) {
        (Value::String(s), Value::Object(m)) => ["slug", "uuid"]
            .iter()
            .any(|k| m.get(*k).and_then(Value::as_str) == Some(s.as_str())),
        _ => false,
    }
}

/// Parses a hyphenated UUID.
pub fn parse_uuid(s: &str) -> Option<uuid::Uuid> {
    if s.len() != 36 {
        return None;
    }
    uuid::Uuid::parse_str(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Body {
        Body::parse(v.to_string().as_bytes()).expect("object")
    }

    #[test]
    fn empty_body_is_an_empty_object() {
        let b = Body::parse(b"").expect("empty ok");
        assert!(b.ok_so_far());
        assert!(Body::parse(b" \n").is_ok());
    }

    #[test]
    fn malformed_json_is_a_detail_error() {
        let err = Body::parse(b"{\"name\": ").expect_err("malformed");
        let ApiError::BadRequest(map) = err else {
            panic!("not a 400")
        };
        assert!(map["detail"].starts_with("JSON parse error"));
    }

    #[test]
    fn non_object_is_rejected() {
        assert!(Body::parse(b"[1,2]").is_err());
        assert!(Body::parse(b"\"x\"").is_err());
    }

    #[test]
    fn missing_fields_are_all_reported() {
        let mut b = body(json!({}));
        assert_eq!(b.string("cidr", true), None);
        assert_eq!(b.uuid("network", true), None);
        let ApiError::BadRequest(map) = b.finish().expect_err("errors") else {
            panic!("not a 400")
        };
        assert_eq!(map["cidr"], REQUIRED);
        assert_eq!(map["network"], REQUIRED);
    }

    #[test]
    fn wrong_types_name_the_field() {
        let mut b = body(json!({"protocol_port": "eighty", "enabled": 1, "tags": {"a": 1}}));
        assert_eq!(b.int("protocol_port", true), None);
        assert_eq!(b.boolean("enabled"), None);
        assert_eq!(b.tags(), None);
        let ApiError::BadRequest(map) = b.finish().expect_err("errors") else {
            panic!("not a 400")
        };
        assert_eq!(map["protocol_port"], NOT_INTEGER);
        assert_eq!(map["enabled"], NOT_BOOLEAN);
        assert!(map.contains_key("tags"));
    }

    #[test]
    fn immutable_accepts_the_same_value_or_slug() {
        let mut b = body(json!({"zone": "rma1", "flavor": "lb-other"}));
        b.immutable("zone", &json!({"slug": "rma1"}));
        b.immutable(
            "flavor",
            &json!({"slug": "lb-standard", "name": "LB-Standard"}),
        );
        b.immutable("absent", &json!("x"));
        let ApiError::BadRequest(map) = b.finish().expect_err("flavor changed") else {
            panic!("not a 400")
        };
        assert_eq!(map.len(), 1);
        assert_eq!(map["flavor"], IMMUTABLE);
    }

    #[test]
    fn uuid_requires_hyphenated_form() {
        let mut b = body(json!({"a": "not-a-uuid", "b": "0b4e4b9a-9d1b-4bd3-9a39-6b2c1a8b3c6d"}));
        assert_eq!(b.uuid("a", true), None);
        assert!(b.uuid("b", true).is_some());
        assert!(b.has_error("a"));
    }
}
