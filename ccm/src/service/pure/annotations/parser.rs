//! The annotation parsers: each reads one annotation into its typed value, noting every
//! problem with the key, the value and a hint.

use super::*;

/// A string enum that [`Parser::choice`] can read.
pub(super) trait Choice: Copy + Default {
    fn from_name(s: &str) -> Option<Self>;
    fn choices() -> String;
}

macro_rules! impl_choice {
    ($($t:ty),+) => {
        $(impl Choice for $t {
            fn from_name(s: &str) -> Option<Self> {
                <$t>::from_name(s)
            }
            fn choices() -> String {
                <$t>::choices()
            }
        })+
    };
}
impl_choice!(
    PoolAlgorithm,
    PoolProtocol,
    ListenerProtocol,
    MonitorType,
    IpMode
);

pub(super) struct Parser<'a> {
    pub(super) ann: &'a BTreeMap<String, String>,
    pub(super) errors: Vec<ConfigError>,
}

impl<'a> Parser<'a> {
    pub(super) fn get(&self, key: &str) -> Option<&'a str> {
        self.ann.get(key).map(String::as_str)
    }

    pub(super) fn error(&mut self, key: &str, value: &str, problem: impl Into<String>, hint: &str) {
        self.errors.push(ConfigError {
            field: key.to_string(),
            value: Some(shown(value)),
            problem: problem.into(),
            hint: hint.to_string(),
        });
    }

    /// *int* (3.1): a decimal integer, sign allowed, within [`API_NUMBER_RANGE`].
    pub(super) fn int(&mut self, key: &str, default: i64) -> i64 {
        let Some(raw) = self.get(key) else {
            return default;
        };
        let hint = format!(
            "use a whole number from {} to {}, or remove the annotation for the default {default}",
            API_NUMBER_RANGE.start(),
            API_NUMBER_RANGE.end()
        );
        match raw.parse::<i64>() {
            Ok(v) if API_NUMBER_RANGE.contains(&v) => v,
            Ok(_) => {
                self.error(key, raw, "out of the range the API accepts", &hint);
                default
            }
            Err(_) => {
                self.error(key, raw, "not a decimal integer", &hint);
                default
            }
        }
    }

    /// A closed set of strings, case-sensitive; the empty string is an error.
    pub(super) fn choice<T: Choice>(&mut self, key: &str, what: &str, note: &str) -> T {
        let Some(raw) = self.get(key) else {
            return T::default();
        };
        match T::from_name(raw) {
            Some(v) => v,
            None => {
                let mut hint = format!("use one of {}", T::choices());
                if !note.is_empty() {
                    hint.push_str("; ");
                    hint.push_str(note);
                }
                self.error(key, raw, format!("not a supported {what}"), &hint);
                T::default()
            }
        }
    }

    /// *string list* (3.1): a JSON array of strings; empty or blank is the empty list (so is
    /// JSON `null`, as in the reference). `None` after an error.
    pub(super) fn string_list(&mut self, key: &str, example: &str) -> Option<Vec<String>> {
        let raw = self.get(key)?;
        if raw.trim().is_empty() {
            return Some(Vec::new());
        }
        let hint = format!("write a JSON array of strings, e.g. '{example}'");
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Null) => Some(Vec::new()),
            Ok(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                let mut ok = true;
                for (i, item) in items.into_iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s),
                        other => {
                            ok = false;
                            self.error(
                                key,
                                raw,
                                format!("entry [{i}] is {}, not a string", json_kind(&other)),
                                &hint,
                            );
                        }
                    }
                }
                ok.then_some(out)
            }
            Ok(other) => {
                self.error(
                    key,
                    raw,
                    format!("is a JSON {}, not an array of strings", json_kind(&other)),
                    &hint,
                );
                None
            }
            Err(e) => {
                self.error(key, raw, format!("not valid JSON ({e})"), &hint);
                None
            }
        }
    }

    pub(super) fn config_version(&mut self) -> u32 {
        match self.get(LOADBALANCER_CONFIG_VERSION) {
            None => 1,
            Some(CONFIG_VERSION) => 1,
            Some(raw) => {
                self.error(
                    LOADBALANCER_CONFIG_VERSION,
                    raw,
                    "unsupported configuration version",
                    "this CCM understands version 1 only; the CCM writes this annotation, \
                     remove it or set it to \"1\"",
                );
                1
            }
        }
    }

    pub(super) fn lb_name(&mut self, uid: &str) -> String {
        match self.get(LOADBALANCER_NAME) {
            None => format!("{DEFAULT_LB_NAME_PREFIX}{uid}"),
            Some(raw) if raw.trim().is_empty() => {
                self.error(
                    LOADBALANCER_NAME,
                    raw,
                    "the load balancer name must not be blank",
                    "set a name, or remove the annotation for the default k8s-service-<uid>",
                );
                format!("{DEFAULT_LB_NAME_PREFIX}{uid}")
            }
            Some(raw) => raw.to_string(),
        }
    }

    pub(super) fn flavor(&mut self) -> String {
        match self.get(LOADBALANCER_FLAVOR) {
            None => DEFAULT_FLAVOR.to_string(),
            Some(raw) if raw.trim().is_empty() || raw.trim() != raw => {
                self.error(
                    LOADBALANCER_FLAVOR,
                    raw,
                    "not a flavor slug",
                    "use a flavor slug such as lb-standard, or remove the annotation",
                );
                DEFAULT_FLAVOR.to_string()
            }
            Some(raw) => raw.to_string(),
        }
    }

    pub(super) fn zone(&mut self) -> Option<String> {
        match self.get(LOADBALANCER_ZONE) {
            None | Some("") => None,
            Some(raw) if raw.chars().any(char::is_whitespace) => {
                self.error(
                    LOADBALANCER_ZONE,
                    raw,
                    "not a zone slug",
                    "use a zone slug such as rma1 or lpg1, or remove the annotation to \
                     derive the zone from the nodes",
                );
                None
            }
            Some(raw) => Some(raw.to_string()),
        }
    }

    /// JSON array of `{"subnet": "<uuid>", "address": "<ip>"}`; strict: the empty string and
    /// unknown keys are errors.
    pub(super) fn vip_addresses(&mut self) -> Option<Vec<VipRequest>> {
        let key = LOADBALANCER_VIP_ADDRESSES;
        let raw = self.get(key)?;
        let hint = "write a JSON array of objects, e.g. \
                    '[{\"subnet\": \"<subnet uuid>\", \"address\": \"10.0.0.10\"}]' \
                    (address optional), or '[]'";
        let items = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Array(items)) => items,
            Ok(other) => {
                self.error(
                    key,
                    raw,
                    format!("is a JSON {}, not an array of objects", json_kind(&other)),
                    hint,
                );
                return Some(Vec::new());
            }
            Err(e) => {
                self.error(key, raw, format!("not valid JSON ({e})"), hint);
                return Some(Vec::new());
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.extend(self.vip_entry(raw, hint, i, item));
        }
        Some(out)
    }

    /// Entry `i` of the VIP addresses annotation `raw`; every problem is noted.
    fn vip_entry(&mut self, raw: &str, hint: &str, i: usize, item: &Value) -> Option<VipRequest> {
        let key = LOADBALANCER_VIP_ADDRESSES;
        let Value::Object(obj) = item else {
            self.error(
                key,
                raw,
                format!("entry [{i}] is {}, not an object", json_kind(item)),
                hint,
            );
            return None;
        };
        for k in obj.keys() {
            if k != "subnet" && k != "address" {
                self.error(
                    key,
                    raw,
                    format!("entry [{i}] has the unknown key {k:?}"),
                    "only \"subnet\" and \"address\" are allowed",
                );
            }
        }
        let subnet = match obj.get("subnet") {
            Some(Value::String(s)) => match Uuid::try_parse(s) {
                Ok(u) => Some(u),
                Err(_) => {
                    self.error(
                        key,
                        raw,
                        format!("entry [{i}]: subnet {s:?} is not a UUID"),
                        "use the UUID of a subnet, as listed by the API",
                    );
                    None
                }
            },
            None | Some(Value::Null) => {
                self.error(
                    key,
                    raw,
                    format!("entry [{i}] has no subnet"),
                    "every entry needs \"subnet\": \"<subnet uuid>\"",
                );
                None
            }
            Some(other) => {
                self.error(
                    key,
                    raw,
                    format!("entry [{i}]: subnet is {}, not a string", json_kind(other)),
                    hint,
                );
                None
            }
        };
        let address = match obj.get("address") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => match s.parse::<IpAddr>() {
                Ok(a) => Ok(Some(a)),
                Err(_) => {
                    self.error(
                        key,
                        raw,
                        format!("entry [{i}]: address {s:?} is not an IP address"),
                        "use a single address inside the subnet without a prefix length, \
                         or leave \"address\" out to let the API choose",
                    );
                    Err(())
                }
            },
            Some(other) => {
                self.error(
                    key,
                    raw,
                    format!("entry [{i}]: address is {}, not a string", json_kind(other)),
                    hint,
                );
                Err(())
            }
        };
        Some(VipRequest {
            subnet: subnet?,
            address: address.ok()?,
        })
    }

    pub(super) fn floating_ips(&mut self) -> Vec<IpNet> {
        self.networks(
            LOADBALANCER_FLOATING_IPS,
            r#"["5.102.150.123/32", "2a06:c01::123/128"]"#,
            "list Floating IP networks as the API shows them, e.g. \
             \"5.102.150.123/32\" or \"2a06:c01::/56\"; a bare address means /32 or \
             /128",
        )
    }

    pub(super) fn allowed_cidrs(&mut self) -> Vec<IpNet> {
        self.networks(
            LOADBALANCER_LISTENER_ALLOWED_CIDRS,
            r#"["1.2.3.0/24", "2001:db8::/32"]"#,
            "list networks in CIDR notation with the host bits zero, e.g. \
             \"1.2.3.0/24\", or single addresses",
        )
    }

    /// A JSON list of networks (`example` shows one), without repeats; every bad entry is
    /// noted with `hint`.
    fn networks(&mut self, key: &str, example: &str, hint: &str) -> Vec<IpNet> {
        let Some(raw) = self.get(key) else {
            return Vec::new();
        };
        let Some(list) = self.string_list(key, example) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            match parse_network(entry) {
                Ok(net) => push_unique(&mut out, net),
                Err(problem) => {
                    self.error(key, raw, format!("entry [{i}] {entry:?} {problem}"), hint)
                }
            }
        }
        out
    }

    pub(super) fn allowed_subnets(&mut self) -> Vec<Uuid> {
        let key = LOADBALANCER_LISTENER_ALLOWED_SUBNETS;
        let Some(raw) = self.get(key) else {
            return Vec::new();
        };
        let Some(list) = self.string_list(key, r#"["<subnet uuid>"]"#) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            match Uuid::try_parse(entry) {
                Ok(u) => push_unique(&mut out, u),
                Err(_) => self.error(
                    key,
                    raw,
                    format!("entry [{i}] {entry:?} is not a UUID"),
                    "list subnet UUIDs as shown by the API",
                ),
            }
        }
        out
    }

    /// Absent or exactly `{}`: no HTTP options. Otherwise a strict JSON object.
    pub(super) fn http_options(&mut self) -> Option<HttpOptions> {
        let key = LOADBALANCER_HEALTH_MONITOR_HTTP;
        let raw = self.get(key)?;
        if raw == DEFAULT_HEALTH_MONITOR_HTTP {
            return None;
        }
        let hint = "write a JSON object with any of \"method\", \"url_path\", \"version\", \
                    \"host\", \"expected_codes\", e.g. '{\"url_path\": \"/healthz\"}', \
                    or '{}' for none";
        let obj: Map<String, Value> = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(obj)) => obj,
            Ok(other) => {
                self.error(
                    key,
                    raw,
                    format!("is a JSON {}, not an object", json_kind(&other)),
                    hint,
                );
                return None;
            }
            Err(e) => {
                self.error(key, raw, format!("not valid JSON ({e})"), hint);
                return None;
            }
        };
        let mut opts = HttpOptions::default();
        let before = self.errors.len();
        for (k, v) in &obj {
            if v.is_null() {
                continue;
            }
            self.http_option(raw, k, v, &mut opts);
        }
        if opts.host.is_some() && opts.version == HttpVersion::V1_0 {
            self.error(
                key,
                raw,
                "host cannot be used with HTTP version 1.0",
                "use version \"1.1\" (the default), or leave \"host\" out",
            );
        }
        (self.errors.len() == before).then_some(opts)
    }

    /// One key of the HTTP options annotation `raw` into `opts`, or an error.
    fn http_option(&mut self, raw: &str, k: &str, v: &Value, opts: &mut HttpOptions) {
        let key = LOADBALANCER_HEALTH_MONITOR_HTTP;
        match k {
            "method" => match v.as_str().and_then(HttpMethod::from_name) {
                Some(m) => opts.method = m,
                None => self.error(
                    key,
                    raw,
                    format!("method {v} is not supported"),
                    &format!("use one of {} (upper case)", HttpMethod::choices()),
                ),
            },
            "url_path" => match v.as_str() {
                Some(p) if p.starts_with('/') && !p.chars().any(char::is_whitespace) => {
                    opts.url_path = p.to_string()
                }
                _ => self.error(
                    key,
                    raw,
                    format!("url_path {v} is not an absolute path"),
                    "use a path starting with \"/\", without spaces",
                ),
            },
            "version" => match v.as_str().and_then(HttpVersion::from_name) {
                Some(ver) => opts.version = ver,
                None => self.error(
                    key,
                    raw,
                    format!("version {v} is not supported"),
                    "use \"1.0\" or \"1.1\"",
                ),
            },
            "host" => match v.as_str() {
                Some(h) if !h.is_empty() && !h.chars().any(|c| c.is_whitespace()) => {
                    opts.host = Some(h.to_string())
                }
                _ => self.error(
                    key,
                    raw,
                    format!("host {v} is not a host name"),
                    "use a host name such as \"www.example.com\", or leave \"host\" out",
                ),
            },
            "expected_codes" => match expected_codes(v) {
                Some(codes) => opts.expected_codes = codes,
                None => self.error(
                    key,
                    raw,
                    format!("expected_codes {v} is not a list of status codes"),
                    "use a non-empty list of three-digit codes or ranges, e.g. [\"200\"] \
                 or [\"200-204\"]",
                ),
            },
            other => self.error(
                key,
                raw,
                format!("unknown key {other:?}"),
                "allowed keys are method, url_path, version, host and expected_codes",
            ),
        }
    }

    pub(super) fn node_selector(&mut self) -> Selector {
        let key = LOADBALANCER_NODE_SELECTOR;
        let Some(raw) = self.get(key) else {
            return Selector::default();
        };
        match Selector::parse(raw) {
            Ok(s) => s,
            Err(reason) => {
                self.error(
                    key,
                    raw,
                    format!("unable to parse selector: {reason}"),
                    "use the Kubernetes label selector syntax, e.g. \
                     'role=lb,zone in (rma1,lpg1),!excluded'",
                );
                Selector::default()
            }
        }
    }

    pub(super) fn force_hostname(&mut self) -> Option<String> {
        let key = LOADBALANCER_FORCE_HOSTNAME;
        match self.get(key) {
            None | Some("") => None,
            Some(raw) if raw.parse::<IpAddr>().is_ok() => {
                self.error(
                    key,
                    raw,
                    "an IP address is not a host name",
                    "Kubernetes refuses IP addresses as ingress host names; use a DNS name",
                );
                None
            }
            Some(raw) if !is_dns1123_subdomain(raw) => {
                self.error(
                    key,
                    raw,
                    "not a valid DNS name",
                    "Kubernetes only accepts lower-case DNS names (RFC 1123), e.g. \
                     lb.example.com",
                );
                None
            }
            Some(raw) => Some(raw.to_string()),
        }
    }
}

pub(super) fn parse_uuid_annotation(
    raw: Option<&str>,
    errors: &mut Vec<ConfigError>,
) -> Option<Uuid> {
    match raw {
        None | Some("") => None,
        Some(raw) => match Uuid::try_parse(raw) {
            Ok(u) => Some(u),
            Err(_) => {
                errors.push(ConfigError {
                    field: LOADBALANCER_UUID.to_string(),
                    value: Some(shown(raw)),
                    problem: "not a UUID".to_string(),
                    hint: "the CCM writes this annotation; remove it to look the load \
                           balancer up by name"
                        .to_string(),
                });
                None
            }
        },
    }
}

pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn push_unique<T: PartialEq>(out: &mut Vec<T>, v: T) {
    if !out.contains(&v) {
        out.push(v);
    }
}

/// A network in the API's form: `a.b.c.d/n` or `x::y/n` with the host bits zero (the API
/// refuses others); a bare address is the single-address network (`/32`, `/128`). The
/// result prints canonically (lower-case, compressed IPv6).
pub fn parse_network(s: &str) -> Result<IpNet, String> {
    if let Ok(addr) = s.parse::<IpAddr>() {
        return Ok(IpNet::from(addr));
    }
    match s.parse::<IpNet>() {
        Ok(net) if net.trunc() == net => Ok(net),
        Ok(net) => Err(format!(
            "has host bits set (the network is {})",
            net.trunc()
        )),
        Err(_) => Err("is neither an IP address nor a network in CIDR notation".to_string()),
    }
}

/// `["200"]`, `["200", "201"]`, `["200-204"]`: three-digit codes or ascending ranges.
pub(super) fn expected_codes(v: &Value) -> Option<Vec<String>> {
    let items = v.as_array()?;
    if items.is_empty() {
        return None;
    }
    let code = |s: &str| -> Option<u16> {
        (s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let s = item.as_str()?;
        let ok = match s.split_once('-') {
            None => code(s).is_some(),
            Some((lo, hi)) => matches!((code(lo), code(hi)), (Some(l), Some(h)) if l <= h),
        };
        if !ok {
            return None;
        }
        out.push(s.to_string());
    }
    Some(out)
}
