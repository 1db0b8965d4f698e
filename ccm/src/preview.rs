//! `cloudscale-cloud-controller-manager plan --service [NAMESPACE/]NAME [-f proposed.yaml]`:
//! prints the actions and impact class the CCM would apply, writing nothing anywhere.

use crate::app::Environment;
use crate::cloudscale::{self, Client, ClientConfig};
use crate::options::{self, PlanArgs};
use crate::secret::TokenSource;
use crate::service::reconcile::controller;
use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error("--service must be NAMESPACE/NAME or NAME, got \"{0}\"")]
    ServiceName(String),
    #[error("cannot read {path}: {reason}")]
    File { path: String, reason: String },
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Plan(#[from] crate::service::reconcile::error::ServiceError),
    #[error("Kubernetes API: {}", crate::kube_text::KubeText(.0))]
    Kube(#[from] kube::Error),
}

/// Runs the preview and returns the text to print.
/// `--service` as (namespace, name): `NAME` alone is in `default_namespace`.
pub fn service_name<'a>(
    arg: &'a str,
    default_namespace: &'a str,
) -> Result<(&'a str, &'a str), PreviewError> {
    let bad = || PreviewError::ServiceName(arg.to_string());
    match arg.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns, name))
        }
        Some(_) => Err(bad()),
        None if !arg.trim().is_empty() => Ok((default_namespace, arg)),
        None => Err(bad()),
    }
}

/// Runs the preview and returns the text to print.
pub async fn run(args: PlanArgs, env: Environment) -> Result<String, PreviewError> {
    // The form is checked before anything is read.
    service_name(&args.service, "default")?;
    let token = TokenSource::from_env_or_file(args.token_file.as_deref(), env.access_token)
        .map_err(|e| PreviewError::Setup(e.to_string()))?;
    cloudscale::install_crypto_provider();
    let timeout = options::api_timeout(env.api_timeout).map_err(PreviewError::Setup)?;
    let cloud = Client::new(ClientConfig {
        timeout,
        ..ClientConfig::new(options::api_url(env.api_url), Arc::new(token))
    })
    .map_err(|e| PreviewError::Setup(e.to_string()))?;
    let config = match &args.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| PreviewError::File {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(|e| PreviewError::Setup(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| PreviewError::Setup(e.to_string()))?,
    };
    let context_namespace = config.default_namespace.clone();
    let (ns, name) = service_name(&args.service, &context_namespace)?;
    let kube = kube::Client::try_from(config).map_err(|e| PreviewError::Setup(e.to_string()))?;
    let live: Option<Service> = Api::<Service>::namespaced(kube.clone(), ns)
        .get_opt(name)
        .await?;
    let mut notes = Vec::new();
    let svc: Service = match &args.file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| PreviewError::File {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            let mut proposed: Service =
                serde_yaml_ng::from_str(&text).map_err(|e| PreviewError::File {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
            notes.extend(named_otherwise(&proposed, ns, name));
            proposed.metadata.namespace = Some(ns.to_string());
            notes.extend(complete(&mut proposed, live.as_ref()));
            proposed
        }
        None => live
            .clone()
            .ok_or_else(|| PreviewError::Setup(format!("Service {ns}/{name} does not exist")))?,
    };
    let plan = controller::preview(&kube, &cloud, &args.cluster_name, &svc).await?;
    // A proposal that takes a handled Service out of this CCM's hands deletes its load
    // balancer, as the reconcile's cleanup would.
    let leaving = match (&plan, &live) {
        (None, Some(live))
            if args.file.is_some() && crate::service::pure::annotations::is_handled(live) =>
        {
            Some(controller::preview_deletion(&kube, &cloud, &args.cluster_name, live).await?)
        }
        _ => None,
    };
    let mut out = match plan {
        None if leaving.is_some() => {
            deletion_text(ns, name, leaving.as_deref().unwrap_or_default())
        }
        None => format!(
            "Service {ns}/{name} is not handled by this CCM (not type LoadBalancer, or a loadBalancerClass)."
        ),
        Some(p) if p.is_converged() && p.refusals.is_empty() && p.notes.is_empty() => {
            format!("Service {ns}/{name}: no changes.")
        }
        Some(p) => format!(
            "Service {ns}/{name}: impact {}\n{}",
            p.impact(),
            p.describe()
        ),
    };
    for n in notes {
        out.push_str("\nnote: ");
        out.push_str(&n);
    }
    Ok(out)
}

/// A note when the file describes another Service than `--service` names (pure): the
/// preview is of `ns/name` all the same, with the file's spec.
pub fn named_otherwise(proposed: &Service, ns: &str, name: &str) -> Option<String> {
    let file_name = proposed.metadata.name.as_deref().unwrap_or(name);
    let file_ns = proposed.metadata.namespace.as_deref().unwrap_or(ns);
    (file_name != name || file_ns != ns).then(|| {
        format!(
            "the file describes Service {file_ns}/{file_name}; this is the preview of {ns}/{name} (--service) with its spec"
        )
    })
}

/// What a Service leaving this CCM's hands loses (pure): each load balancer deleted with
/// its addresses, and the floating IPs left unassigned.
pub fn deletion_text(
    ns: &str,
    name: &str,
    doomed: &[crate::service::cloud::fetch::Doomed],
) -> String {
    if doomed.is_empty() {
        return format!(
            "Service {ns}/{name} would no longer be handled by this CCM (not type LoadBalancer, or a loadBalancerClass); no load balancer of it is found: nothing is deleted."
        );
    }
    let mut out = format!(
        "Service {ns}/{name}: impact {} (it would no longer be handled by this CCM: not type LoadBalancer, or a loadBalancerClass)",
        crate::service::pure::plan::Impact::Outage
    );
    for lb in doomed {
        let addresses = lb
            .addresses
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!(
            "\n  delete load balancer {} ({}): its addresses {addresses} go, with the Service's ingress",
            lb.name, lb.uuid
        ));
        for f in &lb.floating_ips {
            out.push_str(&format!(
                "\n  floating IP {f} is unassigned (it stays in the account)"
            ));
        }
    }
    out
}

/// Placeholder node ports for what Kubernetes allocates on apply, from the top of its
/// default range down.
const PLACEHOLDER_PORTS: std::ops::RangeInclusive<i32> = 32700..=32767;

/// Completes a proposed Service with what Kubernetes fills in when it stores it, so that
/// any manifest a user can apply can be previewed: the live object's UID and uuid
/// annotation (its identity), node ports of ports named as in the live Service (which
/// kube-apiserver keeps by port name), its health-check node port. What only an allocation
/// can give (a node port of a new port, a UID of a new Service) gets a placeholder, and a
/// note says so.
pub fn complete(proposed: &mut Service, live: Option<&Service>) -> Vec<String> {
    let mut notes = Vec::new();
    match live {
        Some(live) => {
            proposed.metadata.uid = live.metadata.uid.clone();
            let uuid = crate::service::pure::annotations::LOADBALANCER_UUID;
            if let Some(v) = live.metadata.annotations.as_ref().and_then(|a| a.get(uuid)) {
                proposed
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .entry(uuid.to_string())
                    .or_insert_with(|| v.clone());
            }
        }
        None => {
            proposed.metadata.uid = Some("new-service".to_string());
            notes.push(
                "a new Service: its load balancer is named after the UID Kubernetes gives it (shown as new-service)"
                    .to_string(),
            );
        }
    }
    let live_spec = live.and_then(|l| l.spec.as_ref());
    let live_ports = live_spec
        .and_then(|s| s.ports.as_deref())
        .unwrap_or_default();
    let Some(spec) = proposed.spec.as_mut() else {
        return notes;
    };
    let mut placeholders = PLACEHOLDER_PORTS.rev();
    let taken: Vec<i32> = live_ports
        .iter()
        .filter_map(|p| p.node_port)
        .chain(spec.ports.iter().flatten().filter_map(|p| p.node_port))
        .collect();
    let mut next_placeholder = || placeholders.find(|p| !taken.contains(p));
    for (i, p) in spec.ports.iter_mut().flatten().enumerate() {
        if p.node_port.is_some_and(|n| n > 0) {
            continue;
        }
        let kept = live_ports
            .iter()
            .find(|l| l.name == p.name)
            .and_then(|l| l.node_port);
        p.node_port = kept.or_else(|| {
            let n = next_placeholder();
            if let Some(n) = n {
                notes.push(format!(
                    "spec.ports[{i}] ({}) gets its node port from Kubernetes when applied: shown as {n}",
                    p.name.as_deref().unwrap_or("unnamed")
                ));
            }
            n
        });
    }
    if spec.external_traffic_policy.as_deref() == Some("Local")
        && spec.health_check_node_port.is_none_or(|n| n == 0)
    {
        spec.health_check_node_port = live_spec
            .and_then(|s| s.health_check_node_port)
            .filter(|n| *n > 0)
            .or_else(|| {
                let n = next_placeholder();
                if let Some(n) = n {
                    notes.push(format!(
                        "spec.healthCheckNodePort is allocated by Kubernetes when applied: shown as {n}"
                    ));
                }
                n
            });
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn svc(v: serde_json::Value) -> Service {
        serde_json::from_value(v).expect("service")
    }

    #[test]
    fn a_proposal_keeps_the_live_node_ports_by_name_and_placeholds_new_ones() {
        let live = svc(json!({
            "metadata": {"name": "web", "uid": "u1",
                         "annotations": {"k8s.cloudscale.ch/loadbalancer-uuid": "x"}},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                     "healthCheckNodePort": 31000,
                     "ports": [{"name": "http", "port": 80, "nodePort": 30080}]},
        }));
        let mut proposed = svc(json!({
            "metadata": {"name": "web"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                     "ports": [{"name": "http", "port": 8080}, {"name": "alt", "port": 81}]},
        }));
        let notes = complete(&mut proposed, Some(&live));
        let spec = proposed.spec.expect("spec");
        let ports = spec.ports.expect("ports");
        assert_eq!(ports[0].node_port, Some(30080), "kept by name");
        assert_eq!(ports[1].node_port, Some(32767), "a placeholder");
        assert_eq!(spec.health_check_node_port, Some(31000));
        assert_eq!(proposed.metadata.uid.as_deref(), Some("u1"));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("spec.ports[1] (alt)"), "{notes:?}");
    }

    #[test]
    fn a_file_of_another_service_or_namespace_is_noted() {
        let named = |name: &str, ns: Option<&str>| {
            let mut s = svc(serde_json::json!({"metadata": {"name": name}}));
            s.metadata.namespace = ns.map(str::to_string);
            s
        };
        assert_eq!(named_otherwise(&named("web", None), "default", "web"), None);
        assert_eq!(
            named_otherwise(&named("web", Some("default")), "default", "web"),
            None
        );
        let other = named_otherwise(&named("shop", None), "default", "web");
        assert!(
            other
                .as_deref()
                .is_some_and(|n| n.contains("Service default/shop")),
            "{other:?}"
        );
        let ns = named_otherwise(&named("web", Some("prod")), "default", "web");
        assert!(
            ns.as_deref()
                .is_some_and(|n| n.contains("Service prod/web")),
            "{ns:?}"
        );
    }

    #[test]
    fn leaving_without_a_load_balancer_deletes_nothing() {
        let text = deletion_text("default", "web", &[]);
        assert!(text.contains("nothing is deleted"), "{text}");
        assert!(!text.contains("impact"), "{text}");
    }

    #[test]
    fn leaving_names_each_load_balancer_its_addresses_and_floating_ips() {
        let doomed = crate::service::cloud::fetch::Doomed {
            uuid: uuid::Uuid::from_u128(1),
            name: "lb".into(),
            addresses: vec![
                "192.0.2.1".parse().expect("ip"),
                "2001:db8::1".parse().expect("ip"),
            ],
            floating_ips: vec!["198.51.100.7/32".into()],
        };
        let text = deletion_text("default", "web", &[doomed]);
        assert!(
            text.ends_with(
                "\n  delete load balancer lb (00000000-0000-0000-0000-000000000001): its addresses 192.0.2.1, 2001:db8::1 go, with the Service's ingress\n  floating IP 198.51.100.7/32 is unassigned (it stays in the account)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_service_name_alone_is_in_the_default_namespace() {
        assert_eq!(
            service_name("web", "default").ok(),
            Some(("default", "web"))
        );
        assert_eq!(service_name("web", "team-a").ok(), Some(("team-a", "web")));
        assert_eq!(service_name("ns/web", "team-a").ok(), Some(("ns", "web")));
        for bad in ["", "/web", "ns/", "a/b/c"] {
            assert!(service_name(bad, "default").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_new_service_gets_a_placeholder_uid_and_node_ports() {
        let mut proposed = svc(json!({
            "metadata": {"name": "fresh"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        }));
        let notes = complete(&mut proposed, None);
        assert!(proposed.metadata.uid.is_some());
        assert!(
            proposed.spec.and_then(|s| s.ports).expect("ports")[0]
                .node_port
                .is_some()
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
    }
}
