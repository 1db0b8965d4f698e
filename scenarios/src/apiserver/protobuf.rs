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
mod tests;
