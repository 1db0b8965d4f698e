use super::v3::{collect_refs, gv_path};
use super::*;
use std::collections::BTreeSet;

#[test]
fn gvk_extension_is_block_yaml() {
    let ext = json!([gvk("", "v1", "Service")]);
    assert_eq!(
        yaml(&ext),
        "- group: \"\"\n  kind: Service\n  version: v1\n"
    );
    assert_eq!(yaml(&json!(["port", "protocol"])), "- port\n- protocol\n");
    assert_eq!(yaml(&json!("merge")), "merge\n");
    assert_eq!(yaml(&json!(true)), "true\n");
}

#[test]
fn the_workload_kinds_status_conditions_carry_their_markers() {
    let defs = &v2_json()["definitions"];
    for (definition, list_type) in [
        ("io.k8s.api.apps.v1.DaemonSetStatus", "map"),
        ("io.k8s.api.batch.v1.JobStatus", "atomic"),
        ("io.k8s.api.core.v1.ReplicationControllerStatus", "map"),
        (
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus",
            "map",
        ),
    ] {
        let conditions = &defs[definition]["properties"]["conditions"];
        assert_eq!(
            conditions["x-kubernetes-list-type"], list_type,
            "{definition}"
        );
        assert_eq!(
            conditions["x-kubernetes-patch-merge-key"], "type",
            "{definition}"
        );
        assert_eq!(
            conditions["x-kubernetes-patch-strategy"], "merge",
            "{definition}"
        );
    }
    assert_eq!(
        defs["io.k8s.api.batch.v1.CronJobStatus"]["properties"]["active"]["x-kubernetes-list-type"],
        "atomic"
    );
    assert_eq!(
        defs["io.k8s.api.core.v1.ReplicationControllerSpec"]["properties"]["selector"]["x-kubernetes-map-type"],
        "atomic"
    );
}

#[test]
fn every_served_kind_has_a_definition_with_its_gvk() {
    let defs = &v2_json()["definitions"];
    for r in RESOURCES {
        let found = defs.as_object().expect("definitions").values().any(|d| {
            d["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|a| a.contains(&gvk(r.group, r.version, r.kind)))
        });
        assert!(found, "{}/{} {}", r.group, r.version, r.kind);
    }
}

#[test]
fn references_resolve() {
    let doc = v2_json();
    let mut refs = BTreeSet::new();
    collect_refs(doc, V2_REF, &mut refs);
    for r in refs {
        assert!(doc["definitions"].get(&r).is_some(), "{r}");
    }
    for (g, v) in group_versions() {
        let doc = v3_document(&gv_path(g, v)).expect("v3 document");
        let mut refs = BTreeSet::new();
        collect_refs(doc, V3_REF, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            assert!(doc["components"]["schemas"].get(&r).is_some(), "{r}");
        }
    }
}

#[test]
fn protobuf_round_trips_the_definitions() {
    let decoded = gnostic::Document::decode(v2_protobuf()).expect("decode");
    assert_eq!(decoded.swagger, "2.0");
    let defs = decoded
        .definitions
        .expect("definitions")
        .additional_properties;
    let svc = defs
        .iter()
        .find(|d| d.name == "io.k8s.api.core.v1.Service")
        .and_then(|d| d.value.as_ref())
        .expect("Service");
    let ext = &svc.vendor_extension[0];
    assert_eq!(ext.name, "x-kubernetes-group-version-kind");
    assert_eq!(
        ext.value.as_ref().map(|a| a.yaml.as_str()),
        Some("- group: \"\"\n  kind: Service\n  version: v1\n")
    );
}

#[test]
fn service_ports_carry_patch_metadata() {
    let ports = &v2_json()["definitions"]["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "port");
    assert_eq!(ports["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["port", "protocol"])
    );
    let containers =
        &v2_json()["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
}

#[test]
fn v3_documents_advertise_field_validation_on_patch() {
    let doc = v3_document("api/v1").expect("api/v1");
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "Service", "version": "v1"})
    );
    assert!(
        patch["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );
    let discovery = v3_discovery();
    let url = discovery["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"]
        .as_str()
        .expect("url");
    assert!(url.starts_with("/openapi/v3/apis/coordination.k8s.io/v1?hash="));
    assert!(v3_document(url).is_some());
    assert!(v3_document("apis/nope/v1").is_none());
}
