//! Switches for API behaviour the real cloudscale.ch does not document. fakecloud errs on the
//! strict side by default (fakecloud/README.md, "Choices where the real behaviour is not
//! documented"); each switch turns one such choice lenient, so a client can be tested against
//! both possible real behaviours.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// How one undocumented rule is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strictness {
    /// fakecloud's documented choice: refuse or ignore what the reference leaves open.
    #[default]
    Strict,
    /// Accept and keep it.
    Lenient,
}

impl Strictness {
    pub const VALUES: &'static [&'static str] = &["strict", "lenient"];

    pub fn is_lenient(self) -> bool {
        self == Strictness::Lenient
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Strictness::Strict => "strict",
            Strictness::Lenient => "lenient",
        }
    }
}

impl fmt::Display for Strictness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A strictness that is neither `strict` nor `lenient`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be strict or lenient, got \"{0}\"")]
pub struct BadStrictness(pub String);

impl FromStr for Strictness {
    type Err = BadStrictness;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "strict" => Ok(Strictness::Strict),
            "lenient" => Ok(Strictness::Lenient),
            other => Err(BadStrictness(other.to_string())),
        }
    }
}

/// The switchable rules; `Default` is strict everywhere (what fakecloud always did).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiRules {
    /// A pool member with the same address and `protocol_port` as another member of its
    /// pool: strict refuses it (400 under `address`), lenient creates it.
    #[serde(default)]
    pub duplicate_members: Strictness,
    /// An `http` object sent for a monitor that is not `http`/`https`: strict ignores it and
    /// reports `http: null`, lenient stores it as for HTTP monitors and reports it.
    #[serde(default)]
    pub non_http_monitor_http: Strictness,
}

/// A change of the rules that names unknown rules or values: every problem, keyed by the
/// rule name as sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("; "))]
pub struct RulesError(pub BTreeMap<String, String>);

impl ApiRules {
    /// The rule names, as flags (with `-`) and admin keys (with `_`) spell them.
    pub const NAMES: &'static [&'static str] = &["duplicate_members", "non_http_monitor_http"];

    fn slot(&mut self, name: &str) -> Option<&mut Strictness> {
        match name {
            "duplicate_members" => Some(&mut self.duplicate_members),
            "non_http_monitor_http" => Some(&mut self.non_http_monitor_http),
            _ => None,
        }
    }

    /// `self` with the rules named in `change` (`{"duplicate_members": "lenient"}`) set; all
    /// or nothing: any unknown name or value refuses the whole change.
    pub fn with_changes(&self, change: &Map<String, Value>) -> Result<ApiRules, RulesError> {
        let mut out = *self;
        let mut errors = BTreeMap::new();
        for (name, value) in change {
            let Some(slot) = out.slot(name) else {
                errors.insert(
                    name.clone(),
                    format!("unknown rule (known: {})", Self::NAMES.join(", ")),
                );
                continue;
            };
            let parsed = match value {
                Value::String(s) => s.parse::<Strictness>().map_err(|e| e.to_string()),
                other => Err(format!("must be strict or lenient, got {other}")),
            };
            match parsed {
                Ok(v) => *slot = v,
                Err(e) => {
                    errors.insert(name.clone(), e);
                }
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(RulesError(errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn default_is_strict_and_serializes_by_name() {
        let r = ApiRules::default();
        assert_eq!(
            serde_json::to_value(r).expect("serialize"),
            json!({"duplicate_members": "strict", "non_http_monitor_http": "strict"})
        );
    }

    #[test]
    fn changes_set_only_the_named_rules() {
        let r = ApiRules::default()
            .with_changes(&map(json!({"duplicate_members": "lenient"})))
            .expect("valid change");
        assert_eq!(r.duplicate_members, Strictness::Lenient);
        assert_eq!(r.non_http_monitor_http, Strictness::Strict);
    }

    #[test]
    fn unknown_names_and_values_refuse_everything() {
        let err = ApiRules::default()
            .with_changes(&map(json!({
                "duplicate_members": "lenient",
                "no_such_rule": "strict",
                "non_http_monitor_http": "sloppy",
            })))
            .expect_err("refused");
        assert_eq!(
            err.0.keys().collect::<Vec<_>>(),
            ["no_such_rule", "non_http_monitor_http"]
        );
        assert!(err.0["non_http_monitor_http"].contains("sloppy"), "{err}");
        let err = ApiRules::default()
            .with_changes(&map(json!({"duplicate_members": true})))
            .expect_err("not a string");
        assert!(err.0.contains_key("duplicate_members"), "{err}");
    }

    #[test]
    fn strictness_parses_its_two_names_only() {
        assert_eq!("strict".parse(), Ok(Strictness::Strict));
        assert_eq!("lenient".parse(), Ok(Strictness::Lenient));
        assert!("Lenient".parse::<Strictness>().is_err());
    }
}
