//! Authentication by bearer token and authorization by the `rbac.authorization.k8s.io/v1`
//! objects stored in this server, as a real API server does with `--authorization-mode=RBAC`
//! (https://kubernetes.io/docs/reference/access-authn-authz/rbac/).
//!
//! Identities:
//! - the kubeconfig's token ([`ADMIN_TOKEN`]) is an administrator in the group
//!   `system:masters`, which the bootstrap ClusterRoleBinding `cluster-admin` grants
//!   everything, as kubeadm's admin credentials are;
//! - a ServiceAccount's token ([`service_account_token`]) is
//!   `system:serviceaccount:<namespace>:<name>` in the groups `system:serviceaccounts`,
//!   `system:serviceaccounts:<namespace>` and `system:authenticated`, valid while the
//!   ServiceAccount exists (deleting it revokes the token, as for bound tokens);
//! - no token is `system:anonymous` in `system:unauthenticated`; an unknown token is a 401.
//!
//! Not modelled: aggregated ClusterRoles (`aggregationRule`), impersonation, escalation
//! checks on writes of RBAC objects, and the `list`/`watch` with `resourceNames` through a
//! `metadata.name` field selector.

use super::status::ApiError;
use super::store::Store;
use serde_json::{Value, json};

/// The token of the generated kubeconfig: an administrator.
pub const ADMIN_TOKEN: &str = "embedded";

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    fn admin() -> User {
        User {
            name: "kubernetes-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    pub fn anonymous() -> User {
        User {
            name: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
        }
    }
}

/// The bearer token of a ServiceAccount. Deterministic, so that seeded simulations draw
/// nothing for it; a test server's tokens need not be secret, only distinct.
pub fn service_account_token(namespace: &str, name: &str) -> String {
    format!("serviceaccount.{namespace}.{name}")
}

/// The user of an `Authorization` header value; `None` for a token nobody holds.
pub fn authenticate(store: &Store, authorization: Option<&str>) -> Option<User> {
    let Some(header) = authorization else {
        return Some(User::anonymous());
    };
    let token = header.strip_prefix("Bearer ")?.trim();
    if token == ADMIN_TOKEN {
        return Some(User::admin());
    }
    let rest = token.strip_prefix("serviceaccount.")?;
    let (namespace, name) = rest.split_once('.')?;
    store.get(
        "serviceaccounts",
        &(namespace.to_string(), name.to_string()),
    )?;
    Some(User {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
            "system:authenticated".into(),
        ],
    })
}

/// What a request asks to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    Resource {
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        subresource: Option<&'a str>,
        namespace: Option<&'a str>,
        name: Option<&'a str>,
    },
    /// A path outside the resource tree (`/version`, `/api`, `/openapi/v3`); `verb` is the
    /// lower-case HTTP method.
    NonResource { verb: &'a str, path: &'a str },
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

fn listed(list: &[String], want: &str) -> bool {
    list.iter().any(|s| s == "*" || s == want)
}

fn subject_matches(subject: &Value, user: &User, binding_namespace: Option<&str>) -> bool {
    let name = subject["name"].as_str().unwrap_or_default();
    match subject["kind"].as_str().unwrap_or_default() {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = subject["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                .or(binding_namespace)
                .unwrap_or_default();
            user.name == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

fn rule_allows(rule: &Value, request: &Request) -> bool {
    match *request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            let resources = strings(rule, "resources");
            let combined = match subresource {
                Some(sub) => format!("{resource}/{sub}"),
                None => resource.to_string(),
            };
            let resource_ok = resources.iter().any(|r| {
                r == "*" || *r == combined || subresource.is_some_and(|s| *r == format!("*/{s}"))
            });
            let names = strings(rule, "resourceNames");
            let name_ok = names.is_empty() || name.is_some_and(|n| names.iter().any(|x| x == n));
            listed(&strings(rule, "verbs"), verb)
                && listed(&strings(rule, "apiGroups"), group)
                && resource_ok
                && name_ok
        }
        Request::NonResource { verb, path } => {
            listed(&strings(rule, "verbs"), verb)
                && strings(rule, "nonResourceURLs")
                    .iter()
                    .any(|u| match u.strip_suffix('*') {
                        Some(prefix) => path.starts_with(prefix),
                        None => u == path,
                    })
        }
    }
}

/// The rules of the role a binding refers to (a Role in the binding's namespace, or a
/// ClusterRole); none when it does not exist.
fn role_rules<'s>(store: &'s Store, binding: &Value, namespace: Option<&str>) -> &'s [Value] {
    let role_ref = &binding["roleRef"];
    let name = role_ref["name"].as_str().unwrap_or_default().to_string();
    let role = match (role_ref["kind"].as_str(), namespace) {
        (Some("ClusterRole"), _) => store.get("clusterroles", &(String::new(), name)),
        (Some("Role"), Some(ns)) => store.get("roles", &(ns.to_string(), name)),
        _ => None,
    };
    role.and_then(|r| r["rules"].as_array())
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Whether RBAC grants `request` to `user`: a ClusterRoleBinding's rules apply everywhere, a
/// RoleBinding's only to resources in its namespace.
pub fn allows(store: &Store, user: &User, request: &Request) -> bool {
    let key = memo_key(user, request);
    if let Some(known) = store.rbac_decisions.lock().get(&key) {
        return *known;
    }
    let decision = decide(store, user, request);
    let mut known = store.rbac_decisions.lock();
    // Requests name objects (Events by the thousand): a bounded memory, not a growing one.
    if known.len() >= 4096 {
        known.clear();
    }
    known.insert(key, decision);
    decision
}

/// The decision's memo key: every field the decision depends on, NUL-separated (no name,
/// group or path holds one), with a mark for an absent field. Pushed piece by piece, as
/// every request asks.
fn memo_key(user: &User, request: &Request) -> String {
    let mut key = String::with_capacity(128);
    let mut push = |part: Option<&str>| {
        match part {
            Some(p) => key.push_str(p),
            None => key.push('\u{1}'),
        }
        key.push('\0');
    };
    push(Some(&user.name));
    push(Some(&user.groups.len().to_string()));
    for g in &user.groups {
        push(Some(g));
    }
    match request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
        } => {
            push(Some("resource"));
            let parts = [Some(*verb), Some(*group), Some(*resource)];
            for part in parts.into_iter().chain([*subresource, *namespace, *name]) {
                push(part);
            }
        }
        Request::NonResource { verb, path } => {
            push(Some("path"));
            push(Some(verb));
            push(Some(path));
        }
    }
    key
}

fn decide(store: &Store, user: &User, request: &Request) -> bool {
    let grants = |binding: &Value, ns: Option<&str>| {
        subjects(binding)
            .iter()
            .any(|s| subject_matches(s, user, ns))
            && role_rules(store, binding, ns)
                .iter()
                .any(|rule| rule_allows(rule, request))
    };
    if store
        .list("clusterrolebindings", None)
        .any(|(_, b)| grants(b, None))
    {
        return true;
    }
    match request {
        Request::Resource {
            namespace: Some(ns),
            ..
        } => store
            .list("rolebindings", Some(ns))
            .any(|(_, b)| grants(b, Some(ns))),
        _ => false,
    }
}

fn subjects(binding: &Value) -> &[Value] {
    binding["subjects"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The message a real API server gives a denied request.
pub fn denied_message(user: &User, request: &Request) -> String {
    match *request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
        } => {
            let combined = match subresource {
                Some(sub) => format!("{resource}/{sub}"),
                None => resource.to_string(),
            };
            // The subject is the group-qualified resource without the subresource:
            // kube-apiserver answers with `NewForbidden(GroupResource, name, ...)`.
            let qualified = super::registry::qualify(resource, group);
            let subject = match name {
                Some(n) => format!("{qualified} \"{n}\""),
                None => qualified,
            };
            let scope = match namespace {
                Some(ns) => format!("in the namespace \"{ns}\""),
                None => "at the cluster scope".into(),
            };
            format!(
                "{subject} is forbidden: User \"{}\" cannot {verb} resource \"{combined}\" in API group \"{group}\" {scope}",
                user.name
            )
        }
        Request::NonResource { verb, path } => format!(
            "forbidden: User \"{}\" cannot {verb} path \"{path}\"",
            user.name
        ),
    }
}

/// The ClusterRoles and ClusterRoleBindings every cluster starts with (the subset of the
/// bootstrap policy a client of this server meets): `cluster-admin` for `system:masters`,
/// discovery for every authenticated user, and health and version for everyone.
pub fn bootstrap_objects() -> Vec<(&'static str, Value)> {
    let discovery_urls = [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/openapi",
        "/openapi/*",
        "/version",
        "/version/",
        "/healthz",
        "/livez",
        "/readyz",
    ];
    let public_urls = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    let role = |name: &str, rules: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name,
                            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
               "rules": rules})
    };
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
            .collect();
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name,
                            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": name},
               "subjects": subjects})
    };
    vec![
        (
            "clusterroles",
            role(
                "cluster-admin",
                json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                       {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
            ),
        ),
        (
            "clusterrolebindings",
            binding("cluster-admin", &["system:masters"]),
        ),
        (
            "clusterroles",
            role(
                "system:discovery",
                json!([{"nonResourceURLs": discovery_urls, "verbs": ["get"]}]),
            ),
        ),
        (
            "clusterrolebindings",
            binding("system:discovery", &["system:authenticated"]),
        ),
        (
            "clusterroles",
            role(
                "system:public-info-viewer",
                json!([{"nonResourceURLs": public_urls, "verbs": ["get"]}]),
            ),
        ),
        (
            "clusterrolebindings",
            binding(
                "system:public-info-viewer",
                &["system:authenticated", "system:unauthenticated"],
            ),
        ),
    ]
}

/// The gate for a path that names no resource (discovery, health, OpenAPI): a 403 Status
/// naming the user and the path unless a rule grants the verb on it.
pub fn check_non_resource(
    store: &Store,
    user: &User,
    method: &axum::http::Method,
    path: &str,
) -> Result<(), ApiError> {
    let verb = method.as_str().to_ascii_lowercase();
    let request = Request::NonResource { verb: &verb, path };
    if allows(store, user, &request) {
        Ok(())
    } else {
        Err(ApiError::Forbidden(denied_message(user, &request)))
    }
}

/// The gate for a resource request: a 403 Status with the details a real API server gives
/// (kind, name, group) unless a rule grants it.
pub fn check_resource(store: &Store, user: &User, request: &Request) -> Result<(), ApiError> {
    if allows(store, user, request) {
        return Ok(());
    }
    let Request::Resource {
        group,
        resource,
        name,
        ..
    } = request
    else {
        return Err(ApiError::Forbidden(denied_message(user, request)));
    };
    Err(ApiError::Denied {
        message: denied_message(user, request),
        name: name.map(str::to_string),
        group: group.to_string(),
        resource: resource.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::store::ChangeKind;

    fn store_with(objects: &[(&'static str, Option<&str>, Value)]) -> Store {
        let mut store = Store::new(100);
        for (storage, ns, obj) in objects {
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            store.put(
                storage,
                (ns.unwrap_or_default().to_string(), name.to_string()),
                obj.clone(),
                ChangeKind::Added,
            );
        }
        for (storage, obj) in bootstrap_objects() {
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            store.put(
                storage,
                (String::new(), name.to_string()),
                obj,
                ChangeKind::Added,
            );
        }
        store
    }

    /// The CCM's ServiceAccount, authenticated by its token.
    fn ccm_user(store: &Store) -> User {
        let token = format!("Bearer {}", service_account_token("kube-system", "ccm"));
        authenticate(store, Some(&token)).expect("user")
    }

    fn sa_store() -> Store {
        store_with(&[
            (
                "serviceaccounts",
                Some("kube-system"),
                json!({"metadata": {"name": "ccm", "namespace": "kube-system"}}),
            ),
            (
                "clusterroles",
                None,
                json!({"metadata": {"name": "ccm"}, "rules": [
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
                    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
                ]}),
            ),
            (
                "clusterrolebindings",
                None,
                json!({"metadata": {"name": "ccm"},
                       "roleRef": {"kind": "ClusterRole", "name": "ccm"},
                       "subjects": [{"kind": "ServiceAccount", "name": "ccm",
                                     "namespace": "kube-system"}]}),
            ),
            (
                "roles",
                Some("kube-system"),
                json!({"metadata": {"name": "lease", "namespace": "kube-system"}, "rules": [
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                     "resourceNames": ["ccm"], "verbs": ["get", "update"]},
                ]}),
            ),
            (
                "rolebindings",
                Some("kube-system"),
                json!({"metadata": {"name": "lease", "namespace": "kube-system"},
                       "roleRef": {"kind": "Role", "name": "lease"},
                       "subjects": [{"kind": "ServiceAccount", "name": "ccm"}]}),
            ),
        ])
    }

    fn resource<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        subresource: Option<&'a str>,
        namespace: Option<&'a str>,
        name: Option<&'a str>,
    ) -> Request<'a> {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
        }
    }

    #[test]
    fn tokens_name_their_user_and_a_deleted_service_account_revokes_its_token() {
        let store = sa_store();
        let token = format!("Bearer {}", service_account_token("kube-system", "ccm"));
        let user = authenticate(&store, Some(&token)).expect("known token");
        assert_eq!(user.name, "system:serviceaccount:kube-system:ccm");
        assert!(
            user.groups
                .contains(&"system:serviceaccounts:kube-system".into())
        );
        let other = format!("Bearer {}", service_account_token("default", "ccm"));
        assert_eq!(authenticate(&store, Some(&other)), None);
        assert_eq!(authenticate(&store, Some("Bearer nonsense")), None);
        assert_eq!(authenticate(&store, None), Some(User::anonymous()));
        let admin = authenticate(&store, Some("Bearer embedded")).expect("admin");
        assert!(allows(
            &store,
            &admin,
            &resource("delete", "apps", "deployments", None, Some("x"), Some("y"))
        ));
    }

    #[test]
    fn a_decision_remembered_is_dropped_when_a_role_changes() {
        let mut store = sa_store();
        let user = ccm_user(&store);
        let list = resource("list", "", "services", None, None, None);
        assert!(!allows(&store, &user, &list));
        assert!(!allows(&store, &user, &list), "remembered");
        store.put(
            "clusterroles",
            (String::new(), "ccm".into()),
            json!({"metadata": {"name": "ccm"}, "rules": [
                {"apiGroups": [""], "resources": ["services"], "verbs": ["list"]},
            ]}),
            ChangeKind::Modified,
        );
        assert!(allows(&store, &user, &list), "the new rule counts at once");
    }

    #[test]
    fn verbs_resources_and_subresources_are_granted_exactly() {
        let store = sa_store();
        let user = ccm_user(&store);
        let ok = |r: Request| allows(&store, &user, &r);
        assert!(ok(resource("list", "", "nodes", None, None, None)));
        assert!(ok(resource("get", "", "nodes", None, None, Some("n1"))));
        assert!(!ok(resource("patch", "", "nodes", None, None, Some("n1"))));
        assert!(ok(resource(
            "patch",
            "",
            "nodes",
            Some("status"),
            None,
            Some("n1")
        )));
        assert!(!ok(resource(
            "get",
            "",
            "nodes",
            Some("status"),
            None,
            Some("n1")
        )));
        assert!(!ok(resource("list", "", "services", None, None, None)));
        // Same resource name in another group.
        assert!(!ok(resource("list", "other.io", "nodes", None, None, None)));
    }

    #[test]
    fn a_role_binding_grants_in_its_namespace_and_resource_names_need_a_name() {
        let store = sa_store();
        let user = ccm_user(&store);
        let ok = |r: Request| allows(&store, &user, &r);
        let lease =
            |verb, ns, name| resource(verb, "coordination.k8s.io", "leases", None, ns, name);
        assert!(ok(lease("get", Some("kube-system"), Some("ccm"))));
        assert!(ok(lease("update", Some("kube-system"), Some("ccm"))));
        assert!(!ok(lease("get", Some("kube-system"), Some("other"))));
        assert!(!ok(lease("get", Some("default"), Some("ccm"))));
        // resourceNames never match a request without a name (list, create).
        assert!(!ok(lease("list", Some("kube-system"), None)));
    }

    #[test]
    fn discovery_is_for_authenticated_users_and_health_for_everyone() {
        let store = sa_store();
        let anonymous = User::anonymous();
        let user = ccm_user(&store);
        let get = |path| Request::NonResource { verb: "get", path };
        assert!(allows(&store, &anonymous, &get("/version")));
        assert!(!allows(&store, &anonymous, &get("/apis")));
        assert!(allows(&store, &user, &get("/apis/apps/v1")));
        assert!(!allows(&store, &user, &get("/metrics")));
        assert!(!allows(
            &store,
            &anonymous,
            &resource("list", "", "nodes", None, None, None)
        ));
    }

    #[test]
    fn denials_read_like_the_real_api_server() {
        let user = User::anonymous();
        assert_eq!(
            denied_message(
                &user,
                &resource("patch", "", "nodes", Some("status"), None, Some("n1"))
            ),
            "nodes \"n1\" is forbidden: User \"system:anonymous\" cannot patch resource \"nodes/status\" in API group \"\" at the cluster scope"
        );
        assert_eq!(
            denied_message(
                &user,
                &resource("list", "apps", "deployments", None, Some("default"), None)
            ),
            "deployments.apps is forbidden: User \"system:anonymous\" cannot list resource \"deployments\" in API group \"apps\" in the namespace \"default\""
        );
    }
}
