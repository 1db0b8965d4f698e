//! The HTTP front: path parsing, authentication and authorization, content negotiation and
//! the dispatch of each request to the REST verbs in `objects.rs`.

use super::body::decode_body;
use super::registry::{self, ResourceType};
use super::server::*;
use super::status::{ApiError, ApiResult};
use super::tables::{self, Format};
use super::{discovery, rbac};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub(super) fn json_response(code: StatusCode, v: &Value) -> Response {
    json_text_response(code, v.to_string())
}

fn json_text_response(code: StatusCode, body: String) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Parses `/api/v1/...` and `/apis/{group}/{version}/...` resource paths.
pub(super) fn parse_target(segments: &[&str]) -> Option<Target> {
    let (group, version, rest) = match segments {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let find = |plural: &str| registry::find(group, version, plural);
    let t = |rt, ns: Option<&str>, name: Option<&str>, sub: Option<&str>| Target {
        rt,
        namespace: ns.map(str::to_string),
        name: name.map(str::to_string),
        sub: sub.map(str::to_string),
    };
    match rest {
        [plural] => Some(t(find(plural)?, None, None, None)),
        ["namespaces", ns, plural] if *plural != "status" && *plural != "finalize" => {
            let rt = find(plural)?;
            rt.namespaced.then(|| t(rt, Some(ns), None, None))
        }
        ["namespaces", ns, plural, name] => {
            let rt = find(plural)?;
            rt.namespaced.then(|| t(rt, Some(ns), Some(name), None))
        }
        ["namespaces", ns, plural, name, sub] => {
            let rt = find(plural)?;
            rt.namespaced
                .then(|| t(rt, Some(ns), Some(name), Some(sub)))
        }
        [plural, name] => {
            let rt = find(plural)?;
            (!rt.namespaced).then(|| t(rt, None, Some(name), None))
        }
        [plural, name, sub] => {
            let rt = find(plural)?;
            (!rt.namespaced).then(|| t(rt, None, Some(name), Some(sub)))
        }
        _ => None,
    }
}

/// The user a request authenticates as: a 401 for an unknown token when RBAC is on.
fn authenticate(srv: &Shared, headers: &HeaderMap) -> Result<rbac::User, ApiError> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    match rbac::authenticate(&srv.0.store.read(), authorization) {
        Some(user) => Ok(user),
        None if srv.0.config.rbac => Err(ApiError::Unauthorized),
        None => Ok(rbac::User::anonymous()),
    }
}

/// Paths that name no resource: version, health, discovery and OpenAPI (`None`: a
/// resource path, or nothing known).
fn non_resource(
    srv: &Shared,
    method: &Method,
    segments: &[&str],
    headers: &HeaderMap,
    query: Option<&str>,
) -> Option<Response> {
    let result = match (method.as_str(), segments) {
        ("GET", ["version"]) => Ok(discovery::version()),
        ("GET", ["healthz"] | ["readyz"] | ["livez"]) => {
            return Some((StatusCode::OK, "ok").into_response());
        }
        ("GET", ["api"]) => Ok(discovery::core_versions(&srv.0.address.lock())),
        ("GET", ["apis"]) => Ok(discovery::group_list()),
        ("GET", ["api", v]) => discovery::resource_list("", v).ok_or(ApiError::UnknownResource),
        ("GET", ["apis", g]) => discovery::group(g).ok_or(ApiError::UnknownResource),
        ("GET", ["apis", g, v]) => discovery::resource_list(g, v).ok_or(ApiError::UnknownResource),
        ("GET", ["openapi", ..]) => {
            return Some(super::openapi_response(segments, headers, query));
        }
        _ => return None,
    };
    Some(match result {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => e.into_response(),
    })
}

/// The Kubernetes verb of a request on `target` (RBAC speaks these, not HTTP methods).
fn verb_of(method: &Method, target: &Target, params: &Params) -> &'static str {
    match (method, target.name.is_some()) {
        (&Method::GET, false) if params.watch => "watch",
        (&Method::GET, false) => "list",
        (&Method::GET, true) => "get",
        (&Method::POST, false) => "create",
        // Subresources created under an object (`serviceaccounts/NAME/token`).
        (&Method::POST, true) if target.sub.is_some() => "create",
        (&Method::PUT, true) => "update",
        (&Method::PATCH, true) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "unsupported",
    }
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
}

/// The single entry point: everything under `/` is routed here.
pub async fn handle(
    State(srv): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let user = match authenticate(&srv, &headers) {
        Ok(user) => user,
        Err(refused) => return refused.into_response(),
    };
    let target = parse_target(&segments);
    if srv.0.config.rbac
        && target.is_none()
        && let Err(e) = rbac::check_non_resource(&srv.0.store.read(), &user, &method, &path)
    {
        return e.into_response();
    }
    if let Some(answer) = non_resource(&srv, &method, &segments, &headers, uri.query()) {
        return answer;
    }
    let Some(target) = target else {
        return ApiError::UnknownResource.into_response();
    };
    let params = Params::parse(uri.query());
    let format = tables::negotiate(header_str(&headers, header::ACCEPT));
    let verb = verb_of(&method, &target, &params);
    let user_agent = header_str(&headers, header::USER_AGENT).to_string();
    let record = |code: StatusCode| RequestRecord {
        verb: verb.to_string(),
        group: target.rt.group.to_string(),
        resource: target.rt.plural.to_string(),
        subresource: target.sub.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone(),
        user_agent: user_agent.clone(),
        user: user.name.clone(),
        code: code.as_u16(),
    };
    if let Some(e) = refusal(&srv, &user, verb, &target) {
        srv.0.requests.lock().push(record(e.code()));
        return e.into_response();
    }
    if verb == "watch" {
        srv.0.requests.lock().push(record(StatusCode::OK));
        return super::watch::watch_response(srv.clone(), target, params, format);
    }
    if verb == "get"
        && target.sub.is_none()
        && format == Format::Json
        && let Some(answer) = srv.get_json(&target)
    {
        let code = answer
            .as_ref()
            .map_or_else(ApiError::code, |_| StatusCode::OK);
        srv.0.requests.lock().push(record(code));
        return match answer {
            Ok(body) => json_text_response(code, body),
            Err(e) => e.into_response(),
        };
    }
    let result = dispatch(&srv, verb, &target, &params, &headers, &body);
    let code = match &result {
        Ok((code, _)) => *code,
        Err(e) => e.code(),
    };
    srv.0.requests.lock().push(record(code));
    respond(verb, &target, &params, format, &headers, &body, result)
}

/// Why a request on `target` is refused before it runs: RBAC, or a subresource the type
/// does not have.
fn refusal(
    srv: &Shared,
    user: &rbac::User,
    verb: &'static str,
    target: &Target,
) -> Option<ApiError> {
    let refused = if srv.0.config.rbac {
        rbac::check_resource(
            &srv.0.store.read(),
            user,
            &rbac::Request::Resource {
                verb,
                group: target.rt.group,
                resource: target.rt.plural,
                subresource: target.sub.as_deref(),
                namespace: target.namespace.as_deref(),
                name: target.name.as_deref(),
            },
        )
        .err()
    } else {
        None
    };
    let unknown_sub = target.sub.as_ref().is_some_and(|sub| {
        !((sub == "status" && target.rt.status)
            || (sub == "scale" && target.rt.scale())
            || (sub == "token"
                && target.rt.plural == "serviceaccounts"
                && target.rt.group.is_empty()))
    });
    refused.or(unknown_sub.then_some(ApiError::UnknownResource))
}

/// The response to a dispatched verb: lists and objects rendered in the negotiated format.
fn respond(
    verb: &str,
    target: &Target,
    params: &Params,
    format: Format,
    headers: &HeaderMap,
    body: &[u8],
    result: ApiResult<(StatusCode, Value)>,
) -> Response {
    match result {
        // A Status, in kube-apiserver's field order.
        Ok((code, _)) if verb == "deletecollection" => {
            json_text_response(code, super::status::success_body())
        }
        Ok((code, v)) => {
            let v = match verb {
                // A Scale is answered as itself, never as a Table of its parent.
                "list" | "get" if target.sub.as_deref() != Some("scale") => {
                    render(target.rt, verb == "list", v, format, params)
                }
                _ => v,
            };
            let mut response = json_response(code, &v);
            if verb == "delete" && job_delete_warning(target, params, headers, body) {
                let warning = format!("299 - \"{}\"", super::propagation::JOB_DEFAULT_WARNING);
                if let Ok(value) = axum::http::HeaderValue::from_str(&warning) {
                    response.headers_mut().insert("warning", value);
                }
            }
            response
        }
        Err(e) => e.into_response(),
    }
}

/// Runs one REST verb (watches excepted) on `target`.
fn dispatch(
    srv: &Shared,
    verb: &str,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<(StatusCode, Value)> {
    match target.sub.as_deref() {
        Some("scale") => {
            return super::apps::scale_request(srv, verb, target, params, headers, body);
        }
        Some("token") => return super::tokens::token_request(srv, verb, target, headers, body),
        _ => {}
    }
    match verb {
        "list" => srv.list(target, params).map(|v| (StatusCode::OK, v)),
        "get" => srv.get(target).map(|v| (StatusCode::OK, v)),
        "create" => decode_body(headers, body).and_then(|b| {
            strict_check(target.rt, &b, params)?;
            srv.create_object(target.rt, target.namespace.as_deref(), b, params.dry_run)
                .map(|v| (StatusCode::CREATED, v))
        }),
        "update" => decode_body(headers, body).and_then(|b| {
            strict_check(target.rt, &b, params)?;
            srv.update_object(target, b, params.dry_run, false)
        }),
        "patch" => {
            let ct = header_str(headers, header::CONTENT_TYPE);
            if params.strict && !ct.starts_with("application/json-patch+json") {
                // Merge and strategic patches have the object's shape.
                let patch = if ct.starts_with("application/apply-patch+yaml") {
                    serde_yaml_ng::from_slice(body).ok()
                } else {
                    serde_json::from_slice(body).ok()
                };
                if let Some(patch) = patch {
                    strict_check(target.rt, &patch, params)?;
                }
            }
            srv.patch_object(target, ct, body, params.dry_run)
                .map(|v| (StatusCode::OK, v))
        }
        "delete" => decode_body(headers, body).and_then(|opts| {
            let opts = delete_options(opts, params);
            srv.delete_object(target, &opts, params.dry_run)
                .map(|v| (StatusCode::OK, v))
        }),
        "deletecollection" => delete_collection(srv, target, params),
        _ => Err(ApiError::MethodNotAllowed),
    }
}

/// The DeleteOptions of a delete: the body's, with the query's propagation parameters
/// where the body has none.
fn delete_options(body: Value, params: &Params) -> Value {
    let mut opts = if body.is_object() { body } else { json!({}) };
    if !super::propagation::given(&opts) {
        if let Some(p) = &params.propagation_policy {
            opts["propagationPolicy"] = json!(p);
        }
        if let Some(o) = params.orphan_dependents {
            opts["orphanDependents"] = json!(o);
        }
    }
    opts
}

/// kube-apiserver's warning for a Job deleted without a policy (in the body or the query).
fn job_delete_warning(target: &Target, params: &Params, headers: &HeaderMap, body: &[u8]) -> bool {
    if !(target.rt.group == "batch" && target.rt.kind == "Job") {
        return false;
    }
    let opts = decode_body(headers, body).unwrap_or_else(|_| json!({}));
    !super::propagation::given(&delete_options(opts, params))
}

fn delete_collection(
    srv: &Shared,
    target: &Target,
    params: &Params,
) -> ApiResult<(StatusCode, Value)> {
    let list = srv.list(target, params)?;
    for item in list["items"].as_array().into_iter().flatten() {
        let one = Target {
            name: meta_str(item, "name").map(str::to_string),
            namespace: meta_str(item, "namespace").map(str::to_string),
            ..target.clone()
        };
        srv.delete_object(&one, &delete_options(json!({}), params), params.dry_run)?;
    }
    // `handle` answers with the Success status (`status::success_body`).
    Ok((StatusCode::OK, Value::Null))
}

/// `fieldValidation=Strict`: fields the type's OpenAPI schema does not know are a 400, with
/// the real server's message. Keys starting with `$` (strategic-merge directives) are skipped.
pub(super) fn strict_check(rt: &ResourceType, body: &Value, params: &Params) -> ApiResult<()> {
    if !params.strict {
        return Ok(());
    }
    let doc = super::openapi::v2_json();
    let Some(defs) = doc.get("definitions").and_then(Value::as_object) else {
        return Ok(());
    };
    let wanted = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let Some(schema) = defs.values().find(|d| {
        d.get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .is_some_and(|g| g.contains(&wanted))
    }) else {
        return Ok(());
    };
    let mut unknown = Vec::new();
    unknown_fields(defs, schema, body, "", &mut unknown, 0);
    if unknown.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    Err(ApiError::BadRequest(format!(
        "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
        list.join(", "),
        kind = rt.kind,
        v = rt.version,
    )))
}

pub(super) fn unknown_fields(
    defs: &serde_json::Map<String, Value>,
    schema: &Value,
    v: &Value,
    path: &str,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    // Follow `$ref` (also when wrapped in `allOf`).
    let reference = schema.get("$ref").or_else(|| {
        schema
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|s| s.get("$ref"))
    });
    if let Some(name) = reference
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
    {
        if let Some(target) = defs.get(name) {
            unknown_fields(defs, target, v, path, out, depth + 1);
        }
        return;
    }
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true)) {
                return;
            }
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, child) in map.iter().filter(|(k, _)| !k.starts_with('$')) {
                    match props.get(k) {
                        Some(s) => unknown_fields(defs, s, child, &join(k), out, depth + 1),
                        None => out.push(join(k)),
                    }
                }
            } else if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for (k, child) in map.iter().filter(|(k, _)| !k.starts_with('$')) {
                    unknown_fields(defs, ap, child, &join(k), out, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, child) in items.iter().enumerate() {
                    unknown_fields(defs, item, child, &format!("{path}[{i}]"), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// A GET answer in the format `Accept` asked for: a Table (server-side printing, as
/// `kubectl get` asks for), `PartialObjectMetadata(List)`, or the object / list itself.
pub(super) fn render(
    rt: &ResourceType,
    list: bool,
    v: Value,
    format: Format,
    params: &Params,
) -> Value {
    match (format, list) {
        (Format::Json, _) => v,
        (Format::Table(version), true) => {
            tables::list_table(rt, &v, params.include_object, version)
        }
        (Format::Table(version), false) => {
            tables::object_table(rt, &v, params.include_object, version)
        }
        (Format::Metadata(version), true) => tables::partial_metadata_list(&v, version),
        (Format::Metadata(version), false) => tables::partial_metadata(&v, version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_gives_the_policy_where_the_body_does_not() {
        let params = Params::parse(Some("propagationPolicy=Foreground&orphanDependents=true"));
        // Both from the query: the policy check refuses the pair, as kube-apiserver does.
        let both = delete_options(json!({}), &params);
        assert_eq!(
            both,
            json!({"propagationPolicy": "Foreground", "orphanDependents": true})
        );
        let job = registry::RESOURCES
            .iter()
            .find(|r| r.group == "batch" && r.kind == "Job")
            .expect("registered");
        assert!(super::super::propagation::policy(job, &both).is_err());
        // The body's policy wins over the query's.
        let body = delete_options(json!({"propagationPolicy": "Orphan"}), &params);
        assert_eq!(body, json!({"propagationPolicy": "Orphan"}));
        let params = Params::parse(Some("propagationPolicy=Background"));
        assert_eq!(
            super::super::propagation::policy(job, &delete_options(Value::Null, &params)),
            Ok(super::super::propagation::Policy::Background)
        );
    }
}
