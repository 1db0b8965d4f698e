//! Kubernetes protobuf request bodies (`Content-Type: application/vnd.kubernetes.protobuf`),
//! decoded into the JSON object the same request would have carried as JSON.
//!
//! The server stores objects as JSON. Recent kubectl clients send some request bodies as
//! protobuf instead (the `k8s\0` magic, then a `runtime.Unknown` envelope whose `raw` field is
//! the serialized object) and do not retry with JSON when the server answers 415, so the
//! server decodes them with [`decode_body`] and goes on as if JSON had been sent.
//!
//! # Which clients send protobuf
//!
//! Observed by running `kubectl.1.27` … `kubectl.1.33` against a logging stub server (plain
//! `/api` + `/api/v1` discovery, no aggregated discovery, no OpenAPI):
//!
//! | Command | 1.27 – 1.31 | 1.32, 1.33 |
//! |---|---|---|
//! | `create namespace` (also `--save-config`, `--dry-run=server`) | JSON | protobuf `v1 Namespace` |
//! | `create service clusterip / nodeport / loadbalancer / externalname` | JSON | protobuf `v1 Service` |
//! | `create configmap` (`--from-literal`, `--from-file`) | JSON | protobuf `v1 ConfigMap` |
//! | `create secret generic / tls / docker-registry` | JSON | protobuf `v1 Secret` |
//! | `create serviceaccount` | JSON | protobuf `v1 ServiceAccount` |
//! | `create token SA` (`serviceaccounts/SA/token`) | JSON | protobuf `authentication.k8s.io/v1 TokenRequest` |
//! | `create deployment` | JSON | protobuf `apps/v1 Deployment` |
//! | `create job` (also `--from=cronjob/NAME`), `create cronjob` | JSON | protobuf `batch/v1 Job`, `batch/v1 CronJob` |
//! | `create -f`, `replace -f` | JSON | JSON |
//! | `apply -f` (client-side) | strategic merge patch | strategic merge patch |
//! | `annotate`, `label`, `scale` | merge patch | merge patch |
//! | `patch`, `taint`, `cordon`, `drain` | strategic merge patch | strategic merge patch |
//! | `delete` (`DeleteOptions` body) | JSON | JSON |
//! | `run`, `expose` | JSON | JSON |
//!
//! 1.32 and 1.33 produce byte-identical bodies. Every 1.32+ request also carries
//! `Accept: application/vnd.kubernetes.protobuf,application/json`, so JSON answers are fine.
//! Only the typed `kubectl create <type>` generators use protobuf; everything built from
//! files or patches stays JSON.
//!
//! # What is decoded
//!
//! `v1` Namespace, Service, ConfigMap, Secret, ServiceAccount; `apps/v1` Deployment (the pod
//! template's common fields: `protobuf/apps.rs`); `batch/v1` Job and CronJob
//! (`protobuf/batch.rs`, the same pod template); `authentication.k8s.io/v1` TokenRequest; `DeleteOptions` (`v1` or `meta.k8s.io/v1`, in case a client sends it). Any
//! other kind is [`ProtobufError::UnknownKind`]. An envelope whose `contentType` says JSON is
//! passed through.
//!
//! # JSON shape
//!
//! The result equals the JSON body the Go client would have sent (Go's `encoding/json` with
//! the Kubernetes field tags) minus its `null`s: `omitempty` fields are left out when empty,
//! pointer fields are present exactly when set (so `automountServiceAccountToken: false`
//! survives), value-struct fields such as `spec` and `status` are always present, timestamps
//! are RFC 3339 with seconds, byte fields (Secret `data`, ConfigMap `binaryData`) are base64,
//! and IntOrString `targetPort` is a number or a string as set (an unset, zero `targetPort`
//! is left out, which the API server treats the same as 0). The tests in
//! `tests/it/protobuf_bodies.rs` check this against real kubectl 1.33 protobuf bodies and the
//! kubectl 1.31 JSON bodies for the same commands.

use std::collections::BTreeMap;

use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde_json::{Map, Value};

mod apps;
mod batch;

/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The `(apiVersion, kind)` pairs [`decode_body`] can decode.
pub const SUPPORTED_KINDS: &[(&str, &str)] = &[
    ("v1", "Namespace"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("v1", "DeleteOptions"),
    ("meta.k8s.io/v1", "DeleteOptions"),
    ("authentication.k8s.io/v1", "TokenRequest"),
];

/// Why a protobuf body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("not a Kubernetes protobuf body: it does not start with the magic bytes \"k8s\\0\"")]
    BadMagic,
    #[error("malformed protobuf in {context}: {message}")]
    Malformed {
        context: &'static str,
        message: String,
    },
    #[error("the protobuf envelope has no typeMeta kind")]
    MissingTypeMeta,
    #[error(
        "unknown kind \"{kind}\" (apiVersion \"{api_version}\"): protobuf bodies are only decoded for Namespace, Service, ConfigMap, Secret, ServiceAccount, Deployment, Job, CronJob, TokenRequest and DeleteOptions; send JSON instead"
    )]
    UnknownKind { api_version: String, kind: String },
    #[error("unsupported contentEncoding \"{0}\" in the protobuf envelope")]
    UnsupportedEncoding(String),
    #[error("unsupported contentType \"{0}\" in the protobuf envelope")]
    UnsupportedContentType(String),
    #[error("invalid {field}: {message}")]
    InvalidValue {
        field: &'static str,
        message: String,
    },
}

/// Whether a `Content-Type` header value names Kubernetes protobuf (parameters are ignored).
pub fn is_protobuf_content_type(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(CONTENT_TYPE))
}

/// Decodes a Kubernetes protobuf request body into the JSON object the same request would have
/// carried as JSON, with `apiVersion` and `kind` taken from the envelope's typeMeta.
pub fn decode_body(bytes: &[u8]) -> Result<Value, ProtobufError> {
    let rest = bytes.strip_prefix(&MAGIC).ok_or(ProtobufError::BadMagic)?;
    let envelope =
        Unknown::decode(rest).map_err(|e| malformed("the runtime.Unknown envelope", e))?;
    let type_meta = envelope.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    if kind.is_empty() {
        return Err(ProtobufError::MissingTypeMeta);
    }
    let encoding = envelope.content_encoding.unwrap_or_default();
    if !encoding.is_empty() {
        return Err(ProtobufError::UnsupportedEncoding(encoding));
    }
    let raw = envelope.raw.unwrap_or_default();
    let content_type = envelope.content_type.unwrap_or_default();
    let mut object = if content_type.is_empty() || is_protobuf_content_type(&content_type) {
        convert(&api_version, &kind, &raw)?
    } else if is_json_content_type(&content_type) {
        return json_passthrough(&raw, api_version, kind);
    } else {
        return Err(ProtobufError::UnsupportedContentType(content_type));
    };
    object.insert("apiVersion".into(), Value::String(api_version));
    object.insert("kind".into(), Value::String(kind));
    Ok(Value::Object(object))
}

fn is_json_content_type(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// An envelope whose raw bytes are JSON: parse them, fill in apiVersion and kind if missing.
fn json_passthrough(raw: &[u8], api_version: String, kind: String) -> Result<Value, ProtobufError> {
    let value: Value = serde_json::from_slice(raw).map_err(|e| ProtobufError::InvalidValue {
        field: "raw (JSON content type)",
        message: e.to_string(),
    })?;
    let Value::Object(mut object) = value else {
        return Err(ProtobufError::InvalidValue {
            field: "raw (JSON content type)",
            message: "not a JSON object".into(),
        });
    };
    object
        .entry("apiVersion")
        .or_insert(Value::String(api_version));
    object.entry("kind").or_insert(Value::String(kind));
    Ok(Value::Object(object))
}

fn malformed(context: &'static str, error: prost::DecodeError) -> ProtobufError {
    ProtobufError::Malformed {
        context,
        message: error.to_string(),
    }
}

fn decode<M: Message + Default>(raw: &[u8], context: &'static str) -> Result<M, ProtobufError> {
    M::decode(raw).map_err(|e| malformed(context, e))
}

fn convert(api_version: &str, kind: &str, raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    match (api_version, kind) {
        ("v1", "Namespace") => namespace(&decode(raw, "v1 Namespace")?),
        ("v1", "Service") => service(&decode(raw, "v1 Service")?),
        ("v1", "ConfigMap") => config_map(&decode(raw, "v1 ConfigMap")?),
        ("v1", "Secret") => secret(&decode(raw, "v1 Secret")?),
        ("v1", "ServiceAccount") => service_account(&decode(raw, "v1 ServiceAccount")?),
        ("apps/v1", "Deployment") => apps::deployment(&decode(raw, "apps/v1 Deployment")?),
        ("batch/v1", "Job") => batch::job(&decode(raw, "batch/v1 Job")?),
        ("batch/v1", "CronJob") => batch::cron_job(&decode(raw, "batch/v1 CronJob")?),
        ("v1" | "meta.k8s.io/v1", "DeleteOptions") => {
            delete_options(&decode(raw, "DeleteOptions")?)
        }
        ("authentication.k8s.io/v1", "TokenRequest") => {
            token_request(&decode(raw, "authentication.k8s.io/v1 TokenRequest")?)
        }
        _ => Err(ProtobufError::UnknownKind {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        }),
    }
}

/// A JSON object under construction, with one method per Go JSON field flavour.
#[derive(Default)]
struct Obj(Map<String, Value>);

impl Obj {
    fn new() -> Self {
        Self::default()
    }

    fn done(self) -> Value {
        Value::Object(self.0)
    }

    fn set(&mut self, key: &str, value: Value) -> &mut Self {
        self.0.insert(key.to_string(), value);
        self
    }

    /// `string` with `omitempty`: left out when empty.
    fn string(&mut self, key: &str, value: &Option<String>) -> &mut Self {
        match value {
            Some(s) if !s.is_empty() => self.set(key, Value::String(s.clone())),
            _ => self,
        }
    }

    /// `*string`: present exactly when set, even if empty.
    fn string_ptr(&mut self, key: &str, value: &Option<String>) -> &mut Self {
        match value {
            Some(s) => self.set(key, Value::String(s.clone())),
            None => self,
        }
    }

    /// `string` without `omitempty`: always present.
    fn string_req(&mut self, key: &str, value: &Option<String>) -> &mut Self {
        self.set(key, Value::String(value.clone().unwrap_or_default()))
    }

    /// An integer with `omitempty`: left out when zero.
    fn int<T: Into<i64> + Copy>(&mut self, key: &str, value: Option<T>) -> &mut Self {
        match value.map(Into::into) {
            Some(n) if n != 0 => self.set(key, Value::from(n)),
            _ => self,
        }
    }

    /// `*int32` / `*int64`: present exactly when set.
    fn int_ptr<T: Into<i64> + Copy>(&mut self, key: &str, value: Option<T>) -> &mut Self {
        match value.map(Into::into) {
            Some(n) => self.set(key, Value::from(n)),
            None => self,
        }
    }

    /// An integer without `omitempty`: always present.
    fn int_req<T: Into<i64> + Copy>(&mut self, key: &str, value: Option<T>) -> &mut Self {
        let n: i64 = value.map(Into::into).unwrap_or(0);
        self.set(key, Value::from(n))
    }

    /// `bool` with `omitempty`: left out when false.
    fn bool(&mut self, key: &str, value: Option<bool>) -> &mut Self {
        match value {
            Some(true) => self.set(key, Value::Bool(true)),
            _ => self,
        }
    }

    /// `*bool`: present exactly when set.
    fn bool_ptr(&mut self, key: &str, value: Option<bool>) -> &mut Self {
        match value {
            Some(b) => self.set(key, Value::Bool(b)),
            None => self,
        }
    }

    /// `[]string`: left out when empty (`omitempty`, or `null` without it).
    fn strings(&mut self, key: &str, values: &[String]) -> &mut Self {
        if values.is_empty() {
            return self;
        }
        self.set(
            key,
            Value::Array(values.iter().cloned().map(Value::String).collect()),
        )
    }

    /// A list of objects: left out when empty.
    fn list(&mut self, key: &str, values: Vec<Value>) -> &mut Self {
        if values.is_empty() {
            return self;
        }
        self.set(key, Value::Array(values))
    }

    /// `map[string]string`: left out when empty.
    fn map(&mut self, key: &str, values: &BTreeMap<String, String>) -> &mut Self {
        if values.is_empty() {
            return self;
        }
        let map = values
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        self.set(key, Value::Object(map))
    }

    /// `map[string][]byte`: base64 values, left out when empty.
    fn bytes_map(&mut self, key: &str, values: &BTreeMap<String, Vec<u8>>) -> &mut Self {
        if values.is_empty() {
            return self;
        }
        let map = values
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(base64(v))))
            .collect();
        self.set(key, Value::Object(map))
    }

    /// `metav1.Time` or `*metav1.Time`: left out when unset or zero (Go writes `null`).
    fn time(
        &mut self,
        key: &str,
        field: &'static str,
        value: &Option<meta::Time>,
    ) -> Result<&mut Self, ProtobufError> {
        Ok(match time(field, value)? {
            Some(t) => self.set(key, Value::String(t)),
            None => self,
        })
    }
}

/// Formats a `metav1.Time` as Go's JSON does (RFC 3339, whole seconds, UTC). An empty message
/// is the zero time (`null` in JSON), `None` here; nanoseconds are dropped like the API server
/// drops them.
fn time(field: &'static str, value: &Option<meta::Time>) -> Result<Option<String>, ProtobufError> {
    let Some(t) = value else { return Ok(None) };
    if t.seconds.is_none() && t.nanos.is_none() {
        return Ok(None);
    }
    let seconds = t.seconds.unwrap_or(0);
    let invalid = || ProtobufError::InvalidValue {
        field,
        message: format!("timestamp {seconds} seconds is outside the years 0000-9999"),
    };
    let datetime = chrono::DateTime::from_timestamp(seconds, 0).ok_or_else(invalid)?;
    if !(0..=9999).contains(&chrono::Datelike::year(&datetime)) {
        return Err(invalid());
    }
    Ok(Some(
        datetime.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    ))
}

/// Standard base64 with padding, as Go's JSON encodes `[]byte`.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `metav1.ObjectMeta`, shared by every kind. Always present (Go writes at least
/// `{"creationTimestamp":null}`).
fn object_meta(m: &Option<meta::ObjectMeta>) -> Result<Value, ProtobufError> {
    let Some(m) = m else {
        return Ok(Value::Object(Map::new()));
    };
    let mut o = Obj::new();
    o.string("name", &m.name)
        .string("generateName", &m.generate_name)
        .string("namespace", &m.namespace)
        .string("selfLink", &m.self_link)
        .string("uid", &m.uid)
        .string("resourceVersion", &m.resource_version)
        .int("generation", m.generation);
    o.time(
        "creationTimestamp",
        "metadata.creationTimestamp",
        &m.creation_timestamp,
    )?;
    o.time(
        "deletionTimestamp",
        "metadata.deletionTimestamp",
        &m.deletion_timestamp,
    )?;
    o.int_ptr(
        "deletionGracePeriodSeconds",
        m.deletion_grace_period_seconds,
    )
    .map("labels", &m.labels)
    .map("annotations", &m.annotations)
    .list(
        "ownerReferences",
        m.owner_references.iter().map(owner_reference).collect(),
    )
    .strings("finalizers", &m.finalizers);
    let managed = m
        .managed_fields
        .iter()
        .map(managed_fields_entry)
        .collect::<Result<Vec<_>, _>>()?;
    o.list("managedFields", managed);
    Ok(o.done())
}

fn owner_reference(r: &meta::OwnerReference) -> Value {
    let mut o = Obj::new();
    o.string_req("apiVersion", &r.api_version)
        .string_req("kind", &r.kind)
        .string_req("name", &r.name)
        .string_req("uid", &r.uid)
        .bool_ptr("controller", r.controller)
        .bool_ptr("blockOwnerDeletion", r.block_owner_deletion);
    o.done()
}

fn managed_fields_entry(e: &meta::ManagedFieldsEntry) -> Result<Value, ProtobufError> {
    let mut o = Obj::new();
    o.string("manager", &e.manager)
        .string("operation", &e.operation)
        .string("apiVersion", &e.api_version);
    o.time("time", "metadata.managedFields.time", &e.time)?;
    o.string("fieldsType", &e.fields_type);
    if let Some(raw) = e.fields_v1.as_ref().and_then(|f| f.raw.as_ref()) {
        let fields: Value =
            serde_json::from_slice(raw).map_err(|err| ProtobufError::InvalidValue {
                field: "metadata.managedFields.fieldsV1",
                message: err.to_string(),
            })?;
        if !fields.is_null() {
            o.set("fieldsV1", fields);
        }
    }
    o.string("subresource", &e.subresource);
    Ok(o.done())
}

fn namespace(ns: &core::Namespace) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&ns.metadata)?);
    let mut spec = Obj::new();
    if let Some(s) = &ns.spec {
        spec.strings("finalizers", &s.finalizers);
    }
    o.set("spec", spec.done());
    let mut status = Obj::new();
    if let Some(s) = &ns.status {
        status.string("phase", &s.phase);
        let conditions = s
            .conditions
            .iter()
            .map(|c| {
                let mut o = Obj::new();
                o.string_req("type", &c.r#type)
                    .string_req("status", &c.status);
                o.time(
                    "lastTransitionTime",
                    "status.conditions.lastTransitionTime",
                    &c.last_transition_time,
                )?;
                o.string("reason", &c.reason).string("message", &c.message);
                Ok(o.done())
            })
            .collect::<Result<Vec<_>, ProtobufError>>()?;
        status.list("conditions", conditions);
    }
    o.set("status", status.done());
    Ok(o.0)
}

/// `intstr.IntOrString`: a number (type 0) or a string (type 1).
fn int_or_string(v: &IntOrString) -> Value {
    match v.r#type {
        Some(1) => Value::String(v.str_val.clone().unwrap_or_default()),
        _ => Value::from(v.int_val.unwrap_or(0)),
    }
}

fn service_port(p: &core::ServicePort) -> Value {
    let mut o = Obj::new();
    o.string("name", &p.name)
        .string("protocol", &p.protocol)
        .string_ptr("appProtocol", &p.app_protocol)
        .int_req("port", p.port);
    if let Some(target) = &p.target_port {
        let target = int_or_string(target);
        if target != 0 {
            o.set("targetPort", target);
        }
    }
    o.int("nodePort", p.node_port);
    o.done()
}

fn service(svc: &core::Service) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&svc.metadata)?);
    let mut spec = Obj::new();
    if let Some(s) = &svc.spec {
        spec.list("ports", s.ports.iter().map(service_port).collect())
            .map("selector", &s.selector)
            .string("clusterIP", &s.cluster_ip)
            .strings("clusterIPs", &s.cluster_ips)
            .string("type", &s.r#type)
            .strings("externalIPs", &s.external_ips)
            .string("sessionAffinity", &s.session_affinity)
            .string("loadBalancerIP", &s.load_balancer_ip)
            .strings("loadBalancerSourceRanges", &s.load_balancer_source_ranges)
            .string("externalName", &s.external_name)
            .string("externalTrafficPolicy", &s.external_traffic_policy)
            .int("healthCheckNodePort", s.health_check_node_port)
            .bool("publishNotReadyAddresses", s.publish_not_ready_addresses);
        if let Some(config) = &s.session_affinity_config {
            let mut c = Obj::new();
            if let Some(client_ip) = &config.client_ip {
                let mut ip = Obj::new();
                ip.int_ptr("timeoutSeconds", client_ip.timeout_seconds);
                c.set("clientIP", ip.done());
            }
            spec.set("sessionAffinityConfig", c.done());
        }
        spec.strings("ipFamilies", &s.ip_families)
            .string_ptr("ipFamilyPolicy", &s.ip_family_policy)
            .bool_ptr(
                "allocateLoadBalancerNodePorts",
                s.allocate_load_balancer_node_ports,
            )
            .string_ptr("loadBalancerClass", &s.load_balancer_class)
            .string_ptr("internalTrafficPolicy", &s.internal_traffic_policy)
            .string_ptr("trafficDistribution", &s.traffic_distribution);
    }
    o.set("spec", spec.done());
    let mut status = Obj::new();
    let mut load_balancer = Obj::new();
    if let Some(s) = &svc.status {
        if let Some(lb) = &s.load_balancer {
            load_balancer.list(
                "ingress",
                lb.ingress.iter().map(load_balancer_ingress).collect(),
            );
        }
        status.set("loadBalancer", load_balancer.done());
        let conditions = s
            .conditions
            .iter()
            .map(condition)
            .collect::<Result<Vec<_>, _>>()?;
        status.list("conditions", conditions);
    } else {
        status.set("loadBalancer", load_balancer.done());
    }
    o.set("status", status.done());
    Ok(o.0)
}

fn load_balancer_ingress(i: &core::LoadBalancerIngress) -> Value {
    let mut o = Obj::new();
    o.string("ip", &i.ip)
        .string("hostname", &i.hostname)
        .string_ptr("ipMode", &i.ip_mode)
        .list(
            "ports",
            i.ports
                .iter()
                .map(|p| {
                    let mut o = Obj::new();
                    o.int_req("port", p.port)
                        .string_req("protocol", &p.protocol)
                        .string_ptr("error", &p.error);
                    o.done()
                })
                .collect(),
        );
    o.done()
}

/// `metav1.Condition`.
fn condition(c: &meta::Condition) -> Result<Value, ProtobufError> {
    let mut o = Obj::new();
    o.string_req("type", &c.r#type)
        .string_req("status", &c.status)
        .int("observedGeneration", c.observed_generation);
    o.time(
        "lastTransitionTime",
        "status.conditions.lastTransitionTime",
        &c.last_transition_time,
    )?;
    o.string_req("reason", &c.reason)
        .string_req("message", &c.message);
    Ok(o.done())
}

fn config_map(cm: &core::ConfigMap) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&cm.metadata)?)
        .bool_ptr("immutable", cm.immutable)
        .map("data", &cm.data)
        .bytes_map("binaryData", &cm.binary_data);
    Ok(o.0)
}

fn secret(s: &core::Secret) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&s.metadata)?)
        .bool_ptr("immutable", s.immutable)
        .bytes_map("data", &s.data)
        .map("stringData", &s.string_data)
        .string("type", &s.r#type);
    Ok(o.0)
}

fn service_account(sa: &core::ServiceAccount) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&sa.metadata)?)
        .list("secrets", sa.secrets.iter().map(object_reference).collect())
        .list(
            "imagePullSecrets",
            sa.image_pull_secrets
                .iter()
                .map(|r| {
                    let mut o = Obj::new();
                    o.string("name", &r.name);
                    o.done()
                })
                .collect(),
        )
        .bool_ptr(
            "automountServiceAccountToken",
            sa.automount_service_account_token,
        );
    Ok(o.0)
}

fn object_reference(r: &core::ObjectReference) -> Value {
    let mut o = Obj::new();
    o.string("kind", &r.kind)
        .string("namespace", &r.namespace)
        .string("name", &r.name)
        .string("uid", &r.uid)
        .string("apiVersion", &r.api_version)
        .string("resourceVersion", &r.resource_version)
        .string("fieldPath", &r.field_path);
    o.done()
}

fn delete_options(d: &meta::DeleteOptions) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.int_ptr("gracePeriodSeconds", d.grace_period_seconds);
    if let Some(p) = &d.preconditions {
        let mut pre = Obj::new();
        pre.string_ptr("uid", &p.uid)
            .string_ptr("resourceVersion", &p.resource_version);
        o.set("preconditions", pre.done());
    }
    o.bool_ptr("orphanDependents", d.orphan_dependents)
        .string_ptr("propagationPolicy", &d.propagation_policy)
        .strings("dryRun", &d.dry_run)
        .bool_ptr(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            d.ignore_store_read_error_with_cluster_breaking_potential,
        );
    Ok(o.0)
}

fn token_request(t: &authn::TokenRequest) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&t.metadata)?);
    let mut spec = Obj::new();
    if let Some(s) = &t.spec {
        spec.strings("audiences", &s.audiences)
            .int_ptr("expirationSeconds", s.expiration_seconds);
        if let Some(r) = &s.bound_object_ref {
            let mut b = Obj::new();
            b.string("kind", &r.kind)
                .string("apiVersion", &r.api_version)
                .string("name", &r.name)
                .string("uid", &r.u_id);
            spec.set("boundObjectRef", b.done());
        }
    }
    o.set("spec", spec.done());
    let mut status = Obj::new();
    let empty = authn::TokenRequestStatus::default();
    let s = t.status.as_ref().unwrap_or(&empty);
    status.string_req("token", &s.token);
    status.time(
        "expirationTimestamp",
        "status.expirationTimestamp",
        &s.expiration_timestamp,
    )?;
    o.set("status", status.done());
    Ok(o.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;
    use serde_json::json;

    /// Wraps a message the way client-go's protobuf serializer does: magic, then a
    /// `runtime.Unknown` with typeMeta, raw, and empty contentEncoding and contentType.
    fn envelope(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
        envelope_raw(api_version, kind, message.encode_to_vec(), "")
    }

    fn envelope_raw(api_version: &str, kind: &str, raw: Vec<u8>, content_type: &str) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(content_type.into()),
        };
        let mut out = MAGIC.to_vec();
        out.extend(unknown.encode_to_vec());
        out
    }

    /// ObjectMeta as Go's gogo protobuf writes it: every non-pointer field set, empty.
    fn go_meta(name: &str) -> meta::ObjectMeta {
        meta::ObjectMeta {
            name: Some(name.into()),
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            self_link: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            ..Default::default()
        }
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn namespace_as_kubectl_creates_it() {
        let ns = core::Namespace {
            metadata: Some(go_meta("ns1")),
            spec: Some(core::NamespaceSpec::default()),
            status: Some(core::NamespaceStatus {
                phase: Some(String::new()),
                conditions: vec![],
            }),
        };
        let decoded = decode_body(&envelope("v1", "Namespace", &ns)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "ns1"},
                "spec": {},
                "status": {}
            })
        );
    }

    #[test]
    fn namespace_with_full_metadata() {
        let ns = core::Namespace {
            metadata: Some(meta::ObjectMeta {
                name: s("team-a"),
                generate_name: s("team-"),
                namespace: s(""),
                uid: s("0b6f-11"),
                resource_version: s("42"),
                generation: Some(3),
                creation_timestamp: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: Some(123),
                }),
                deletion_timestamp: Some(meta::Time {
                    seconds: Some(1_700_000_030),
                    nanos: None,
                }),
                deletion_grace_period_seconds: Some(0),
                labels: string_map(&[("team", "a"), ("tier", "gold")]),
                annotations: string_map(&[("note", "")]),
                owner_references: vec![meta::OwnerReference {
                    api_version: s("v1"),
                    kind: s("ConfigMap"),
                    name: s("owner"),
                    uid: s("uid-owner"),
                    controller: Some(true),
                    block_owner_deletion: Some(false),
                }],
                finalizers: strings(&["example.com/keep"]),
                managed_fields: vec![meta::ManagedFieldsEntry {
                    manager: s("kubectl-create"),
                    operation: s("Update"),
                    api_version: s("v1"),
                    time: Some(meta::Time {
                        seconds: Some(1_700_000_000),
                        nanos: None,
                    }),
                    fields_type: s("FieldsV1"),
                    fields_v1: Some(meta::FieldsV1 {
                        raw: Some(br#"{"f:metadata":{}}"#.to_vec()),
                    }),
                    subresource: s(""),
                }],
                ..Default::default()
            }),
            spec: Some(core::NamespaceSpec {
                finalizers: strings(&["kubernetes"]),
            }),
            status: Some(core::NamespaceStatus {
                phase: s("Terminating"),
                conditions: vec![core::NamespaceCondition {
                    r#type: s("NamespaceDeletionContentFailure"),
                    status: s("False"),
                    last_transition_time: Some(meta::Time::default()),
                    reason: s(""),
                    message: s("all good"),
                }],
            }),
        };
        let decoded = decode_body(&envelope("v1", "Namespace", &ns)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": "team-a",
                    "generateName": "team-",
                    "uid": "0b6f-11",
                    "resourceVersion": "42",
                    "generation": 3,
                    "creationTimestamp": "2023-11-14T22:13:20Z",
                    "deletionTimestamp": "2023-11-14T22:13:50Z",
                    "deletionGracePeriodSeconds": 0,
                    "labels": {"team": "a", "tier": "gold"},
                    "annotations": {"note": ""},
                    "ownerReferences": [{
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "owner",
                        "uid": "uid-owner",
                        "controller": true,
                        "blockOwnerDeletion": false
                    }],
                    "finalizers": ["example.com/keep"],
                    "managedFields": [{
                        "manager": "kubectl-create",
                        "operation": "Update",
                        "apiVersion": "v1",
                        "time": "2023-11-14T22:13:20Z",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:metadata": {}}
                    }]
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {
                    "phase": "Terminating",
                    "conditions": [{
                        "type": "NamespaceDeletionContentFailure",
                        "status": "False",
                        "message": "all good"
                    }]
                }
            })
        );
    }

    #[test]
    fn epoch_timestamp_is_not_the_zero_time() {
        let ns = core::Namespace {
            metadata: Some(meta::ObjectMeta {
                name: s("old"),
                creation_timestamp: Some(meta::Time {
                    seconds: Some(0),
                    nanos: Some(0),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let decoded = decode_body(&envelope("v1", "Namespace", &ns)).unwrap();
        assert_eq!(
            decoded["metadata"]["creationTimestamp"],
            json!("1970-01-01T00:00:00Z")
        );
    }

    #[test]
    fn missing_metadata_spec_and_status_become_empty_objects() {
        let decoded =
            decode_body(&envelope("v1", "Namespace", &core::Namespace::default())).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {}, "spec": {}, "status": {}})
        );
        let decoded = decode_body(&envelope("v1", "Service", &core::Service::default())).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {},
                "spec": {},
                "status": {"loadBalancer": {}}
            })
        );
    }

    fn go_port(name: &str, port: i32, target: IntOrString, node_port: i32) -> core::ServicePort {
        core::ServicePort {
            name: s(name),
            protocol: s("TCP"),
            app_protocol: None,
            port: Some(port),
            target_port: Some(target),
            node_port: Some(node_port),
        }
    }

    fn int_target(n: i32) -> IntOrString {
        IntOrString {
            r#type: Some(0),
            int_val: Some(n),
            str_val: s(""),
        }
    }

    fn string_target(name: &str) -> IntOrString {
        IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: s(name),
        }
    }

    /// A ServiceSpec with every non-pointer field set to its empty value, as Go writes it.
    fn go_service_spec() -> core::ServiceSpec {
        core::ServiceSpec {
            cluster_ip: s(""),
            r#type: s(""),
            session_affinity: s(""),
            load_balancer_ip: s(""),
            external_name: s(""),
            external_traffic_policy: s(""),
            health_check_node_port: Some(0),
            publish_not_ready_addresses: Some(false),
            ..Default::default()
        }
    }

    #[test]
    fn load_balancer_service_as_kubectl_creates_it() {
        let svc = core::Service {
            metadata: Some(meta::ObjectMeta {
                labels: string_map(&[("app", "x")]),
                ..go_meta("x")
            }),
            spec: Some(core::ServiceSpec {
                ports: vec![
                    go_port("80-8080", 80, int_target(8080), 0),
                    go_port("443-https", 443, string_target("https"), 0),
                ],
                selector: string_map(&[("app", "x")]),
                r#type: s("LoadBalancer"),
                ..go_service_spec()
            }),
            status: Some(core::ServiceStatus {
                load_balancer: Some(core::LoadBalancerStatus::default()),
                conditions: vec![],
            }),
        };
        let decoded = decode_body(&envelope("v1", "Service", &svc)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "x", "labels": {"app": "x"}},
                "spec": {
                    "ports": [
                        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                        {"name": "443-https", "protocol": "TCP", "port": 443, "targetPort": "https"}
                    ],
                    "selector": {"app": "x"},
                    "type": "LoadBalancer"
                },
                "status": {"loadBalancer": {}}
            })
        );
    }

    #[test]
    fn service_with_every_field() {
        let svc = core::Service {
            metadata: Some(meta::ObjectMeta {
                namespace: s("default"),
                annotations: string_map(&[(
                    "k8s.cloudscale.ch/loadbalancer-flavor",
                    "lb-standard",
                )]),
                ..go_meta("web")
            }),
            spec: Some(core::ServiceSpec {
                ports: vec![
                    core::ServicePort {
                        app_protocol: s("http"),
                        ..go_port("http", 80, int_target(8080), 30080)
                    },
                    // Unset targetPort (Go writes type 0, intVal 0): left out.
                    go_port("", 81, int_target(0), 0),
                    core::ServicePort {
                        port: Some(82),
                        ..Default::default()
                    },
                ],
                selector: string_map(&[("app", "web")]),
                cluster_ip: s("10.0.0.10"),
                cluster_ips: strings(&["10.0.0.10", "fd00::10"]),
                r#type: s("LoadBalancer"),
                external_ips: strings(&["192.0.2.1"]),
                session_affinity: s("ClientIP"),
                load_balancer_ip: s("198.51.100.7"),
                load_balancer_source_ranges: strings(&["10.0.0.0/8"]),
                external_name: s(""),
                external_traffic_policy: s("Local"),
                health_check_node_port: Some(32000),
                publish_not_ready_addresses: Some(true),
                session_affinity_config: Some(core::SessionAffinityConfig {
                    client_ip: Some(core::ClientIpConfig {
                        timeout_seconds: Some(10800),
                    }),
                }),
                ip_families: strings(&["IPv4", "IPv6"]),
                ip_family_policy: s("PreferDualStack"),
                allocate_load_balancer_node_ports: Some(false),
                load_balancer_class: s("cloudscale"),
                internal_traffic_policy: s("Cluster"),
                traffic_distribution: s("PreferClose"),
            }),
            status: Some(core::ServiceStatus {
                load_balancer: Some(core::LoadBalancerStatus {
                    ingress: vec![
                        core::LoadBalancerIngress {
                            ip: s("198.51.100.7"),
                            hostname: s(""),
                            ip_mode: s("VIP"),
                            ports: vec![core::PortStatus {
                                port: Some(80),
                                protocol: s("TCP"),
                                error: None,
                            }],
                        },
                        core::LoadBalancerIngress {
                            hostname: s("lb.example.com"),
                            ..Default::default()
                        },
                    ],
                }),
                conditions: vec![meta::Condition {
                    r#type: s("Ready"),
                    status: s("True"),
                    observed_generation: Some(2),
                    last_transition_time: Some(meta::Time {
                        seconds: Some(1_700_000_000),
                        nanos: Some(0),
                    }),
                    reason: s("Provisioned"),
                    message: s(""),
                }],
            }),
        };
        let decoded = decode_body(&envelope("v1", "Service", &svc)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "web",
                    "namespace": "default",
                    "annotations": {"k8s.cloudscale.ch/loadbalancer-flavor": "lb-standard"}
                },
                "spec": {
                    "ports": [
                        {
                            "name": "http",
                            "protocol": "TCP",
                            "appProtocol": "http",
                            "port": 80,
                            "targetPort": 8080,
                            "nodePort": 30080
                        },
                        {"protocol": "TCP", "port": 81},
                        {"port": 82}
                    ],
                    "selector": {"app": "web"},
                    "clusterIP": "10.0.0.10",
                    "clusterIPs": ["10.0.0.10", "fd00::10"],
                    "type": "LoadBalancer",
                    "externalIPs": ["192.0.2.1"],
                    "sessionAffinity": "ClientIP",
                    "loadBalancerIP": "198.51.100.7",
                    "loadBalancerSourceRanges": ["10.0.0.0/8"],
                    "externalTrafficPolicy": "Local",
                    "healthCheckNodePort": 32000,
                    "publishNotReadyAddresses": true,
                    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                    "ipFamilies": ["IPv4", "IPv6"],
                    "ipFamilyPolicy": "PreferDualStack",
                    "allocateLoadBalancerNodePorts": false,
                    "loadBalancerClass": "cloudscale",
                    "internalTrafficPolicy": "Cluster",
                    "trafficDistribution": "PreferClose"
                },
                "status": {
                    "loadBalancer": {
                        "ingress": [
                            {
                                "ip": "198.51.100.7",
                                "ipMode": "VIP",
                                "ports": [{"port": 80, "protocol": "TCP"}]
                            },
                            {"hostname": "lb.example.com"}
                        ]
                    },
                    "conditions": [{
                        "type": "Ready",
                        "status": "True",
                        "observedGeneration": 2,
                        "lastTransitionTime": "2023-11-14T22:13:20Z",
                        "reason": "Provisioned",
                        "message": ""
                    }]
                }
            })
        );
    }

    #[test]
    fn config_map_with_binary_data() {
        let cm = core::ConfigMap {
            metadata: Some(meta::ObjectMeta {
                namespace: s("kube-system"),
                ..go_meta("cm")
            }),
            immutable: Some(true),
            data: string_map(&[("a", "b"), ("empty", "")]),
            binary_data: [
                ("bin".to_string(), vec![0u8, 1, 2, 0xfe, 0xff]),
                ("none".to_string(), vec![]),
            ]
            .into_iter()
            .collect(),
        };
        let decoded = decode_body(&envelope("v1", "ConfigMap", &cm)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm", "namespace": "kube-system"},
                "immutable": true,
                "data": {"a": "b", "empty": ""},
                "binaryData": {"bin": "AAEC/v8=", "none": ""}
            })
        );
    }

    #[test]
    fn config_map_without_data() {
        let cm = core::ConfigMap {
            metadata: Some(go_meta("empty")),
            ..Default::default()
        };
        let decoded = decode_body(&envelope("v1", "ConfigMap", &cm)).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "empty"}})
        );
    }

    #[test]
    fn secret_bytes_become_base64() {
        let secret = core::Secret {
            metadata: Some(go_meta("sec")),
            immutable: None,
            data: [
                ("a".to_string(), b"b".to_vec()),
                ("password".to_string(), b"s3cr3t!!".to_vec()),
            ]
            .into_iter()
            .collect(),
            string_data: string_map(&[("plain", "text")]),
            r#type: s("Opaque"),
        };
        let decoded = decode_body(&envelope("v1", "Secret", &secret)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "sec"},
                "data": {"a": "Yg==", "password": "czNjcjN0ISE="},
                "stringData": {"plain": "text"},
                "type": "Opaque"
            })
        );
    }

    #[test]
    fn secret_with_empty_type_leaves_it_out() {
        let secret = core::Secret {
            metadata: Some(go_meta("sec")),
            r#type: s(""),
            ..Default::default()
        };
        let decoded = decode_body(&envelope("v1", "Secret", &secret)).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"}})
        );
    }

    #[test]
    fn service_account_keeps_explicit_false() {
        let sa = core::ServiceAccount {
            metadata: Some(go_meta("sa")),
            secrets: vec![core::ObjectReference {
                kind: s("Secret"),
                namespace: s(""),
                name: s("sa-token"),
                uid: s(""),
                api_version: s("v1"),
                resource_version: s(""),
                field_path: s(""),
            }],
            image_pull_secrets: vec![core::LocalObjectReference { name: s("regcred") }],
            automount_service_account_token: Some(false),
        };
        let decoded = decode_body(&envelope("v1", "ServiceAccount", &sa)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "sa"},
                "secrets": [{"kind": "Secret", "name": "sa-token", "apiVersion": "v1"}],
                "imagePullSecrets": [{"name": "regcred"}],
                "automountServiceAccountToken": false
            })
        );
        let plain = core::ServiceAccount {
            metadata: Some(go_meta("sa")),
            ..Default::default()
        };
        let decoded = decode_body(&envelope("v1", "ServiceAccount", &plain)).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})
        );
    }

    #[test]
    fn delete_options() {
        let options = meta::DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(meta::Preconditions {
                uid: s("u-1"),
                resource_version: None,
            }),
            orphan_dependents: None,
            propagation_policy: s("Foreground"),
            dry_run: strings(&["All"]),
            ignore_store_read_error_with_cluster_breaking_potential: None,
        };
        let decoded = decode_body(&envelope("meta.k8s.io/v1", "DeleteOptions", &options)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "meta.k8s.io/v1",
                "kind": "DeleteOptions",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "u-1"},
                "propagationPolicy": "Foreground",
                "dryRun": ["All"]
            })
        );
        let decoded = decode_body(&envelope(
            "v1",
            "DeleteOptions",
            &meta::DeleteOptions::default(),
        ))
        .unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "DeleteOptions"})
        );
    }

    #[test]
    fn token_request() {
        let request = authn::TokenRequest {
            metadata: Some(go_meta("")),
            spec: Some(authn::TokenRequestSpec {
                audiences: strings(&["aud"]),
                expiration_seconds: Some(3600),
                bound_object_ref: Some(authn::BoundObjectReference {
                    kind: s("Pod"),
                    api_version: s("v1"),
                    name: s("p1"),
                    u_id: s("u-1"),
                }),
            }),
            status: Some(authn::TokenRequestStatus {
                token: s(""),
                expiration_timestamp: Some(meta::Time::default()),
            }),
        };
        let decoded = decode_body(&envelope(
            "authentication.k8s.io/v1",
            "TokenRequest",
            &request,
        ))
        .unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "metadata": {},
                "spec": {
                    "audiences": ["aud"],
                    "expirationSeconds": 3600,
                    "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p1", "uid": "u-1"}
                },
                "status": {"token": ""}
            })
        );
    }

    #[test]
    fn json_content_type_is_passed_through() {
        let raw = br#"{"metadata":{"name":"j"},"data":{"k":"v"}}"#.to_vec();
        let body = envelope_raw("v1", "ConfigMap", raw, "application/json");
        assert_eq!(
            decode_body(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "data": {"k": "v"}})
        );
        let body = envelope_raw("v1", "ConfigMap", b"[1]".to_vec(), "application/json");
        assert!(matches!(
            decode_body(&body),
            Err(ProtobufError::InvalidValue { .. })
        ));
        let body = envelope_raw("v1", "ConfigMap", b"{".to_vec(), "application/json");
        assert!(matches!(
            decode_body(&body),
            Err(ProtobufError::InvalidValue { .. })
        ));
    }

    #[test]
    fn protobuf_content_type_in_envelope_is_accepted() {
        let cm = core::ConfigMap {
            metadata: Some(go_meta("cm")),
            ..Default::default()
        };
        let body = envelope_raw("v1", "ConfigMap", cm.encode_to_vec(), CONTENT_TYPE);
        assert_eq!(decode_body(&body).unwrap()["metadata"]["name"], json!("cm"));
    }

    #[test]
    fn wrong_magic_is_an_error() {
        assert_eq!(decode_body(b""), Err(ProtobufError::BadMagic));
        assert_eq!(decode_body(b"k8s"), Err(ProtobufError::BadMagic));
        assert_eq!(
            decode_body(br#"{"kind":"Namespace"}"#),
            Err(ProtobufError::BadMagic)
        );
        let mut body = envelope("v1", "Namespace", &core::Namespace::default());
        body[3] = b'!';
        assert_eq!(decode_body(&body), Err(ProtobufError::BadMagic));
    }

    #[test]
    fn unknown_kind_is_an_error() {
        let err = decode_body(&envelope(
            "apps/v1",
            "StatefulSet",
            &core::Namespace::default(),
        ))
        .unwrap_err();
        assert_eq!(
            err,
            ProtobufError::UnknownKind {
                api_version: "apps/v1".into(),
                kind: "StatefulSet".into()
            }
        );
        assert!(err.to_string().contains("unknown kind \"StatefulSet\""));
        // The kind alone is not enough: the group must match too.
        assert!(matches!(
            decode_body(&envelope(
                "example.com/v1",
                "Service",
                &core::Service::default()
            )),
            Err(ProtobufError::UnknownKind { .. })
        ));
    }

    #[test]
    fn envelope_problems_are_errors() {
        assert_eq!(decode_body(&MAGIC), Err(ProtobufError::MissingTypeMeta));
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: s("v1"),
                kind: s(""),
            }),
            ..Default::default()
        };
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        assert_eq!(decode_body(&body), Err(ProtobufError::MissingTypeMeta));

        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: s("v1"),
                kind: s("Namespace"),
            }),
            content_encoding: s("gzip"),
            ..Default::default()
        };
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        assert_eq!(
            decode_body(&body),
            Err(ProtobufError::UnsupportedEncoding("gzip".into()))
        );

        let body = envelope_raw("v1", "Namespace", vec![], "application/yaml");
        assert_eq!(
            decode_body(&body),
            Err(ProtobufError::UnsupportedContentType(
                "application/yaml".into()
            ))
        );
    }

    #[test]
    fn garbage_is_an_error() {
        let mut body = MAGIC.to_vec();
        body.extend([
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ]);
        let err = decode_body(&body).unwrap_err();
        assert!(matches!(err, ProtobufError::Malformed { .. }), "{err}");
        assert!(err.to_string().starts_with("malformed protobuf"));

        // A valid envelope whose raw object is not a Service.
        let body = envelope_raw("v1", "Service", vec![0x0a, 0x05, 0x01], "");
        assert!(matches!(
            decode_body(&body),
            Err(ProtobufError::Malformed {
                context: "v1 Service",
                ..
            })
        ));
    }

    #[test]
    fn out_of_range_timestamp_is_an_error() {
        let ns = core::Namespace {
            metadata: Some(meta::ObjectMeta {
                creation_timestamp: Some(meta::Time {
                    seconds: Some(i64::MAX),
                    nanos: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(matches!(
            decode_body(&envelope("v1", "Namespace", &ns)),
            Err(ProtobufError::InvalidValue { .. })
        ));
        let ns = core::Namespace {
            metadata: Some(meta::ObjectMeta {
                creation_timestamp: Some(meta::Time {
                    seconds: Some(400_000_000_000),
                    nanos: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(matches!(
            decode_body(&envelope("v1", "Namespace", &ns)),
            Err(ProtobufError::InvalidValue { .. })
        ));
    }

    #[test]
    fn truncated_bodies_never_panic() {
        let svc = core::Service {
            metadata: Some(go_meta("x")),
            spec: Some(core::ServiceSpec {
                ports: vec![go_port("p", 80, int_target(8080), 0)],
                ..go_service_spec()
            }),
            status: Some(core::ServiceStatus::default()),
        };
        let body = envelope("v1", "Service", &svc);
        let mut errors = 0;
        for len in 0..body.len() {
            if decode_body(&body[..len]).is_err() {
                errors += 1;
            }
        }
        // Every cut breaks a length prefix, except the ones on field boundaries: right after
        // typeMeta (an empty Service), and the two that only drop the trailing empty
        // contentEncoding / contentType fields.
        assert_eq!(errors, body.len() - 3);
        assert!(decode_body(&body).is_ok());
    }

    #[test]
    fn random_bytes_never_panic() {
        // A small xorshift generator: deterministic, no extra crates.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let valid = envelope(
            "v1",
            "Secret",
            &core::Secret {
                metadata: Some(go_meta("s")),
                data: [("k".to_string(), b"v".to_vec())].into_iter().collect(),
                ..Default::default()
            },
        );
        for round in 0..20_000 {
            let mut body = if round % 2 == 0 {
                let len = (next() % 64) as usize;
                let mut body = MAGIC.to_vec();
                body.extend((0..len).map(|_| next() as u8));
                body
            } else {
                valid.clone()
            };
            // Flip a few bytes after the magic.
            for _ in 0..3 {
                let idx = 4 + (next() as usize) % (body.len() - 4).max(1);
                if idx < body.len() {
                    body[idx] = next() as u8;
                }
            }
            let _ = decode_body(&body);
        }
    }

    #[test]
    fn base64_matches_rfc4648() {
        let cases: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in cases {
            assert_eq!(base64(input), expected);
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/");
    }

    #[test]
    fn content_type_detection() {
        assert!(is_protobuf_content_type(
            "application/vnd.kubernetes.protobuf"
        ));
        assert!(is_protobuf_content_type(
            "application/vnd.kubernetes.protobuf; charset=utf-8"
        ));
        assert!(is_protobuf_content_type(
            "Application/VND.Kubernetes.Protobuf"
        ));
        assert!(!is_protobuf_content_type("application/json"));
        assert!(!is_protobuf_content_type(
            "application/vnd.kubernetes.protobuf-x"
        ));
        assert!(!is_protobuf_content_type(""));
    }
}
