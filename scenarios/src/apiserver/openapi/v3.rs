//! The OpenAPI v3 documents, one per group-version, and the discovery document that lists
//! them: the paths of the v2 model with v3 parameters and bodies, and the definitions they
//! reach rewritten as OpenAPI 3.0 schemas.

use super::paths::{Body, Loc, Op, Param, all_paths};
use super::{
    INFO_VERSION, INT_OR_STRING, MODEL, PATCH_TYPES, PRODUCES, QUANTITY, V2_REF, V3_REF, body_def,
    op_extensions, tag_group,
};
use crate::apiserver::registry::{ResourceType, group_versions};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// Rewrites a v2-style schema into its OpenAPI 3.0 form.
fn to_v3_schema(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                if k == "$ref" {
                    let name = v
                        .as_str()
                        .unwrap_or_default()
                        .strip_prefix(V2_REF)
                        .unwrap_or_default();
                    out.insert(k.clone(), json!(format!("{V3_REF}{name}")));
                } else if k == "properties" || k == "definitions" {
                    let props = v
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(n, s)| (n.clone(), to_v3_schema(s)))
                                .collect::<Map<_, _>>()
                        })
                        .unwrap_or_default();
                    out.insert(k.clone(), Value::Object(props));
                } else {
                    out.insert(k.clone(), to_v3_schema(v));
                }
            }
            // OpenAPI 3.0 ignores siblings of `$ref`: the real documents wrap such references.
            if out.len() > 1
                && let Some(reference) = out.remove("$ref")
            {
                out.insert("allOf".into(), json!([{"$ref": reference}]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(to_v3_schema).collect()),
        other => other.clone(),
    }
}

fn v3_definition(name: &str, def: &Value) -> Value {
    match name {
        INT_OR_STRING => json!({
            "description": def["description"],
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }),
        QUANTITY => json!({
            "description": def["description"],
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }),
        _ => to_v3_schema(def),
    }
}

fn v3_param(p: &Param) -> Value {
    let mut v = json!({
        "description": p.description,
        "in": match p.loc { Loc::Query => "query", Loc::Path => "path" },
        "name": p.name,
        "schema": {"type": p.ty, "uniqueItems": true},
    });
    if p.loc == Loc::Path {
        v["required"] = json!(true);
    }
    v
}

pub(super) fn collect_refs(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    if let Some(name) = v.as_str().and_then(|s| s.strip_prefix(prefix)) {
                        out.insert(name.to_string());
                    }
                } else {
                    collect_refs(v, prefix, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, prefix, out)),
        _ => {}
    }
}

/// The v3 document of one group-version: its paths and the definitions they reach.
fn build_v3(group: &str, version: &str) -> Value {
    let paths = v3_paths(group, version);
    let schemas = reachable_schemas(&paths);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                },
            },
        },
        "security": [{"BearerToken": []}],
    })
}

fn v3_paths(group: &str, version: &str) -> Value {
    let mut paths = Map::new();
    for entry in all_paths()
        .into_iter()
        .filter(|e| e.resource.group == group && e.resource.version == version)
    {
        let mut item = Map::new();
        for o in &entry.ops {
            item.insert(o.method.into(), v3_operation(o, entry.resource));
        }
        item.insert(
            "parameters".into(),
            json!(entry.params.iter().map(|p| v3_param(p)).collect::<Vec<_>>()),
        );
        paths.insert(entry.path, Value::Object(item));
    }
    Value::Object(paths)
}

fn v3_operation(o: &Op, r: &ResourceType) -> Value {
    let mut op = Map::new();
    op.insert("description".into(), json!(o.description));
    op.insert("operationId".into(), json!(o.operation_id));
    op.insert(
        "parameters".into(),
        json!(o.params.iter().map(|p| v3_param(p)).collect::<Vec<_>>()),
    );
    if let Some(def) = body_def(o.body, &o.response) {
        let types: Vec<&str> = if o.body == Body::Patch {
            PATCH_TYPES.to_vec()
        } else {
            vec!["*/*"]
        };
        op.insert(
            "requestBody".into(),
            json!({"content": v3_content(&types, &def), "required": o.body != Body::DeleteOptions}),
        );
    }
    let mut responses = Map::new();
    for code in o.codes {
        responses.insert(
            (*code).into(),
            json!({"description": "OK", "content": v3_content(PRODUCES, &o.response)}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    op.insert("responses".into(), Value::Object(responses));
    op.insert(
        "tags".into(),
        json!([format!("{}_{}", tag_group(r.group), r.version)]),
    );
    op_extensions(o, r, &mut op);
    Value::Object(op)
}

/// A `content` map: each media type with the schema of definition `def`.
fn v3_content(types: &[&str], def: &str) -> Map<String, Value> {
    types
        .iter()
        .map(|t| {
            (
                t.to_string(),
                json!({"schema": {"$ref": format!("{V3_REF}{def}")}}),
            )
        })
        .collect()
}

/// The definitions the paths reach, and everything they reference, in v3 form.
fn reachable_schemas(paths: &Value) -> BTreeMap<String, Value> {
    let mut wanted = BTreeSet::new();
    collect_refs(paths, V3_REF, &mut wanted);
    let mut schemas = Map::new();
    let mut queue: Vec<String> = wanted.into_iter().collect();
    while let Some(name) = queue.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        let Some(def) = MODEL.definitions.get(&name) else {
            continue;
        };
        let mut refs = BTreeSet::new();
        collect_refs(def, V2_REF, &mut refs);
        queue.extend(refs.into_iter().filter(|n| !schemas.contains_key(n)));
        schemas.insert(name.clone(), v3_definition(&name, def));
    }
    schemas.into_iter().collect()
}

pub(super) fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

static V3_DOCS: LazyLock<BTreeMap<String, Value>> = LazyLock::new(|| {
    group_versions()
        .into_iter()
        .filter(|(g, v)| {
            MODEL
                .served
                .iter()
                .any(|s| s.resource.group == *g && s.resource.version == *v)
        })
        .map(|(g, v)| (gv_path(g, v), build_v3(g, v)))
        .collect()
});

/// A stable hash of a document, for the `hash` query parameter of the v3 discovery document.
fn hash_of(v: &Value) -> String {
    // FNV-1a, twice with different offsets, for 32 hex digits.
    let text = v.to_string();
    let mut out = String::new();
    for offset in [0xcbf2_9ce4_8422_2325_u64, 0x6c62_272e_07bb_0142] {
        let mut h = offset;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        out.push_str(&format!("{h:016X}"));
    }
    out
}

static V3_DISCOVERY: LazyLock<Value> = LazyLock::new(|| {
    let paths: Map<String, Value> = V3_DOCS
        .iter()
        .map(|(path, doc)| {
            (
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash_of(doc))}),
            )
        })
        .collect();
    json!({"paths": paths})
});

/// `GET /openapi/v3`: the group-versions with a document, and where to fetch each.
pub fn v3_discovery() -> Value {
    V3_DISCOVERY.clone()
}

/// `GET /openapi/v3/{group_version_path}` for `api/v1`, `apis/discovery.k8s.io/v1`, ... (a
/// leading `/` or `/openapi/v3/` is ignored); `None` for a group-version that is not served.
pub fn v3_document(group_version_path: &str) -> Option<&'static Value> {
    let path = group_version_path.trim_start_matches('/');
    let path = path.strip_prefix("openapi/v3/").unwrap_or(path);
    let path = path.split('?').next().unwrap_or(path).trim_end_matches('/');
    V3_DOCS.get(path)
}
