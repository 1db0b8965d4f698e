//! Real request bodies captured from kubectl: the protobuf body kubectl 1.33 sends must decode
//! to the JSON body kubectl 1.31 sends for the same command, minus its `null`s.
//!
//! Fixtures in `tests/fixtures/protobuf/`: `<command>.kubectl-1.33.pb` and
//! `<command>.kubectl-1.31.json`, captured with a logging stub server (kubectl 1.32 sends
//! byte-identical protobuf bodies).

use std::path::PathBuf;

use scenarios::apiserver::{ProtobufError, decode_body};
use serde_json::{Value, json};

const COMMANDS: &[&str] = &[
    "create-namespace-save-config",
    "create-service-loadbalancer",
    "create-service-nodeport",
    "create-service-clusterip-headless",
    "create-service-externalname",
    "create-configmap-from-file",
    "create-secret-generic",
    "create-secret-docker-registry",
    "create-serviceaccount",
    "create-token",
    "create-deployment",
];

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/protobuf")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn decode_fixture(command: &str) -> Value {
    let body = fixture(&format!("{command}.kubectl-1.33.pb"));
    decode_body(&body).unwrap_or_else(|e| panic!("{command}: {e}"))
}

/// Go's JSON writes `null` for unset pointers and zero times; the decoder leaves them out.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

#[test]
fn kubectl_protobuf_bodies_decode_to_the_json_bodies() {
    for command in COMMANDS {
        let decoded = decode_fixture(command);
        let json: Value =
            serde_json::from_slice(&fixture(&format!("{command}.kubectl-1.31.json"))).unwrap();
        assert_eq!(decoded, strip_nulls(json), "{command}");
    }
}

#[test]
fn kubectl_service_body_decodes_to_the_expected_object() {
    assert_eq!(
        decode_fixture("create-service-loadbalancer"),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "lb2", "labels": {"app": "lb2"}},
            "spec": {
                "ports": [
                    {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                    {"name": "443-8443", "protocol": "TCP", "port": 443, "targetPort": 8443}
                ],
                "selector": {"app": "lb2"},
                "type": "LoadBalancer"
            },
            "status": {"loadBalancer": {}}
        })
    );
    assert_eq!(
        decode_fixture("create-service-nodeport")["spec"]["ports"],
        json!([{
            "name": "80-http",
            "protocol": "TCP",
            "port": 80,
            "targetPort": "http",
            "nodePort": 30080
        }])
    );
}

#[test]
fn kubectl_secret_body_decodes_to_base64_data() {
    assert_eq!(
        decode_fixture("create-secret-generic"),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sec"},
            "data": {"a": "Yg=="}
        })
    );
}

#[test]
fn decoded_bodies_deserialize_into_typed_objects() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};

    for command in COMMANDS {
        let decoded = decode_fixture(command);
        let result = match decoded["kind"].as_str().unwrap() {
            "Namespace" => serde_json::from_value::<Namespace>(decoded).map(drop),
            "Service" => serde_json::from_value::<Service>(decoded).map(drop),
            "ConfigMap" => serde_json::from_value::<ConfigMap>(decoded).map(drop),
            "Secret" => serde_json::from_value::<Secret>(decoded).map(drop),
            "ServiceAccount" => serde_json::from_value::<ServiceAccount>(decoded).map(drop),
            "TokenRequest" => serde_json::from_value::<TokenRequest>(decoded).map(drop),
            "Deployment" => serde_json::from_value::<Deployment>(decoded).map(drop),
            other => panic!("unexpected kind {other}"),
        };
        result.unwrap_or_else(|e| panic!("{command}: {e}"));
    }
}

#[test]
fn damaged_kubectl_bodies_are_errors_not_panics() {
    let body = fixture("create-service-loadbalancer.kubectl-1.33.pb");
    // Protobuf cannot tell a cut on a field boundary from a shorter message: cutting right
    // after typeMeta gives an empty Service, cutting off the trailing empty contentEncoding /
    // contentType changes nothing. Every other cut breaks a length prefix.
    let full = decode_body(&body).unwrap();
    let mut accepted = Vec::new();
    for len in 0..body.len() {
        if let Ok(value) = decode_body(&body[..len]) {
            accepted.push(len);
            assert!(
                value == full || value["metadata"] == json!({}),
                "{len}: {value}"
            );
        }
    }
    assert_eq!(accepted.len(), 3, "accepted prefixes: {accepted:?}");
    for idx in 0..body.len() {
        for byte in [0x00, 0x7f, 0x80, 0xff] {
            let mut damaged = body.clone();
            damaged[idx] = byte;
            let _ = decode_body(&damaged);
        }
    }
    let mut wrong_magic = body.clone();
    wrong_magic[0] = b'K';
    assert_eq!(decode_body(&wrong_magic), Err(ProtobufError::BadMagic));
}
