//! The controllers of one CCM: their contexts, which live as long as the process (what
//! they remember survives a change of leader), and one leadership term's work on them.

use crate::ambient::Ambient;
use crate::cloudscale::Client;
use crate::events::Events;
use crate::health::Readiness;
use crate::metrics::Metrics;
use crate::node::controller::{self as node_controller, NodeContext};
use crate::node::lifecycle::{self, LifecycleContext};
use crate::options::Options;
use crate::runner::Informer;
use crate::service::cloud::apply::ApplyOptions;
use crate::service::reconcile::context::ServiceContext;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::Api;
use kube::runtime::watcher;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The controllers' contexts and which controllers run (`--controllers`).
#[derive(Clone)]
pub(super) struct Controllers {
    node_ctx: Arc<NodeContext<Client>>,
    lifecycle_ctx: Arc<LifecycleContext<Client>>,
    service_ctx: Arc<ServiceContext>,
    run_nodes: bool,
    run_lifecycle: bool,
    run_services: bool,
    /// Services reconciled at once (`--concurrent-service-syncs`).
    concurrency: u16,
}

impl Controllers {
    pub(super) fn new(
        opts: &Options,
        (kube, cloud, metrics): (&kube::Client, &Client, &Arc<Metrics>),
        ambient: &Ambient,
        identity: &str,
    ) -> Controllers {
        let events = Events::new(kube.clone(), Some(identity.to_string()), ambient.clone())
            .counted_in(metrics.clone());
        // Node work goes ahead of load-balancer work under the rate limit.
        let directory = |controller| Arc::new(cloud.prioritized().for_controller(controller));
        let node_ctx = Arc::new(NodeContext {
            client: kube.clone(),
            directory: directory(crate::node::controller::CONTROLLER),
            events: events.clone(),
            metrics: metrics.clone(),
            refresh: opts.node_status_update_frequency,
            retry: Duration::from_secs(5),
            last_sync: Default::default(),
            initialized_from: Default::default(),
        });
        let lifecycle_ctx = Arc::new(LifecycleContext {
            deletion_threshold: opts.node_deletion_threshold,
            pace: parking_lot::Mutex::new(crate::node::guard::Pace::new(opts.node_deletion_rate)),
            ..LifecycleContext::new(
                kube.clone(),
                directory(crate::node::lifecycle::CONTROLLER),
                events,
                metrics.clone(),
                opts.node_monitor_period,
            )
        });
        let service_ctx = Arc::new(service_context(
            opts,
            (kube, cloud, metrics),
            ambient,
            identity,
        ));
        Controllers {
            node_ctx,
            lifecycle_ctx,
            service_ctx,
            run_nodes: opts.controller_enabled("cloud-node"),
            run_lifecycle: opts.controller_enabled("cloud-node-lifecycle"),
            run_services: opts.controller_enabled("service"),
            concurrency: u16::try_from(opts.concurrent_service_syncs).unwrap_or(u16::MAX),
        }
    }

    /// Adds the contexts' cache and bookkeeping sizes to `sizes`.
    pub(super) fn count_sizes(&self, sizes: &crate::sizes::Probe) {
        // The lifecycle controller keeps no per-Node maps; its Event recorder is the node
        // controller's.
        let (node, service) = (
            Arc::downgrade(&self.node_ctx),
            Arc::downgrade(&self.service_ctx),
        );
        sizes.add(move |out| {
            if let Some(c) = node.upgrade() {
                c.sizes(out);
            }
            if let Some(c) = service.upgrade() {
                c.sizes(out);
            }
        });
    }
}

fn service_context(
    opts: &Options,
    (kube, cloud, metrics): (&kube::Client, &Client, &Arc<Metrics>),
    ambient: &Ambient,
    identity: &str,
) -> ServiceContext {
    ServiceContext {
        kube: kube.clone(),
        cloud: cloud.for_controller(crate::service::reconcile::controller::CONTROLLER),
        events: Events::new(kube.clone(), Some(identity.to_string()), ambient.clone())
            .counted_in(metrics.clone()),
        metrics: metrics.clone(),
        cluster_name: opts.cluster_name.clone(),
        apply: ApplyOptions {
            poll: opts.load_balancer_poll_interval,
            members_timeout: opts.load_balancer_members_timeout,
            ..ApplyOptions::default()
        },
        resync: crate::service::reconcile::context::Resync {
            period: opts.service_resync_period,
            origin: tokio::time::Instant::now(),
        },
        shared: crate::service::cloud::shared::SharedReads::new(opts.api_read_sharing_window),
        retry: crate::service::reconcile::state::Backoff {
            min: opts.service_sync_retry_delay,
            max: opts.service_sync_max_retry_delay,
        },
        states: Default::default(),
        services: Default::default(),
        nodes: Default::default(),
        returning: Default::default(),
    }
}

/// One leadership term: the controllers, as one future (dropped when leadership ends).
#[derive(Clone)]
pub(super) struct Term {
    pub(super) controllers: Controllers,
    pub(super) kube: kube::Client,
    pub(super) ambient: Ambient,
    pub(super) readiness: Arc<Readiness>,
    pub(super) stop_rx: watch::Receiver<bool>,
}

impl Term {
    pub(super) async fn run(self) {
        let Term {
            controllers:
                Controllers {
                    node_ctx,
                    lifecycle_ctx,
                    service_ctx,
                    run_nodes,
                    run_lifecycle,
                    run_services,
                    concurrency,
                },
            kube,
            ambient,
            readiness,
            stop_rx,
        } = self;
        // One watch per kind for every controller (a Node or Service watch each,
        // not one per controller, and no LIST per reconcile or per sweep).
        let nodes = Informer::<Node>::new();
        let services = Informer::<Service>::new();
        let watches = async {
            let node_watch = nodes.run(
                Api::all(kube.clone()),
                watcher::Config::default(),
                ambient.clone(),
            );
            let service_watch = async {
                if run_services {
                    services
                        .run(
                            Api::all(kube.clone()),
                            watcher::Config::default(),
                            ambient.clone(),
                        )
                        .await;
                }
            };
            tokio::join!(node_watch, service_watch);
        };
        let ready = async {
            // Ready once the Node cache is synced.
            nodes.synced().await;
            readiness.set_synced(true);
        };
        let node_work = async {
            if run_nodes {
                node_controller::run(node_ctx, nodes.clone(), super::stopped(stop_rx.clone()))
                    .await;
            }
        };
        let lifecycle = async {
            if run_lifecycle {
                lifecycle::run(
                    lifecycle_ctx,
                    nodes.clone(),
                    super::stopped(stop_rx.clone()),
                )
                .await;
            }
        };
        let service_work = async {
            if run_services {
                crate::service::reconcile::controller::run(
                    service_ctx,
                    services.clone(),
                    nodes.clone(),
                    concurrency,
                    super::stopped(stop_rx.clone()),
                )
                .await;
            }
        };
        // The watches go first: events already received reach the caches before
        // a reconcile starts. The controllers end on shutdown; the watches do not.
        tokio::select! {
            biased;
            () = watches => {}
            _ = async { tokio::join!(ready, node_work, lifecycle, service_work) } => {}
        }
    }
}
