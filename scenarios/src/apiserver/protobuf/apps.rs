//! `apps/v1` Deployment protobuf bodies: what `kubectl create deployment` sends from 1.32 on
//! (`--image` (one or more), `--port`, `--replicas`, `-- COMMAND`). The pod template is
//! decoded for the fields such generated objects and simple manifests carry; a body that sets
//! any other pod or container field is refused with the field's name rather than stored
//! without it.

use super::{Obj, ProtobufError, core, int_or_string, meta, object_meta};
use k8s_pb::api::apps::v1 as apps;
use serde_json::{Map, Value};

/// Refuses what is not decoded (a field left out must not vanish silently).
pub(super) fn not_decoded(field: &'static str) -> ProtobufError {
    ProtobufError::InvalidValue {
        field,
        message: "not decoded from protobuf by this server; send the object as JSON".into(),
    }
}

pub(super) fn deployment(d: &apps::Deployment) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&d.metadata)?);
    let mut spec = Obj::new();
    if let Some(s) = &d.spec {
        spec.int_ptr("replicas", s.replicas);
        if let Some(sel) = &s.selector {
            spec.set("selector", label_selector(sel));
        }
        spec.set("template", pod_template(&s.template)?);
        let mut strategy = Obj::new();
        if let Some(st) = &s.strategy {
            strategy.string("type", &st.r#type);
            if let Some(ru) = &st.rolling_update {
                let mut r = Obj::new();
                if let Some(v) = &ru.max_unavailable {
                    r.set("maxUnavailable", int_or_string(v));
                }
                if let Some(v) = &ru.max_surge {
                    r.set("maxSurge", int_or_string(v));
                }
                strategy.set("rollingUpdate", r.done());
            }
        }
        spec.set("strategy", strategy.done())
            .int("minReadySeconds", s.min_ready_seconds)
            .int_ptr("revisionHistoryLimit", s.revision_history_limit)
            .bool("paused", s.paused)
            .int_ptr("progressDeadlineSeconds", s.progress_deadline_seconds);
    } else {
        spec.set("template", pod_template(&None)?)
            .set("strategy", Obj::new().done());
    }
    o.set("spec", spec.done());
    // Status is the server's: a client's is dropped on create anyway.
    o.set("status", Obj::new().done());
    Ok(o.0)
}

pub(super) fn label_selector(s: &meta::LabelSelector) -> Value {
    let mut o = Obj::new();
    o.map("matchLabels", &s.match_labels);
    let expressions = s
        .match_expressions
        .iter()
        .map(|e| {
            let mut r = Obj::new();
            r.string_req("key", &e.key)
                .string_req("operator", &e.operator)
                .strings("values", &e.values);
            r.done()
        })
        .collect();
    o.list("matchExpressions", expressions);
    o.done()
}

pub(super) fn pod_template(t: &Option<core::PodTemplateSpec>) -> Result<Value, ProtobufError> {
    let mut o = Obj::new();
    let (metadata, spec) = match t {
        Some(t) => (&t.metadata, t.spec.clone().unwrap_or_default()),
        None => (&None, core::PodSpec::default()),
    };
    o.set("metadata", object_meta(metadata)?);
    o.set("spec", pod_spec(&spec)?);
    Ok(o.done())
}

/// Go's protobuf writes value (non-pointer) fields even when zero: `""` and `false` there
/// mean unset.
fn unset_zero_string(v: &mut Option<String>) {
    if v.as_deref() == Some("") {
        *v = None;
    }
}

fn unset_false(v: &mut Option<bool>) {
    if *v == Some(false) {
        *v = None;
    }
}

fn pod_spec(s: &core::PodSpec) -> Result<Value, ProtobufError> {
    let mut rest = s.clone();
    for v in [
        &mut rest.service_account,
        &mut rest.node_name,
        &mut rest.hostname,
        &mut rest.subdomain,
        &mut rest.priority_class_name,
    ] {
        unset_zero_string(v);
    }
    for v in [&mut rest.host_pid, &mut rest.host_ipc] {
        unset_false(v);
    }
    rest.containers.clear();
    rest.restart_policy = None;
    rest.termination_grace_period_seconds = None;
    rest.dns_policy = None;
    rest.node_selector.clear();
    rest.service_account_name = None;
    rest.host_network = None;
    rest.scheduler_name = None;
    // An empty security context is what Go's defaulting leaves: `{}`.
    let security_context = rest.security_context.take();
    if security_context
        .as_ref()
        .is_some_and(|c| *c != core::PodSecurityContext::default())
    {
        return Err(not_decoded("spec.template.spec.securityContext"));
    }
    if rest != core::PodSpec::default() {
        return Err(not_decoded("spec.template.spec"));
    }
    let containers = s
        .containers
        .iter()
        .map(container)
        .collect::<Result<Vec<_>, _>>()?;
    let mut o = Obj::new();
    // `containers` has no omitempty: Go writes `null` for none, which JSON clients leave out.
    o.list("containers", containers)
        .string("restartPolicy", &s.restart_policy)
        .int_ptr(
            "terminationGracePeriodSeconds",
            s.termination_grace_period_seconds,
        )
        .string("dnsPolicy", &s.dns_policy)
        .map("nodeSelector", &s.node_selector)
        .string("serviceAccountName", &s.service_account_name)
        .bool("hostNetwork", s.host_network);
    if security_context.is_some() {
        o.set("securityContext", Obj::new().done());
    }
    o.string("schedulerName", &s.scheduler_name);
    Ok(o.done())
}

fn container(c: &core::Container) -> Result<Value, ProtobufError> {
    let mut rest = c.clone();
    rest.name = None;
    rest.image = None;
    rest.command.clear();
    rest.args.clear();
    rest.working_dir = None;
    rest.ports.clear();
    rest.env.clear();
    rest.resources = None;
    rest.termination_message_path = None;
    rest.termination_message_policy = None;
    rest.image_pull_policy = None;
    for v in [&mut rest.stdin, &mut rest.stdin_once, &mut rest.tty] {
        unset_false(v);
    }
    if rest != core::Container::default() {
        return Err(not_decoded("spec.template.spec.containers"));
    }
    let ports = c
        .ports
        .iter()
        .map(|p| {
            let mut o = Obj::new();
            o.string("name", &p.name)
                .int("hostPort", p.host_port)
                .int_req("containerPort", p.container_port)
                .string("protocol", &p.protocol)
                .string("hostIP", &p.host_ip);
            o.done()
        })
        .collect();
    let env = c
        .env
        .iter()
        .map(|e| {
            if e.value_from.is_some() {
                return Err(not_decoded("spec.template.spec.containers.env.valueFrom"));
            }
            let mut o = Obj::new();
            o.string_req("name", &e.name).string("value", &e.value);
            Ok(o.done())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut o = Obj::new();
    o.string_req("name", &c.name)
        .string("image", &c.image)
        .strings("command", &c.command)
        .strings("args", &c.args)
        .string("workingDir", &c.working_dir)
        .list("ports", ports)
        .list("env", env)
        .set("resources", resources(&c.resources)?)
        .string("terminationMessagePath", &c.termination_message_path)
        .string("terminationMessagePolicy", &c.termination_message_policy)
        .string("imagePullPolicy", &c.image_pull_policy);
    Ok(o.done())
}

fn resources(r: &Option<core::ResourceRequirements>) -> Result<Value, ProtobufError> {
    let mut o = Obj::new();
    let Some(r) = r else {
        return Ok(o.done());
    };
    if !r.claims.is_empty() {
        return Err(not_decoded(
            "spec.template.spec.containers.resources.claims",
        ));
    }
    let quantities = |m: &std::collections::BTreeMap<String, _>| {
        m.iter()
            .map(
                |(k, q): (&String, &k8s_pb::apimachinery::pkg::api::resource::Quantity)| {
                    (k.clone(), q.string.clone().unwrap_or_default())
                },
            )
            .collect::<std::collections::BTreeMap<String, String>>()
    };
    o.map("limits", &quantities(&r.limits))
        .map("requests", &quantities(&r.requests));
    Ok(o.done())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use serde_json::json;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    /// The object `kubectl create deployment web --image=nginx --port=80 --replicas=2`
    /// builds.
    fn as_kubectl_creates_it() -> apps::Deployment {
        let labels: std::collections::BTreeMap<String, String> =
            [("app".to_string(), "web".to_string())].into();
        apps::Deployment {
            metadata: Some(meta::ObjectMeta {
                name: s("web"),
                labels: labels.clone(),
                ..Default::default()
            }),
            spec: Some(apps::DeploymentSpec {
                replicas: Some(2),
                selector: Some(meta::LabelSelector {
                    match_labels: labels.clone(),
                    ..Default::default()
                }),
                template: Some(core::PodTemplateSpec {
                    metadata: Some(meta::ObjectMeta {
                        labels,
                        ..Default::default()
                    }),
                    spec: Some(core::PodSpec {
                        containers: vec![core::Container {
                            name: s("nginx"),
                            image: s("nginx"),
                            ports: vec![core::ContainerPort {
                                container_port: Some(80),
                                ..Default::default()
                            }],
                            resources: Some(core::ResourceRequirements::default()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                }),
                strategy: Some(apps::DeploymentStrategy::default()),
                ..Default::default()
            }),
            status: Some(apps::DeploymentStatus::default()),
        }
    }

    #[test]
    fn a_kubectl_deployment_decodes_to_its_json() {
        let raw = as_kubectl_creates_it().encode_to_vec();
        let d = apps::Deployment::decode(raw.as_slice()).expect("decodes");
        let v = Value::Object(deployment(&d).expect("converts"));
        assert_eq!(
            v,
            json!({
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "nginx", "image": "nginx",
                            "ports": [{"containerPort": 80}], "resources": {}}]}},
                    "strategy": {}},
                "status": {},
            })
        );
    }

    #[test]
    fn a_field_not_decoded_is_refused_not_dropped() {
        let mut d = as_kubectl_creates_it();
        if let Some(spec) = d
            .spec
            .as_mut()
            .and_then(|s| s.template.as_mut())
            .and_then(|t| t.spec.as_mut())
        {
            spec.hostname = s("pinned");
        }
        let err = deployment(&d).expect_err("refused");
        assert!(err.to_string().contains("spec.template.spec"), "{err}");
    }
}
