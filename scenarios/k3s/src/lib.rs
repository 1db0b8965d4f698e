//! k3s through testcontainers, started as the cloud-controller docs ask: without its own
//! cloud controller and service load balancer (kubelets already run with
//! `--cloud-provider=external` there). Only with the `docker` feature (the scenarios'
//! `k3s` feature) and a Docker engine answering on its Unix socket.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The backend cannot run here: built without it, or no Docker engine.
    #[error("{0}")]
    Unavailable(String),
    #[error("k3s configuration directory: {0}")]
    Io(#[from] std::io::Error),
}

/// A running k3s container; dropping it stops the container.
pub struct Running {
    /// An admin kubeconfig for the container's API server, as YAML.
    pub kubeconfig: String,
    #[cfg(feature = "docker")]
    _container: docker::Container,
    #[cfg(feature = "docker")]
    _dir: docker::Dir,
}

/// Starts k3s and waits for its API server.
pub async fn start() -> Result<Running, Error> {
    #[cfg(feature = "docker")]
    {
        docker::start().await
    }
    #[cfg(not(feature = "docker"))]
    {
        Err(Error::Unavailable(
            "built without the `k3s` feature (cargo test -p scenarios --features k3s)".into(),
        ))
    }
}

#[cfg(feature = "docker")]
mod docker {
    use crate::{Error, Running};
    use testcontainers_modules::k3s::{K3s, KUBE_SECURE_PORT};
    use testcontainers_modules::testcontainers::runners::AsyncRunner;
    use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};

    pub type Container = ContainerAsync<K3s>;

    /// k3s' configuration directory (its kubeconfig), removed on drop.
    pub struct Dir(pub std::path::PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn docker_reachable() -> Result<(), Error> {
        let socket = std::env::var("DOCKER_HOST")
            .ok()
            .and_then(|h| h.strip_prefix("unix://").map(str::to_string))
            .unwrap_or_else(|| "/var/run/docker.sock".to_string());
        std::os::unix::net::UnixStream::connect(&socket)
            .map(|_| ())
            .map_err(|e| Error::Unavailable(format!("no Docker engine at {socket}: {e}")))
    }

    pub async fn start() -> Result<Running, Error> {
        docker_reachable()?;
        let dir = std::env::temp_dir().join(format!("scenarios-k3s-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)?;
        let dir = Dir(dir);
        let container = K3s::default()
            .with_conf_mount(&dir.0)
            .with_privileged(true)
            .with_userns_mode("host")
            .with_cmd([
                "server",
                "--snapshotter=native",
                "--disable-cloud-controller",
                "--disable=servicelb,traefik,metrics-server",
            ])
            .start()
            .await
            .map_err(|e| Error::Unavailable(format!("cannot start k3s: {e}")))?;
        let port = container
            .get_host_port_ipv4(KUBE_SECURE_PORT)
            .await
            .map_err(|e| Error::Unavailable(format!("k3s port: {e}")))?;
        let raw = std::fs::read_to_string(dir.0.join("k3s.yaml"))?;
        let kubeconfig = raw.replace(
            "https://127.0.0.1:6443",
            &format!("https://127.0.0.1:{port}"),
        );
        Ok(Running {
            kubeconfig,
            _container: container,
            _dir: dir,
        })
    }
}
