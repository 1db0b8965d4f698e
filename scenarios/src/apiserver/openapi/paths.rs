//! The paths of the OpenAPI documents: for each served kind its operations, their
//! parameters, bodies and responses, as the real documents list them.

use super::{META, MODEL, SCALE, Served};
use crate::apiserver::registry::ResourceType;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Loc {
    Query,
    Path,
}

pub(super) struct Param {
    pub(super) name: &'static str,
    pub(super) loc: Loc,
    pub(super) ty: &'static str,
    pub(super) description: &'static str,
}

const fn query(name: &'static str, ty: &'static str, description: &'static str) -> Param {
    Param {
        name,
        loc: Loc::Query,
        ty,
        description,
    }
}

const DRY_RUN: Param = query(
    "dryRun",
    "string",
    "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
);
const FIELD_MANAGER: Param = query(
    "fieldManager",
    "string",
    "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
);
const FIELD_VALIDATION: Param = query(
    "fieldValidation",
    "string",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.",
);
const FORCE: Param = query(
    "force",
    "boolean",
    "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
);
const PRETTY: Param = query(
    "pretty",
    "string",
    "If 'true', then the output is pretty printed.",
);
const LIST_PARAMS: &[Param] = &[
    query(
        "allowWatchBookmarks",
        "boolean",
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
    ),
    query(
        "continue",
        "string",
        "The continue option should be set when retrieving more results from the server.",
    ),
    query(
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    query(
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    query(
        "limit",
        "integer",
        "limit is a maximum number of responses to return for a list call.",
    ),
    query(
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    query(
        "resourceVersionMatch",
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    query(
        "sendInitialEvents",
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
    ),
    query(
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call.",
    ),
    query(
        "watch",
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
    ),
];
const DELETE_PARAMS: &[Param] = &[
    DRY_RUN,
    query(
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    query(
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.",
    ),
    query(
        "propagationPolicy",
        "string",
        "Whether and how garbage collection will be performed.",
    ),
];

const NAME: Param = Param {
    name: "name",
    loc: Loc::Path,
    ty: "string",
    description: "name of the object",
};
const NAMESPACE: Param = Param {
    name: "namespace",
    loc: Loc::Path,
    ty: "string",
    description: "object name and auth scope, such as for teams and projects",
};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Body {
    None,
    Object,
    Patch,
    DeleteOptions,
}

pub(super) struct Op {
    pub(super) method: &'static str,
    pub(super) action: &'static str,
    pub(super) operation_id: String,
    pub(super) description: String,
    pub(super) params: Vec<&'static Param>,
    pub(super) body: Body,
    /// Response definition, and the success codes.
    pub(super) response: String,
    pub(super) codes: &'static [&'static str],
}

pub(super) struct PathEntry {
    pub(super) path: String,
    pub(super) params: Vec<&'static Param>,
    pub(super) ops: Vec<Op>,
    pub(super) resource: &'static ResourceType,
}

fn group_prefix(group: &str) -> String {
    let first = group.split('.').next().unwrap_or("");
    if first.is_empty() {
        return "Core".to_string();
    }
    let mut chars = first.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn write_params(patch: bool) -> Vec<&'static Param> {
    let mut p = vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION];
    if patch {
        p.push(&FORCE);
    }
    p
}

/// The paths of one served kind: its collection, its objects, their subresources and, for
/// a namespaced kind, the list across namespaces.
fn paths_for(s: &Served) -> Vec<PathEntry> {
    let r = s.resource;
    let names = OpNames {
        gv: format!("{}{}", group_prefix(r.group), capitalized(r.version)),
        ns: if r.namespaced { "Namespaced" } else { "" },
        kind: r.kind,
    };
    let def = &s.definition;
    let list_def = format!("{def}List");
    let base = r.group_version_path();
    let collection = if r.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{base}/{}", r.plural)
    };
    let mut scope: Vec<&'static Param> = Vec::new();
    if r.namespaced {
        scope.push(&NAMESPACE);
    }
    scope.push(&PRETTY);
    let mut item_scope = vec![&NAME];
    item_scope.extend(scope.iter().copied());
    let entry = |path, params, ops| PathEntry {
        path,
        params,
        ops,
        resource: r,
    };

    let mut item_ops = names.read_replace_patch("", def);
    item_ops.push(names.delete());
    let mut out = vec![
        entry(
            collection.clone(),
            scope,
            names.collection_ops(def, &list_def),
        ),
        entry(
            format!("{collection}/{{name}}"),
            item_scope.clone(),
            item_ops,
        ),
    ];
    if r.status {
        out.push(entry(
            format!("{collection}/{{name}}/status"),
            item_scope.clone(),
            names.read_replace_patch("Status", def),
        ));
    }
    if r.scale() {
        out.push(entry(
            format!("{collection}/{{name}}/scale"),
            item_scope,
            names.read_replace_patch("Scale", SCALE),
        ));
    }
    if r.namespaced {
        let OpNames { gv, kind, .. } = &names;
        out.push(entry(
            format!("{base}/{}", r.plural),
            vec![&PRETTY],
            vec![names.list(format!("list{gv}{kind}ForAllNamespaces"), list_def)],
        ));
    }
    out
}

/// What the operation ids and descriptions of one kind are made of.
struct OpNames {
    /// Group and version, as `CoreV1`, `AppsV1`.
    gv: String,
    /// `Namespaced` for a namespaced kind, else empty.
    ns: &'static str,
    kind: &'static str,
}

impl OpNames {
    /// List, create and delete a collection.
    fn collection_ops(&self, def: &str, list_def: &str) -> Vec<Op> {
        let Self { gv, ns, kind } = self;
        let mut deletecollection_params: Vec<&'static Param> = DELETE_PARAMS.iter().collect();
        deletecollection_params.extend(LIST_PARAMS.iter());
        vec![
            self.list(format!("list{gv}{ns}{kind}"), list_def.to_string()),
            Op {
                method: "post",
                action: "post",
                operation_id: format!("create{gv}{ns}{kind}"),
                description: format!("create a {kind}"),
                params: write_params(false),
                body: Body::Object,
                response: def.to_string(),
                codes: &["200", "201", "202"],
            },
            Op {
                method: "delete",
                action: "deletecollection",
                operation_id: format!("delete{gv}Collection{ns}{kind}"),
                description: format!("delete collection of {kind}"),
                params: deletecollection_params,
                body: Body::DeleteOptions,
                response: format!("{META}Status"),
                codes: &["200"],
            },
        ]
    }

    fn list(&self, operation_id: String, list_def: String) -> Op {
        Op {
            method: "get",
            action: "list",
            operation_id,
            description: format!("list or watch objects of kind {}", self.kind),
            params: LIST_PARAMS.iter().collect(),
            body: Body::None,
            response: list_def,
            codes: &["200"],
        }
    }

    /// Read, replace and patch an object (`sub` empty) or its subresource `sub` (`Status`,
    /// `Scale`), answered with `response`.
    fn read_replace_patch(&self, sub: &str, response: &str) -> Vec<Op> {
        let Self { gv, ns, kind } = self;
        let of = if sub.is_empty() {
            String::new()
        } else {
            format!("{} of ", sub.to_lowercase())
        };
        vec![
            Op {
                method: "get",
                action: "get",
                operation_id: format!("read{gv}{ns}{kind}{sub}"),
                description: format!("read {of}the specified {kind}"),
                params: Vec::new(),
                body: Body::None,
                response: response.to_string(),
                codes: &["200"],
            },
            Op {
                method: "put",
                action: "put",
                operation_id: format!("replace{gv}{ns}{kind}{sub}"),
                description: format!("replace {of}the specified {kind}"),
                params: write_params(false),
                body: Body::Object,
                response: response.to_string(),
                codes: &["200", "201"],
            },
            Op {
                method: "patch",
                action: "patch",
                operation_id: format!("patch{gv}{ns}{kind}{sub}"),
                description: format!("partially update {of}the specified {kind}"),
                params: write_params(true),
                body: Body::Patch,
                response: response.to_string(),
                codes: &["200", "201"],
            },
        ]
    }

    fn delete(&self) -> Op {
        let Self { gv, ns, kind } = self;
        Op {
            method: "delete",
            action: "delete",
            operation_id: format!("delete{gv}{ns}{kind}"),
            description: format!("delete a {kind}"),
            params: DELETE_PARAMS.iter().collect(),
            body: Body::DeleteOptions,
            response: format!("{META}Status"),
            codes: &["200", "202"],
        }
    }
}

pub(super) fn all_paths() -> Vec<PathEntry> {
    MODEL.served.iter().flat_map(paths_for).collect()
}
