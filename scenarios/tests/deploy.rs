//! `deploy/`: the kustomize base renders `deploy/config.yml` byte for byte (kubectl's
//! built-in kustomize), every object parses into its Kubernetes type, and the workload runs
//! the CCM with flags the CCM accepts, hardened as `deploy/README.md` says.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::Deserialize;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn config() -> String {
    std::fs::read_to_string(format!("{ROOT}/deploy/config.yml")).expect("deploy/config.yml")
}

fn documents() -> Vec<serde_yaml_ng::Value> {
    let text = config();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde_yaml_ng::Value::deserialize(d).expect("a YAML document"))
        .collect()
}

fn of_kind<T: serde::de::DeserializeOwned>(kind: &str) -> Vec<T> {
    documents()
        .into_iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .map(|d| serde_yaml_ng::from_value(d).unwrap_or_else(|e| panic!("{kind}: {e}")))
        .collect()
}

#[test]
fn the_kustomize_base_renders_config_yml_byte_for_byte() {
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", &format!("{ROOT}/deploy/kustomize")])
        .output()
        .expect("kubectl (the CI machine has it: see README.md)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        config(),
        "deploy/config.yml is not what `kubectl kustomize deploy/kustomize` renders; \
         rerun it: kubectl kustomize deploy/kustomize > deploy/config.yml"
    );
}

#[test]
fn every_object_parses_into_its_kubernetes_type() {
    let kinds: Vec<String> = documents()
        .iter()
        .filter_map(|d| d["kind"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "Role",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
            "Deployment"
        ]
    );
    assert_eq!(of_kind::<ServiceAccount>("ServiceAccount").len(), 1);
    assert_eq!(of_kind::<Role>("Role").len(), 1);
    assert_eq!(of_kind::<ClusterRole>("ClusterRole").len(), 1);
    // Both bindings name the ServiceAccount the Deployment runs as.
    for subjects in of_kind::<RoleBinding>("RoleBinding")
        .into_iter()
        .map(|b| b.subjects.unwrap_or_default())
        .chain(
            of_kind::<ClusterRoleBinding>("ClusterRoleBinding")
                .into_iter()
                .map(|b| b.subjects.unwrap_or_default()),
        )
    {
        assert_eq!(subjects.len(), 1);
        assert_eq!(subjects[0].name, "cloudscale-cloud-controller-manager");
        assert_eq!(subjects[0].namespace.as_deref(), Some("kube-system"));
    }
}

#[test]
fn the_workload_runs_the_ccm_with_flags_it_accepts_hardened() {
    let d = of_kind::<Deployment>("Deployment").remove(0);
    let pod = d.spec.template.spec.expect("a pod spec");
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("cloudscale-cloud-controller-manager")
    );
    assert_eq!(pod.host_network, Some(true));
    let tolerated: Vec<String> = pod
        .tolerations
        .iter()
        .flatten()
        .filter_map(|t| t.key.clone())
        .collect();
    assert!(tolerated.contains(&"node.cloudprovider.kubernetes.io/uninitialized".to_string()));
    let c = &pod.containers[0];
    let mut argv = vec!["cloudscale-cloud-controller-manager".to_string()];
    argv.extend(c.args.iter().flatten().cloned());
    let opts = <ccm::options::Options as clap::Parser>::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("the CCM refuses the Deployment's args: {e}"));
    // The token file is where the Secret is mounted.
    let token = opts.token_file.expect("--token-file");
    let mount = c
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| token.starts_with(&m.mount_path))
        .expect("the token file lies in a mounted volume");
    assert_eq!(mount.read_only, Some(true));
    // Probes on the CCM's health server.
    let port = i32::from(opts.secure_port);
    assert_eq!(
        c.ports.iter().flatten().next().map(|p| p.container_port),
        Some(port)
    );
    for (probe, path) in [
        (&c.liveness_probe, "/healthz"),
        (&c.readiness_probe, "/readyz"),
    ] {
        let get = probe
            .as_ref()
            .and_then(|p| p.http_get.as_ref())
            .expect("an HTTP probe");
        assert_eq!(get.path.as_deref(), Some(path));
    }
    let sc = c.security_context.as_ref().expect("a security context");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(
        sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_string()])
    );
    let psc = pod.security_context.expect("a pod security context");
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(
        psc.seccomp_profile.map(|p| p.type_),
        Some("RuntimeDefault".to_string())
    );
    let limits = c
        .resources
        .as_ref()
        .and_then(|r| r.limits.clone())
        .unwrap_or_default();
    assert!(limits.contains_key("memory"), "a memory limit");
}
