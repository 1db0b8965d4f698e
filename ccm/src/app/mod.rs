//! The process: configuration checks, clients, the health server, leader election and the
//! controllers, until SIGTERM. In the library so tests can run a whole CCM in-process.

mod controllers;

use crate::ambient::Ambient;
use crate::cloudscale::{self, Client, ClientConfig, RateLimit, RetryPolicy, Transport};
use crate::health::{self, Readiness};
use crate::leader::{LeaderElectionConfig, LeaderElector};
use crate::metrics::{KubeRequestsLayer, Metrics};
use crate::options::{self, Options};
use crate::secret::{TokenError, TokenSource};
use controllers::{Controllers, Term};
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("cannot read the kubeconfig {path}: {reason}")]
    Kubeconfig { path: String, reason: String },
    #[error(
        "no Kubernetes configuration: not in a cluster and no --kubeconfig or KUBECONFIG ({0})"
    )]
    NoKubeConfig(String),
    #[error("cannot create the Kubernetes client: {0}")]
    KubeClient(String),
    #[error("cannot create the cloudscale API client: {0}")]
    Cloud(#[from] cloudscale::ClientError),
    #[error("cannot serve health and metrics on {addr}: {reason}")]
    Health { addr: SocketAddr, reason: String },
    #[error("{0}")]
    Config(String),
    /// The start-up check found the API root wrong, or the token refused.
    #[error("{0}")]
    Api(String),
}

/// Everything the process reads from its environment.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub access_token: Option<String>,
    pub api_url: Option<String>,
    pub api_timeout: Option<String>,
}

impl Environment {
    pub fn from_process() -> Environment {
        Environment {
            access_token: std::env::var("CLOUDSCALE_ACCESS_TOKEN").ok(),
            api_url: std::env::var("CLOUDSCALE_API_URL").ok(),
            api_timeout: std::env::var("CLOUDSCALE_API_TIMEOUT").ok(),
        }
    }
}

/// The Kubernetes client, its requests counted in `metrics` (`rest_client_*`).
async fn kube_client(opts: &Options, metrics: &Arc<Metrics>) -> Result<kube::Client, AppError> {
    let config = match &opts.kubeconfig {
        Some(path) => {
            let kc =
                kube::config::Kubeconfig::read_from(path).map_err(|e| AppError::Kubeconfig {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| AppError::Kubeconfig {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| AppError::NoKubeConfig(e.to_string()))?,
    };
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| AppError::KubeClient(e.to_string()))?;
    Ok(builder
        .with_layer(&KubeRequestsLayer::new(metrics.clone()))
        .build())
}

/// A running CCM's handles (for tests and `main`).
pub struct Running {
    /// Where health and metrics are served (`None` when [`Wiring::serve_health`] is off).
    pub health_addr: Option<SocketAddr>,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// The sizes of its caches and bookkeeping (filled in once the controllers' contexts
    /// exist).
    pub sizes: Arc<crate::sizes::Probe>,
}

/// What a CCM is built from besides its flags: how it reaches Kubernetes and the cloud,
/// its clock and randomness, and whether it serves health and metrics on a socket.
/// Production gets these from [`run`]; a simulation passes in-process ones to [`run_wired`].
pub struct Wiring {
    /// Its requests counted in `metrics` (see [`KubeRequestsLayer`]).
    pub kube: kube::Client,
    /// The registry `/metrics` shows (the one the Kubernetes client counts in).
    pub metrics: Arc<Metrics>,
    /// `None`: reqwest to the API URL.
    pub cloud_transport: Option<Arc<dyn Transport>>,
    pub ambient: Ambient,
    pub serve_health: bool,
}

/// Checks the configuration, builds the clients, starts the health server and runs the
/// controllers (as leader, if leader election is on) until `shutdown` completes. Reports
/// the bound health address through `started` as soon as it is known.
pub async fn run(
    opts: Options,
    env: Environment,
    shutdown: impl Future<Output = ()> + Send + 'static,
    started: impl FnOnce(&Running),
) -> Result<(), AppError> {
    opts.validate().map_err(AppError::Config)?;
    options::api_timeout(env.api_timeout.clone()).map_err(AppError::Config)?;
    // The token is checked before anything else is reached (run_wired reads it again).
    TokenSource::from_env_or_file(
        opts.token_file.as_deref().map(Path::new),
        env.access_token.clone(),
    )?;
    cloudscale::install_crypto_provider();
    let metrics = Arc::new(Metrics::new());
    let kube = kube_client(&opts, &metrics).await?;
    let wiring = Wiring {
        kube,
        metrics,
        cloud_transport: None,
        ambient: Ambient::system(),
        serve_health: true,
    };
    run_wired(opts, env, wiring, shutdown, started).await
}

/// The start-up check of the API root and the token: one list of the servers. A wrong root
/// or a refused token ends the start with one line saying which setting to fix; an API
/// that does not answer now may answer later, so the start goes on with a warning.
async fn check_api(cloud: &Client, api_url: &str) -> Result<(), AppError> {
    match cloud.check_root().await {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_the_api() => Err(AppError::Api(format!(
            "CLOUDSCALE_API_URL={api_url} is not the cloudscale.ch API root: {e}"
        ))),
        Err(e) if e.is_unauthorized() => Err(AppError::Api(format!(
            "the cloudscale.ch API refused the token ({}): check CLOUDSCALE_ACCESS_TOKEN or --token-file ({e})",
            e.status().unwrap_or_default()
        ))),
        Err(e) => {
            tracing::warn!(error = %e, "the cloudscale.ch API does not answer yet; starting anyway");
            Ok(())
        }
    }
}

/// [`run`] with the clients, clock and randomness given.
pub async fn run_wired(
    opts: Options,
    env: Environment,
    wiring: Wiring,
    shutdown: impl Future<Output = ()> + Send + 'static,
    started: impl FnOnce(&Running),
) -> Result<(), AppError> {
    opts.validate().map_err(AppError::Config)?;
    let token = Arc::new(TokenSource::from_env_or_file(
        opts.token_file.as_deref().map(Path::new),
        env.access_token,
    )?);
    let api_url = options::api_url(env.api_url);
    let timeout = options::api_timeout(env.api_timeout.clone()).map_err(AppError::Config)?;
    let Wiring {
        kube,
        metrics,
        cloud_transport,
        ambient,
        serve_health,
    } = wiring;
    metrics.set_lease(&opts.leader_elect_resource_name);
    let readiness = Arc::new(Readiness::default());
    let sizes = crate::sizes::Probe::new();

    let (stop_tx, stop_rx) = watch::channel(false);
    let health_addr = if serve_health {
        Some(serve_health_on(&opts, &metrics, &readiness, stop_rx.clone()).await?)
    } else {
        None
    };
    started(&Running {
        health_addr,
        metrics: metrics.clone(),
        readiness: readiness.clone(),
        sizes: sizes.clone(),
    });

    let cloud = cloud_client(
        &opts,
        (api_url.clone(), timeout, token),
        &metrics,
        cloud_transport,
        &ambient,
    )?;
    tracing::info!(
        api_url = %api_url,
        timeout_s = timeout.as_secs(),
        token = if opts.token_file.is_some() { "from --token-file" } else { "from CLOUDSCALE_ACCESS_TOKEN" },
        health = %health_addr.map_or_else(|| "off".to_string(), |a| a.to_string()),
        leader_elect = opts.leader_elect,
        "starting"
    );
    readiness.watch_api_root(cloud.root_health());
    check_api(&cloud, &api_url).await?;

    let identity = crate::leader::default_identity(&ambient);
    let controllers = Controllers::new(&opts, (&kube, &cloud, &metrics), &ambient, &identity);
    controllers.count_sizes(&sizes);
    let term = Term {
        controllers,
        kube,
        ambient,
        readiness,
        stop_rx,
    };

    // Shutdown: stop taking work, let the controllers wind down, release the lease.
    tokio::spawn({
        let stop_tx = stop_tx.clone();
        async move {
            shutdown.await;
            tracing::info!("shutting down");
            let _ = stop_tx.send(true);
        }
    });
    run_terms(&opts, term, identity, &metrics).await?;
    let _ = stop_tx.send(true);
    tracing::info!("stopped");
    Ok(())
}

/// Completes once `rx` says the process stops.
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Serves health and metrics on `--bind-address`:`--secure-port` until the process stops.
async fn serve_health_on(
    opts: &Options,
    metrics: &Arc<Metrics>,
    readiness: &Arc<Readiness>,
    stop_rx: watch::Receiver<bool>,
) -> Result<SocketAddr, AppError> {
    let addr = SocketAddr::new(opts.bind_address, opts.secure_port);
    health::serve(addr, metrics.clone(), readiness.clone(), stopped(stop_rx))
        .await
        .map_err(|e| AppError::Health {
            addr,
            reason: e.to_string(),
        })
}

/// The cloudscale.ch API client: `--api-rate-limit`, `--api-max-attempts` and
/// `--api-retry-base-delay`, counted in `metrics`.
fn cloud_client(
    opts: &Options,
    (api_url, timeout, token): (String, Duration, Arc<TokenSource>),
    metrics: &Arc<Metrics>,
    transport: Option<Arc<dyn Transport>>,
    ambient: &Ambient,
) -> Result<Client, AppError> {
    Ok(Client::new(ClientConfig {
        timeout,
        rate_limit: Some(RateLimit {
            requests_per_second: opts.api_rate_limit,
            burst: (opts.api_rate_limit * 2.0).ceil().max(1.0) as u32,
        }),
        metrics: Some(metrics.clone()),
        retry: RetryPolicy {
            max_attempts: opts.api_max_attempts,
            base_delay: opts.api_retry_base_delay,
            ..RetryPolicy::default()
        },
        user_agent: format!("{}/{}", crate::COMPONENT, env!("CARGO_PKG_VERSION")),
        transport,
        ambient: ambient.clone(),
        ..ClientConfig::new(api_url, token)
    })?)
}

/// Runs the controllers until the process stops: at once, or in each term this process
/// leads when leader election is on.
async fn run_terms(
    opts: &Options,
    term: Term,
    identity: String,
    metrics: &Arc<Metrics>,
) -> Result<(), AppError> {
    let stop = stopped(term.stop_rx.clone());
    let leading = {
        let term = term.clone();
        move || term.clone().run()
    };
    if !opts.leader_elect {
        metrics.set_leader(true);
        tokio::select! {
            biased;
            () = leading() => {}
            () = stop => {}
        }
        return Ok(());
    }
    let elector = LeaderElector::new(
        term.kube.clone(),
        LeaderElectionConfig {
            lease_name: opts.leader_elect_resource_name.clone(),
            lease_namespace: opts.leader_elect_resource_namespace.clone(),
            identity,
            lease_duration: opts.leader_elect_lease_duration,
            renew_deadline: opts.leader_elect_renew_deadline,
            retry_period: opts.leader_elect_retry_period,
            ambient: term.ambient.clone(),
        },
    )
    .map_err(|e| AppError::Config(e.to_string()))?;
    let mut status = elector.status().receiver();
    let (metrics, readiness) = (metrics.clone(), term.readiness.clone());
    readiness.set_standing_by(true);
    tokio::spawn(async move {
        loop {
            let leader = *status.borrow_and_update();
            metrics.set_leader(leader);
            // A leader is ready once its caches are synced; a follower is ready to take
            // over.
            readiness.set_standing_by(!leader);
            if !leader {
                readiness.set_synced(false);
            }
            if status.changed().await.is_err() {
                metrics.set_leader(false);
                break;
            }
        }
    });
    elector.run(stop, leading).await;
    Ok(())
}
