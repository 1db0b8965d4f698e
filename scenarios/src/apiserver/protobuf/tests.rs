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
    let decoded = decode_body(&envelope("v1", "Namespace", &core::Namespace::default())).unwrap();
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
            annotations: string_map(&[("k8s.cloudscale.ch/loadbalancer-flavor", "lb-standard")]),
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
