//! A Service's IP families and cluster IPs, as kube-apiserver assigns them on a dual-stack
//! cluster with IPv4 primary (k3s started with an IPv4 and an IPv6 `--service-cidr`): the
//! policy and families defaulted and validated, one cluster IP per family, the primary family
//! fixed once set. See Kubernetes' "IPv4/IPv6 dual-stack" concept page for the rules.

use serde_json::{Value, json};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The IPv4 service CIDR (k3s's default), the cluster's primary family.
pub const SERVICE_CIDR_BASE: Ipv4Addr = Ipv4Addr::new(10, 43, 0, 0);
pub const SERVICE_CIDR_PREFIX: u32 = 16;
/// The IPv6 service CIDR (a unique local range; /112 is the largest kube-apiserver accepts
/// for a service range).
pub const SERVICE_CIDR_V6_BASE: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x43, 0, 0, 0, 0, 0, 0);
pub const SERVICE_CIDR_V6_PREFIX: u32 = 112;

/// One problem, as a 422's cause: reason, field, message.
pub type Problem = (&'static str, String, String);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    V4,
    V6,
}

impl Family {
    fn parse(s: &str) -> Option<Family> {
        match s {
            "IPv4" => Some(Family::V4),
            "IPv6" => Some(Family::V6),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }

    fn of(ip: IpAddr) -> Family {
        match ip {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }

    fn other(self) -> Family {
        match self {
            Family::V4 => Family::V6,
            Family::V6 => Family::V4,
        }
    }

    /// The service range of this family, as `base/prefix` for messages.
    fn range(self) -> String {
        match self {
            Family::V4 => format!("{SERVICE_CIDR_BASE}/{SERVICE_CIDR_PREFIX}"),
            Family::V6 => format!("{SERVICE_CIDR_V6_BASE}/{SERVICE_CIDR_V6_PREFIX}"),
        }
    }

    fn contains(self, ip: IpAddr) -> bool {
        match (self, ip) {
            (Family::V4, IpAddr::V4(a)) => {
                let mask = u32::MAX << (32 - SERVICE_CIDR_PREFIX);
                u32::from(a) & mask == u32::from(SERVICE_CIDR_BASE)
            }
            (Family::V6, IpAddr::V6(a)) => {
                let mask = u128::MAX << (128 - SERVICE_CIDR_V6_PREFIX);
                u128::from(a) & mask == u128::from(SERVICE_CIDR_V6_BASE)
            }
            _ => false,
        }
    }

    /// The first free address of the range (from .10: the low ones are the network's and the
    /// `kubernetes` Service's).
    fn allocate(self, taken: &mut HashSet<String>) -> Option<String> {
        let free = match self {
            Family::V4 => {
                let base = u32::from(SERVICE_CIDR_BASE);
                (10..(1u32 << (32 - SERVICE_CIDR_PREFIX)) - 1)
                    .map(|i| Ipv4Addr::from(base + i).to_string())
                    .find(|ip| !taken.contains(ip))
            }
            Family::V6 => {
                let base = u128::from(SERVICE_CIDR_V6_BASE);
                (10..(1u128 << (128 - SERVICE_CIDR_V6_PREFIX)) - 1)
                    .map(|i| Ipv6Addr::from(base + i).to_string())
                    .find(|ip| !taken.contains(ip))
            }
        };
        free.inspect(|ip| {
            taken.insert(ip.clone());
        })
    }
}

/// Whether `ip` lies in the IPv4 service CIDR.
#[cfg(test)]
pub fn in_service_cidr(ip: &str) -> bool {
    ip.parse().is_ok_and(|a| Family::V4.contains(a))
}

const POLICIES: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// The families written in `spec.ipFamilies`, with the problems of what cannot be one.
fn requested_families(spec: &Value, out: &mut Vec<Problem>) -> Vec<Family> {
    let written = strings(spec.get("ipFamilies"));
    if written.len() > 2 {
        out.push((
            "FieldValueTooMany",
            "spec.ipFamilies".into(),
            format!("Too many: {}: must have at most 2 items", written.len()),
        ));
    }
    let mut families = Vec::new();
    for (i, f) in written.iter().enumerate() {
        match Family::parse(f) {
            None => out.push((
                "FieldValueNotSupported",
                format!("spec.ipFamilies[{i}]"),
                format!("Unsupported value: \"{f}\": supported values: \"IPv4\", \"IPv6\""),
            )),
            Some(fam) if families.contains(&fam) => out.push((
                "FieldValueDuplicate",
                format!("spec.ipFamilies[{i}]"),
                format!("Duplicate value: \"{f}\""),
            )),
            Some(fam) => families.push(fam),
        }
    }
    families
}

/// Defaults and validates `spec.ipFamilyPolicy`, `spec.ipFamilies`, `spec.clusterIP` and
/// `spec.clusterIPs` of a Service that is not `ExternalName`, allocating the missing cluster
/// IPs from `taken` (every other Service's). `old_spec` is the stored spec on an update of a
/// Service that had cluster IPs. Returns the problems (the Service is refused if any).
pub fn assign(
    spec: &mut Value,
    old_spec: Option<&Value>,
    taken: &mut HashSet<String>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if let Some(old) = old_spec {
        keep_old_allocation(spec, old);
    }
    let policy = match spec.get("ipFamilyPolicy").and_then(Value::as_str) {
        Some(p) if !POLICIES.contains(&p) => {
            out.push((
                "FieldValueNotSupported",
                "spec.ipFamilyPolicy".into(),
                format!("Unsupported value: \"{p}\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\""),
            ));
            return out;
        }
        p => p.map(str::to_string),
    };
    let written = strings(spec.get("ipFamilies")).len();
    let mut families = requested_families(spec, &mut out);
    let mut ips = requested_ips(spec);
    let headless = ips.first().is_some_and(|ip| ip == "None");
    let parsed: Vec<Option<IpAddr>> = ips.iter().map(|ip| ip.parse().ok()).collect();
    if families.is_empty()
        && let Some(Some(ip)) = parsed.first()
    {
        families.push(Family::of(*ip));
    }
    let policy = policy.unwrap_or_else(|| {
        if written > 1 || ips.len() > 1 {
            "RequireDualStack".to_string()
        } else {
            "SingleStack".to_string()
        }
    });
    if families.is_empty() {
        families.push(Family::V4);
    }
    apply_policy(&policy, written, &mut families, &mut ips, &mut out);
    if let Some(old) = old_spec {
        check_immutable(old, &families, &ips, &mut out);
    }
    if !headless {
        for (i, ip) in ips.iter().enumerate() {
            let Some(family) = families.get(i).copied() else {
                break;
            };
            let unchanged =
                old_spec.is_some_and(|o| strings(o.get("clusterIPs")).get(i) == Some(ip));
            let parsed = parsed.get(i).copied().flatten();
            out.extend(check_requested_ip(i, ip, parsed, family, unchanged, taken));
        }
        for family in families.iter().skip(ips.len()) {
            match family.allocate(taken) {
                Some(ip) => ips.push(ip),
                None => out.push((
                    "FieldValueInvalid",
                    "spec.clusterIP".into(),
                    format!("the service CIDR {} is full", family.range()),
                )),
            }
        }
    }
    if headless {
        ips = vec!["None".to_string()];
    }
    spec["ipFamilyPolicy"] = json!(policy);
    spec["ipFamilies"] = json!(families.iter().map(|f| f.name()).collect::<Vec<_>>());
    if let Some(first) = ips.first() {
        spec["clusterIP"] = json!(first);
        spec["clusterIPs"] = json!(ips);
    }
    out
}

/// An update that leaves the cluster IPs, families or policy out keeps what was allocated,
/// as kube-apiserver does.
fn keep_old_allocation(spec: &mut Value, old: &Value) {
    let requested = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("");
    let old_ip = old.get("clusterIP").and_then(Value::as_str);
    if requested.is_empty()
        && let Some(ip) = old_ip
    {
        spec["clusterIP"] = json!(ip);
        if spec.get("clusterIPs").is_none() {
            spec["clusterIPs"] = old.get("clusterIPs").cloned().unwrap_or(json!([ip]));
        }
    }
    for k in ["ipFamilies", "ipFamilyPolicy"] {
        if spec.get(k).is_none_or(Value::is_null)
            && let Some(v) = old.get(k)
        {
            spec[k] = v.clone();
        }
    }
}

/// The cluster IPs asked for: `clusterIP` is the first of `clusterIPs`.
fn requested_ips(spec: &Value) -> Vec<String> {
    let mut ips = strings(spec.get("clusterIPs"));
    match spec.get("clusterIP").and_then(Value::as_str) {
        Some(ip) if !ip.is_empty() && ips.first().is_none_or(|f| f != ip) => {
            ips.insert(0, ip.to_string());
            ips.truncate(1);
        }
        _ => {}
    }
    ips.retain(|ip| !ip.is_empty());
    ips
}

/// Fits the families and cluster IPs to the policy: one of each for `SingleStack`, both
/// families otherwise.
fn apply_policy(
    policy: &str,
    written: usize,
    families: &mut Vec<Family>,
    ips: &mut Vec<String>,
    out: &mut Vec<Problem>,
) {
    if policy == "SingleStack" {
        if written > 1 {
            out.push((
                "FieldValueInvalid",
                "spec.ipFamilyPolicy".into(),
                "Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified".into(),
            ));
        }
        // A Service made single-stack again drops its secondary family and address.
        families.truncate(1);
        ips.truncate(1);
    } else if families.len() == 1 {
        families.push(families[0].other());
    }
}

/// The primary family and primary cluster IP may not change once set.
fn check_immutable(old: &Value, families: &[Family], ips: &[String], out: &mut Vec<Problem>) {
    let old_first = strings(old.get("ipFamilies"))
        .first()
        .and_then(|f| Family::parse(f));
    if let Some(first) = old_first
        && first != families[0]
    {
        out.push((
            "FieldValueInvalid",
            "spec.ipFamilies[0]".into(),
            format!(
                "Invalid value: \"{}\": may not change once set",
                families[0].name()
            ),
        ));
    }
    let old_ips = strings(old.get("clusterIPs"));
    if let (Some(new), Some(old)) = (ips.first(), old_ips.first())
        && new != old
    {
        out.push((
            "FieldValueInvalid",
            "spec.clusterIPs[0]".into(),
            "Invalid value: may not change once set".into(),
        ));
    }
}

/// Checks cluster IP `i` asked for by value (`parsed` if it is an address), taking it when
/// it is free; `unchanged` when the Service already had it.
fn check_requested_ip(
    i: usize,
    ip: &str,
    parsed: Option<IpAddr>,
    family: Family,
    unchanged: bool,
    taken: &mut HashSet<String>,
) -> Option<Problem> {
    let field = format!("spec.clusterIPs[{i}]");
    match parsed {
        None => Some((
            "FieldValueInvalid",
            field,
            format!(
                "Invalid value: \"{ip}\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            ),
        )),
        Some(a) if Family::of(a) != family => Some((
            "FieldValueInvalid",
            field,
            format!(
                "Invalid value: \"{ip}\": expected an {} value as indicated by `ipFamilies[{i}]`",
                family.name()
            ),
        )),
        Some(_) if unchanged => None,
        Some(a) if !family.contains(a) => Some((
            "FieldValueInvalid",
            "spec.clusterIPs".into(),
            format!(
                "Invalid value: \"{ip}\": failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
                family.range()
            ),
        )),
        Some(_) if taken.contains(ip) => Some((
            "FieldValueInvalid",
            "spec.clusterIPs".into(),
            format!(
                "Invalid value: \"{ip}\": failed to allocate IP {ip}: provided IP is already allocated"
            ),
        )),
        Some(_) => {
            taken.insert(ip.to_string());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(spec: Value, old: Option<&Value>) -> (Value, Vec<Problem>) {
        let mut spec = spec;
        let mut taken = HashSet::new();
        let problems = assign(&mut spec, old, &mut taken);
        (spec, problems)
    }

    #[test]
    fn an_ipv6_only_service_gets_an_ipv6_cluster_ip() {
        let (spec, problems) = run(
            json!({"ipFamilies": ["IPv6"], "ipFamilyPolicy": "SingleStack"}),
            None,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(spec["ipFamilies"], json!(["IPv6"]));
        let ip: Ipv6Addr = spec["clusterIP"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("v6");
        assert!(Family::V6.contains(IpAddr::V6(ip)));
        assert_eq!(spec["clusterIPs"], json!([spec["clusterIP"]]));
    }

    #[test]
    fn the_default_is_ipv4_single_stack_and_dual_stack_gets_both() {
        let (spec, _) = run(json!({}), None);
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
        assert!(spec["clusterIP"].as_str().is_some_and(in_service_cidr));
        let (spec, problems) = run(json!({"ipFamilyPolicy": "PreferDualStack"}), None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(spec["ipFamilies"], json!(["IPv4", "IPv6"]));
        assert_eq!(spec["clusterIPs"].as_array().map(Vec::len), Some(2));
        // Two families without a policy: RequireDualStack, as kube-apiserver defaults it.
        let (spec, _) = run(json!({"ipFamilies": ["IPv6", "IPv4"]}), None);
        assert_eq!(spec["ipFamilyPolicy"], "RequireDualStack");
        assert!(
            spec["clusterIPs"][0]
                .as_str()
                .is_some_and(|s| s.contains(':'))
        );
    }

    #[test]
    fn bad_families_and_policies_are_refused_naming_the_field() {
        let fields =
            |spec: Value| -> Vec<String> { run(spec, None).1.into_iter().map(|p| p.1).collect() };
        assert_eq!(
            fields(json!({"ipFamilies": ["IPv7"]})),
            ["spec.ipFamilies[0]"]
        );
        assert_eq!(
            fields(json!({"ipFamilies": ["IPv4", "IPv4"]})),
            ["spec.ipFamilies[1]"]
        );
        assert_eq!(
            fields(json!({"ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "SingleStack"})),
            ["spec.ipFamilyPolicy"]
        );
        assert_eq!(
            fields(json!({"ipFamilyPolicy": "Both"})),
            ["spec.ipFamilyPolicy"]
        );
        assert_eq!(
            fields(json!({"ipFamilies": ["IPv6"], "clusterIP": "10.43.0.50"})),
            ["spec.clusterIPs[0]"]
        );
    }

    #[test]
    fn the_primary_family_and_address_stay_and_an_update_may_leave_them_out() {
        let (old, _) = run(json!({"ipFamilies": ["IPv6"]}), None);
        let (kept, problems) = run(json!({}), Some(&old));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(kept["clusterIPs"], old["clusterIPs"]);
        assert_eq!(kept["ipFamilies"], json!(["IPv6"]));
        let (_, problems) = run(json!({"ipFamilies": ["IPv4"]}), Some(&old));
        assert_eq!(problems[0].1, "spec.ipFamilies[0]");
        // Upgraded to dual stack: the first address stays, an IPv4 one is added.
        let (dual, problems) = run(json!({"ipFamilyPolicy": "PreferDualStack"}), Some(&old));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(dual["clusterIPs"][0], old["clusterIP"]);
        assert!(dual["clusterIPs"][1].as_str().is_some_and(in_service_cidr));
        // And back: the secondary goes.
        let (single, problems) = run(
            json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv6"]}),
            Some(&dual),
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(single["clusterIPs"], old["clusterIPs"]);
    }

    #[test]
    fn a_headless_service_keeps_none() {
        let (spec, problems) = run(json!({"clusterIP": "None"}), None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(spec["clusterIPs"], json!(["None"]));
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    }
}
