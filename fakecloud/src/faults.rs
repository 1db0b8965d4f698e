//! Fault injection: rules that make matching API requests fail, slow down or lose their
//! connection. A request failed by injection never reaches a handler, so it has no effect on
//! the state; only `lose_answer` runs the request and then withholds the answer. Rules are set through `/_fake/faults` or in-process through [`Faults`].

use crate::error::ApiError;
use axum::http::StatusCode;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// What a matching request suffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultEffect {
    /// Answer with this status (and flat body, default `{"detail": "Injected fault."}`),
    /// optionally with a `Retry-After` header; the request is not executed.
    Status {
        status: u16,
        #[serde(default)]
        body: Option<BTreeMap<String, String>>,
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// Hold the request this many (real) milliseconds, then execute it normally.
    Latency { ms: u64 },
    /// Close the connection without answering; the request is not executed.
    Drop,
    /// Execute the request, then close the connection without answering: the client cannot
    /// tell whether it happened (a proxy timing out after the commit).
    LoseAnswer,
}

impl FaultEffect {
    /// Answer `status` with the default body and no `Retry-After`.
    pub fn status(status: u16) -> FaultEffect {
        FaultEffect::Status {
            status,
            body: None,
            retry_after: None,
        }
    }
}

/// A fault rule. `path` is a glob over the request path: `*` matches within one segment,
/// `**` across segments (`/v1/load-balancers/**`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// Assigned when the rule is added.
    #[serde(default)]
    pub id: u64,
    /// HTTP method to match (any when omitted).
    #[serde(default)]
    pub method: Option<String>,
    pub path: String,
    /// A resource ID (UUID or IP) that must be one of the path's segments.
    #[serde(default)]
    pub resource: Option<String>,
    pub effect: FaultEffect,
    /// Chance that a matching request is hit (default 1).
    #[serde(default)]
    pub probability: Option<f64>,
    /// Seed of the rule's random draws, for reproducible runs (default: the rule's id).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Only the next N matching requests are hit (then the rule stays, inert).
    #[serde(default)]
    pub times: Option<u64>,
    /// How many requests the rule hit so far.
    #[serde(default)]
    pub hits: u64,
}

impl FaultRule {
    /// A rule hitting every matching request with `effect`.
    pub fn new(method: Option<&str>, path: &str, effect: FaultEffect) -> FaultRule {
        FaultRule {
            id: 0,
            method: method.map(str::to_string),
            path: path.to_string(),
            resource: None,
            effect,
            probability: None,
            seed: None,
            times: None,
            hits: 0,
        }
    }

    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }

    pub fn probability(mut self, p: f64, seed: u64) -> Self {
        self.probability = Some(p);
        self.seed = Some(seed);
        self
    }

    pub fn resource(mut self, id: &str) -> Self {
        self.resource = Some(id.to_string());
        self
    }

    fn validate(&self) -> Result<(), ApiError> {
        if !self.path.starts_with('/') {
            return Err(ApiError::field("path", "must start with /"));
        }
        if let Some(p) = self.probability
            && !(0.0..=1.0).contains(&p)
        {
            return Err(ApiError::field("probability", "must be between 0 and 1"));
        }
        if let FaultEffect::Status { status, .. } = &self.effect
            && StatusCode::from_u16(*status).is_err()
        {
            return Err(ApiError::field(
                "effect",
                format!("{status} is not an HTTP status"),
            ));
        }
        if let Some(m) = &self.method
            && m.parse::<axum::http::Method>().is_err()
        {
            return Err(ApiError::field(
                "method",
                format!("\"{m}\" is not an HTTP method"),
            ));
        }
        Ok(())
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        if self
            .method
            .as_deref()
            .is_some_and(|m| !m.eq_ignore_ascii_case(method))
        {
            return false;
        }
        if let Some(r) = &self.resource
            && !path.split('/').any(|seg| seg == r)
        {
            return false;
        }
        glob(self.path.as_bytes(), path.as_bytes())
    }
}

/// `*` matches any run of characters other than `/`; `**` matches anything.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        [b'*', rest @ ..] => {
            let seg = text.iter().position(|&c| c == b'/').unwrap_or(text.len());
            (0..=seg).any(|i| glob(rest, &text[i..]))
        }
        [c, rest @ ..] => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

/// SplitMix64: tiny, seedable, good enough for coin flips that must repeat exactly.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What to do with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Execute it, after this added latency.
    Pass(Duration),
    /// Answer with this error instead (after the latency).
    Fail(Duration, ApiError),
    /// Close the connection (after the latency).
    Drop(Duration),
    /// Execute it (after the latency), then close the connection without the answer.
    LoseAnswer(Duration),
}

#[derive(Debug, Default)]
struct Inner {
    rules: Vec<(FaultRule, Rng)>,
    next_id: u64,
}

/// The fault rules of one fakecloud.
#[derive(Debug, Default)]
pub struct Faults {
    inner: Mutex<Inner>,
}

impl Faults {
    /// Adds a rule; returns its id.
    pub fn add(&self, mut rule: FaultRule) -> Result<u64, ApiError> {
        rule.validate()?;
        let mut inner = self.inner.lock();
        inner.next_id += 1;
        rule.id = inner.next_id;
        rule.hits = 0;
        let rng = Rng(rule.seed.unwrap_or(rule.id));
        let id = rule.id;
        inner.rules.push((rule, rng));
        Ok(id)
    }

    /// The rules with their hit counts.
    pub fn list(&self) -> Vec<FaultRule> {
        self.inner
            .lock()
            .rules
            .iter()
            .map(|(r, _)| r.clone())
            .collect()
    }

    pub fn remove(&self, id: u64) -> bool {
        let mut inner = self.inner.lock();
        let before = inner.rules.len();
        inner.rules.retain(|(r, _)| r.id != id);
        inner.rules.len() != before
    }

    pub fn clear(&self) {
        self.inner.lock().rules.clear();
    }

    /// Decides the fate of a request. Latency rules add up; the first failing rule (status or
    /// drop) that fires ends the search.
    pub fn decide(&self, method: &str, path: &str) -> Decision {
        let mut inner = self.inner.lock();
        let mut latency = Duration::ZERO;
        for (rule, rng) in inner.rules.iter_mut() {
            if !rule.matches(method, path) || rule.times.is_some_and(|n| rule.hits >= n) {
                continue;
            }
            if let Some(p) = rule.probability
                && rng.next_f64() >= p
            {
                continue;
            }
            rule.hits += 1;
            match &rule.effect {
                FaultEffect::Latency { ms } => latency += Duration::from_millis(*ms),
                FaultEffect::Drop => return Decision::Drop(latency),
                FaultEffect::LoseAnswer => return Decision::LoseAnswer(latency),
                FaultEffect::Status {
                    status,
                    body,
                    retry_after,
                } => {
                    let status =
                        StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                    let body = body.clone().unwrap_or_else(|| {
                        BTreeMap::from([("detail".to_string(), "Injected fault.".to_string())])
                    });
                    return Decision::Fail(
                        latency,
                        ApiError::Status {
                            status,
                            body,
                            retry_after: *retry_after,
                        },
                    );
                }
            }
        }
        Decision::Pass(latency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_segments_and_deep() {
        assert!(glob(b"/v1/servers/*", b"/v1/servers/abc"));
        assert!(!glob(b"/v1/servers/*", b"/v1/servers/abc/start"));
        assert!(glob(b"/v1/**", b"/v1/load-balancers/pools/x/members"));
        assert!(glob(b"/v1/servers*", b"/v1/servers"));
        assert!(!glob(b"/v1/servers", b"/v1/servers/x"));
    }

    #[test]
    fn times_limits_hits_and_seeded_probability_repeats() {
        let f = Faults::default();
        let effect = FaultEffect::status(500);
        f.add(FaultRule::new(Some("GET"), "/v1/**", effect.clone()).times(2))
            .expect("valid");
        let fails = (0..5)
            .filter(|_| matches!(f.decide("GET", "/v1/servers"), Decision::Fail(..)))
            .count();
        assert_eq!(fails, 2);
        assert!(matches!(f.decide("POST", "/v1/servers"), Decision::Pass(_)));

        let draws = |seed| {
            let f = Faults::default();
            f.add(FaultRule::new(None, "/**", effect.clone()).probability(0.5, seed))
                .expect("valid");
            (0..64)
                .map(|_| matches!(f.decide("GET", "/v1/x"), Decision::Fail(..)))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        let hits = draws(7).iter().filter(|h| **h).count();
        assert!((16..=48).contains(&hits), "about half: {hits}");
    }

    #[test]
    fn latency_adds_up_before_a_failure() {
        let f = Faults::default();
        f.add(FaultRule::new(
            None,
            "/v1/**",
            FaultEffect::Latency { ms: 10 },
        ))
        .expect("valid");
        f.add(FaultRule::new(
            None,
            "/v1/**",
            FaultEffect::Latency { ms: 5 },
        ))
        .expect("valid");
        f.add(FaultRule::new(None, "/v1/servers", FaultEffect::Drop).resource("servers"))
            .expect("valid");
        assert_eq!(
            f.decide("GET", "/v1/servers"),
            Decision::Drop(Duration::from_millis(15))
        );
        assert_eq!(
            f.decide("GET", "/v1/networks"),
            Decision::Pass(Duration::from_millis(15))
        );
    }

    #[test]
    fn invalid_rules_are_refused() {
        let f = Faults::default();
        let bad = FaultRule::new(None, "v1", FaultEffect::Drop);
        assert!(f.add(bad).is_err());
        let bad = FaultRule::new(None, "/v1", FaultEffect::Drop).probability(1.5, 0);
        assert!(f.add(bad).is_err());
        let bad = FaultRule::new(None, "/v1", FaultEffect::status(1000));
        assert!(f.add(bad).is_err());
        assert!(f.list().is_empty());
    }
}
