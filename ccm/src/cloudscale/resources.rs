//! The typed operations: list/get/create/update/delete per resource, and the POST
//! idempotency scheme.

use super::types::*;
use super::{Client, ClientError, Result, endpoint_template, segment};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

/// Tag set by [`Idempotency::RequestId`]: a fresh UUID per create call.
pub const REQUEST_ID_TAG: &str = "ccm/request-id";

/// How a create (POST) whose outcome is unknown — timeout, dropped connection, 5xx — finds
/// out whether the API executed it before trying again. Without this a retried POST could
/// create a second load balancer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Idempotency {
    /// Tag the new resource `ccm/request-id=<fresh UUID>` and look it up by that tag.
    #[default]
    RequestId,
    /// Look it up by this tag (added to the create body's tags).
    Tag { key: String, value: String },
    /// Look it up by its natural key within its parent: load balancer by name; pool by name
    /// within its load balancer; member by name within its pool; listener by name within its
    /// pool; health monitor by pool. Floating IPs have none: an unknown outcome is an error.
    NaturalKey,
    /// Never repeat: an unknown outcome is returned as the error.
    Never,
}

/// What the client needs to know of every resource.
pub(crate) trait ApiResource: DeserializeOwned + Send + 'static {
    /// The identifier in paths (UUID; the bare IP for floating IPs), for the log.
    fn id(&self) -> String;
    fn tags(&self) -> &Tags;
}

macro_rules! uuid_resource {
    ($($t:ty),+) => {$(
        impl ApiResource for $t {
            fn id(&self) -> String {
                self.uuid.to_string()
            }
            fn tags(&self) -> &Tags {
                &self.tags
            }
        }
    )+};
}
uuid_resource!(
    Server,
    Network,
    Subnet,
    LoadBalancer,
    Pool,
    PoolMember,
    Listener,
    HealthMonitor
);

impl ApiResource for FloatingIp {
    fn id(&self) -> String {
        self.ip().to_string()
    }
    fn tags(&self) -> &Tags {
        &self.tags
    }
}

type Predicate<T> = Box<dyn Fn(&T) -> bool + Send + Sync>;

/// How to find a resource a POST may have created.
pub(crate) struct Lookup<T> {
    /// List path, with query.
    path: String,
    /// For messages: `tag ccm/request-id=…`, `name "x"`.
    key: String,
    pred: Predicate<T>,
}

/// Applies `idem` to a create body's `tags` and returns the lookup to use after an unknown
/// outcome. `natural` is the resource's natural key (collection path, description, match).
fn prepare<T: ApiResource>(
    idem: &Idempotency,
    tags: &mut Tags,
    collection: &str,
    natural: Option<(String, Predicate<T>)>,
) -> Option<Lookup<T>> {
    let by_tag = |key: String, value: String| {
        let filter = Filter::tag(key.clone(), value.clone());
        Lookup {
            path: format!("{collection}?{}", filter.query()),
            key: format!("tag {key}={value}"),
            pred: Box::new(move |r: &T| r.tags().get(&key) == Some(&value)),
        }
    };
    match idem {
        Idempotency::RequestId => {
            let value = uuid::Uuid::new_v4().to_string();
            tags.insert(REQUEST_ID_TAG.to_string(), value.clone());
            Some(by_tag(REQUEST_ID_TAG.to_string(), value))
        }
        Idempotency::Tag { key, value } => {
            tags.insert(key.clone(), value.clone());
            Some(by_tag(key.clone(), value.clone()))
        }
        Idempotency::NaturalKey => natural.map(|(key, pred)| Lookup {
            path: collection.to_string(),
            key,
            pred,
        }),
        Idempotency::Never => None,
    }
}

fn list_path(collection: &str, filter: &Filter) -> String {
    let q = filter.query();
    if q.is_empty() {
        collection.to_string()
    } else {
        format!("{collection}?{q}")
    }
}

const SERVERS: &str = "/v1/servers";
const NETWORKS: &str = "/v1/networks";
const SUBNETS: &str = "/v1/subnets";
const FLOATING_IPS: &str = "/v1/floating-ips";
const LOAD_BALANCERS: &str = "/v1/load-balancers";
const POOLS: &str = "/v1/load-balancers/pools";
const LISTENERS: &str = "/v1/load-balancers/listeners";
const HEALTH_MONITORS: &str = "/v1/load-balancers/health-monitors";

fn members_path(pool: Uuid) -> String {
    format!("{POOLS}/{pool}/members")
}

/// A floating IP's path identifier: the address without prefix length.
fn floating_ip_path(ip: &str) -> Result<String> {
    let bare = ip.split_once('/').map_or(ip, |(a, _)| a);
    Ok(format!("{FLOATING_IPS}/{}", segment(bare)?))
}

impl Client {
    /// Looks up what a POST may have created: `None` when nothing matches.
    async fn find<T: ApiResource>(&self, lookup: &Lookup<T>) -> Result<Option<T>> {
        let found: Vec<T> = self.get_json(&lookup.path).await?;
        let mut matching: Vec<T> = found.into_iter().filter(|r| (lookup.pred)(r)).collect();
        match matching.len() {
            0 => Ok(None),
            1 => Ok(matching.pop()),
            count => Err(ClientError::Ambiguous {
                endpoint: lookup
                    .path
                    .split('?')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                key: lookup.key.clone(),
                count,
            }),
        }
    }

    /// POST with the idempotency scheme: a failure that proves nothing happened (429, no
    /// connection) is retried; after an unknown outcome the resource is looked up first and
    /// returned if it exists, else the POST is repeated. Logged once.
    async fn create<T: ApiResource>(
        &self,
        resource: &'static str,
        path: &str,
        body: &impl Serialize,
        lookup: Option<Lookup<T>>,
    ) -> Result<T> {
        let body = serde_json::to_vec(body).map_err(|e| ClientError::Config(e.to_string()))?;
        let policy = &self.inner.retry;
        let endpoint = endpoint_template(path);
        let mut n = 1;
        let outcome = loop {
            let failure = match self.attempt(&Method::POST, path, Some(&body)).await {
                Ok(bytes) => {
                    break Client::decode::<T>(&Method::POST, path, &bytes).map(|r| (r, "created"));
                }
                Err(f) => f,
            };
            let transient = failure.error.is_transient();
            let delay = policy.delay(n, failure.retry_after, &self.inner.ambient);
            if transient && failure.unknown_outcome {
                let Some(lookup) = &lookup else {
                    break Err(failure.error);
                };
                let wait = delay.max(policy.settle_before_lookup);
                tracing::debug!(
                    resource,
                    endpoint = %endpoint,
                    attempt = n,
                    wait_ms = wait.as_millis() as u64,
                    key = %lookup.key,
                    error = %failure.error,
                    "cloudscale API create: outcome unknown, looking it up before retrying"
                );
                tokio::time::sleep(wait).await;
                match self.find(lookup).await {
                    Ok(Some(found)) => break Ok((found, "found after an unknown outcome")),
                    Ok(None) if n < policy.max_attempts => {}
                    Ok(None) => break Err(failure.error),
                    Err(e) => break Err(e),
                }
            } else if transient && n < policy.max_attempts {
                tracing::debug!(
                    resource,
                    endpoint = %endpoint,
                    attempt = n,
                    delay_ms = delay.as_millis() as u64,
                    error = %failure.error,
                    "cloudscale API create refused, retrying"
                );
                tokio::time::sleep(delay).await;
            } else {
                break Err(failure.error);
            }
            n += 1;
        };
        match outcome {
            Ok((r, outcome)) => {
                tracing::info!(
                    method = "POST",
                    resource,
                    id = %r.id(),
                    attempts = n,
                    outcome,
                    "cloudscale API write"
                );
                Ok(r)
            }
            Err(e) => {
                tracing::warn!(method = "POST", resource, attempts = n, outcome = "failed", error = %e, "cloudscale API write");
                Err(e)
            }
        }
    }

    /// `DELETE` of an `href` as the API returned it (how the reference CCM deletes anything).
    /// Only its path is used, against the configured base URL. 404 is success.
    pub async fn delete_href(&self, href: &str) -> Result<()> {
        let path = self.path_of_href(href)?;
        let resource = match endpoint_template(&path).as_str() {
            "/v1/load-balancers/{uuid}" => "load-balancer",
            "/v1/load-balancers/pools/{uuid}" => "pool",
            "/v1/load-balancers/pools/{uuid}/members/{uuid}" => "pool-member",
            "/v1/load-balancers/listeners/{uuid}" => "listener",
            "/v1/load-balancers/health-monitors/{uuid}" => "health-monitor",
            "/v1/floating-ips/{ip}" => "floating-ip",
            "/v1/servers/{uuid}" => "server",
            "/v1/networks/{uuid}" => "network",
            "/v1/subnets/{uuid}" => "subnet",
            _ => "resource",
        };
        self.delete_path(resource, &path).await
    }

    // -----------------------------------------------------------------------------------------
    // Servers, networks, subnets (read-only for the CCM)
    // -----------------------------------------------------------------------------------------

    pub async fn list_servers(&self, filter: &Filter) -> Result<Vec<Server>> {
        self.get_json(&list_path(SERVERS, filter)).await
    }

    /// `None` when the server does not exist (404); any other failure is an error.
    pub async fn get_server(&self, uuid: Uuid) -> Result<Option<Server>> {
        self.get_optional(&format!("{SERVERS}/{uuid}")).await
    }

    pub async fn list_networks(&self, filter: &Filter) -> Result<Vec<Network>> {
        self.get_json(&list_path(NETWORKS, filter)).await
    }

    pub async fn get_network(&self, uuid: Uuid) -> Result<Option<Network>> {
        self.get_optional(&format!("{NETWORKS}/{uuid}")).await
    }

    pub async fn list_subnets(&self, filter: &Filter) -> Result<Vec<Subnet>> {
        self.get_json(&list_path(SUBNETS, filter)).await
    }

    pub async fn get_subnet(&self, uuid: Uuid) -> Result<Option<Subnet>> {
        self.get_optional(&format!("{SUBNETS}/{uuid}")).await
    }

    // -----------------------------------------------------------------------------------------
    // Floating IPs
    // -----------------------------------------------------------------------------------------

    pub async fn list_floating_ips(&self, filter: &Filter) -> Result<Vec<FloatingIp>> {
        self.get_json(&list_path(FLOATING_IPS, filter)).await
    }

    /// By address; a `/prefix` suffix is ignored.
    pub async fn get_floating_ip(&self, ip: &str) -> Result<Option<FloatingIp>> {
        self.get_optional(&floating_ip_path(ip)?).await
    }

    /// Creates a floating IP. It has no natural key: use a tag-based [`Idempotency`].
    pub async fn create_floating_ip(
        &self,
        body: &CreateFloatingIp,
        idem: Idempotency,
    ) -> Result<FloatingIp> {
        let mut body = body.clone();
        let lookup = prepare::<FloatingIp>(&idem, &mut body.tags, FLOATING_IPS, None);
        self.create("floating-ip", FLOATING_IPS, &body, lookup)
            .await
    }

    pub async fn update_floating_ip(&self, ip: &str, body: &UpdateFloatingIp) -> Result<()> {
        self.patch("floating-ip", ip, &floating_ip_path(ip)?, body)
            .await
    }

    /// Moves the floating IP to a load balancer (`PATCH {"load_balancer": uuid}`).
    pub async fn assign_floating_ip_to_load_balancer(&self, ip: &str, lb_uuid: Uuid) -> Result<()> {
        let body = UpdateFloatingIp {
            load_balancer: Some(lb_uuid),
            ..UpdateFloatingIp::default()
        };
        self.update_floating_ip(ip, &body).await
    }

    /// Moves the floating IP to a server (`PATCH {"server": uuid}`).
    pub async fn assign_floating_ip_to_server(&self, ip: &str, server_uuid: Uuid) -> Result<()> {
        let body = UpdateFloatingIp {
            server: Some(server_uuid),
            ..UpdateFloatingIp::default()
        };
        self.update_floating_ip(ip, &body).await
    }

    pub async fn delete_floating_ip(&self, ip: &str) -> Result<()> {
        self.delete_path("floating-ip", &floating_ip_path(ip)?)
            .await
    }

    // -----------------------------------------------------------------------------------------
    // Load balancers
    // -----------------------------------------------------------------------------------------

    pub async fn list_load_balancers(&self, filter: &Filter) -> Result<Vec<LoadBalancer>> {
        self.get_json(&list_path(LOAD_BALANCERS, filter)).await
    }

    pub async fn get_load_balancer(&self, uuid: Uuid) -> Result<Option<LoadBalancer>> {
        self.get_optional(&format!("{LOAD_BALANCERS}/{uuid}")).await
    }

    pub async fn create_load_balancer(
        &self,
        body: &CreateLoadBalancer,
        idem: Idempotency,
    ) -> Result<LoadBalancer> {
        let mut body = body.clone();
        let name = body.name.clone();
        let natural: (String, Predicate<LoadBalancer>) = (
            format!("name {name:?}"),
            Box::new(move |lb: &LoadBalancer| lb.name == name),
        );
        let lookup = prepare(&idem, &mut body.tags, LOAD_BALANCERS, Some(natural));
        self.create("load-balancer", LOAD_BALANCERS, &body, lookup)
            .await
    }

    pub async fn update_load_balancer(&self, uuid: Uuid, body: &UpdateLoadBalancer) -> Result<()> {
        let path = format!("{LOAD_BALANCERS}/{uuid}");
        self.patch("load-balancer", &uuid.to_string(), &path, body)
            .await
    }

    /// Deletes the load balancer and everything under it. 404 is success.
    pub async fn delete_load_balancer(&self, uuid: Uuid) -> Result<()> {
        let path = format!("{LOAD_BALANCERS}/{uuid}");
        self.delete_path("load-balancer", &path).await
    }

    // -----------------------------------------------------------------------------------------
    // Pools
    // -----------------------------------------------------------------------------------------

    /// All pools of the account (filter by `load_balancer.uuid` client-side).
    pub async fn list_pools(&self, filter: &Filter) -> Result<Vec<Pool>> {
        self.get_json(&list_path(POOLS, filter)).await
    }

    pub async fn get_pool(&self, uuid: Uuid) -> Result<Option<Pool>> {
        self.get_optional(&format!("{POOLS}/{uuid}")).await
    }

    /// Creates a pool. `besides`: pools of the load balancer that exist already and may
    /// bear the same name (the pool a replacement is made next to): after an unknown
    /// outcome, the lookup never takes one of them for the pool it made.
    pub async fn create_pool(
        &self,
        body: &CreatePool,
        idem: Idempotency,
        besides: &[Uuid],
    ) -> Result<Pool> {
        let mut body = body.clone();
        let (name, lb) = (body.name.clone(), body.load_balancer);
        let (algorithm, protocol) = (body.algorithm.clone(), body.protocol.clone());
        let besides = besides.to_vec();
        // Algorithm and protocol belong to the key: a replacement pool (make-before-break)
        // has the name of the pool it replaces, which still exists, and must not be taken
        // for it. A replacement of the same algorithm and protocol (leaving
        // `externalTrafficPolicy: Local` moves its members' monitor port) is told apart
        // only by `besides`.
        let natural: (String, Predicate<Pool>) = (
            format!("name {name:?} ({protocol:?}, {algorithm:?}) in load balancer {lb}"),
            Box::new(move |p: &Pool| {
                p.name == name
                    && p.load_balancer.uuid == lb
                    && p.algorithm == algorithm
                    && p.protocol == protocol
                    && !besides.contains(&p.uuid)
            }),
        );
        let lookup = prepare(&idem, &mut body.tags, POOLS, Some(natural));
        self.create("pool", POOLS, &body, lookup).await
    }

    pub async fn update_pool(&self, uuid: Uuid, body: &UpdatePool) -> Result<()> {
        let path = format!("{POOLS}/{uuid}");
        self.patch("pool", &uuid.to_string(), &path, body).await
    }

    pub async fn delete_pool(&self, uuid: Uuid) -> Result<()> {
        let path = format!("{POOLS}/{uuid}");
        self.delete_path("pool", &path).await
    }

    // -----------------------------------------------------------------------------------------
    // Pool members (nested under their pool)
    // -----------------------------------------------------------------------------------------

    pub async fn list_pool_members(&self, pool: Uuid, filter: &Filter) -> Result<Vec<PoolMember>> {
        self.get_json(&list_path(&members_path(pool), filter)).await
    }

    pub async fn get_pool_member(&self, pool: Uuid, uuid: Uuid) -> Result<Option<PoolMember>> {
        let path = format!("{}/{}", members_path(pool), uuid);
        self.get_optional(&path).await
    }

    pub async fn create_pool_member(
        &self,
        pool: Uuid,
        body: &CreatePoolMember,
        idem: Idempotency,
    ) -> Result<PoolMember> {
        let collection = members_path(pool);
        let mut body = body.clone();
        let name = body.name.clone();
        let natural: (String, Predicate<PoolMember>) = (
            format!("name {name:?} in pool {pool}"),
            Box::new(move |m: &PoolMember| m.name == name),
        );
        let lookup = prepare(&idem, &mut body.tags, &collection, Some(natural));
        self.create("pool-member", &collection, &body, lookup).await
    }

    pub async fn update_pool_member(
        &self,
        pool: Uuid,
        uuid: Uuid,
        body: &UpdatePoolMember,
    ) -> Result<()> {
        let path = format!("{}/{}", members_path(pool), uuid);
        self.patch("pool-member", &uuid.to_string(), &path, body)
            .await
    }

    pub async fn delete_pool_member(&self, pool: Uuid, uuid: Uuid) -> Result<()> {
        let path = format!("{}/{}", members_path(pool), uuid);
        self.delete_path("pool-member", &path).await
    }

    // -----------------------------------------------------------------------------------------
    // Listeners
    // -----------------------------------------------------------------------------------------

    pub async fn list_listeners(&self, filter: &Filter) -> Result<Vec<Listener>> {
        self.get_json(&list_path(LISTENERS, filter)).await
    }

    pub async fn get_listener(&self, uuid: Uuid) -> Result<Option<Listener>> {
        self.get_optional(&format!("{LISTENERS}/{uuid}")).await
    }

    pub async fn create_listener(
        &self,
        body: &CreateListener,
        idem: Idempotency,
    ) -> Result<Listener> {
        let mut body = body.clone();
        let (name, pool) = (body.name.clone(), body.pool);
        let natural: (String, Predicate<Listener>) = (
            format!("name {name:?} on pool {pool}"),
            Box::new(move |l: &Listener| {
                l.name == name && l.pool.as_ref().is_some_and(|p| p.uuid == pool)
            }),
        );
        let lookup = prepare(&idem, &mut body.tags, LISTENERS, Some(natural));
        self.create("listener", LISTENERS, &body, lookup).await
    }

    pub async fn update_listener(&self, uuid: Uuid, body: &UpdateListener) -> Result<()> {
        let path = format!("{LISTENERS}/{uuid}");
        self.patch("listener", &uuid.to_string(), &path, body).await
    }

    pub async fn delete_listener(&self, uuid: Uuid) -> Result<()> {
        let path = format!("{LISTENERS}/{uuid}");
        self.delete_path("listener", &path).await
    }

    // -----------------------------------------------------------------------------------------
    // Health monitors
    // -----------------------------------------------------------------------------------------

    pub async fn list_health_monitors(&self, filter: &Filter) -> Result<Vec<HealthMonitor>> {
        self.get_json(&list_path(HEALTH_MONITORS, filter)).await
    }

    pub async fn get_health_monitor(&self, uuid: Uuid) -> Result<Option<HealthMonitor>> {
        self.get_optional(&format!("{HEALTH_MONITORS}/{uuid}"))
            .await
    }

    pub async fn create_health_monitor(
        &self,
        body: &CreateHealthMonitor,
        idem: Idempotency,
    ) -> Result<HealthMonitor> {
        let mut body = body.clone();
        let pool = body.pool;
        let natural: (String, Predicate<HealthMonitor>) = (
            format!("pool {pool}"),
            Box::new(move |m: &HealthMonitor| m.pool.uuid == pool),
        );
        let lookup = prepare(&idem, &mut body.tags, HEALTH_MONITORS, Some(natural));
        self.create("health-monitor", HEALTH_MONITORS, &body, lookup)
            .await
    }

    pub async fn update_health_monitor(
        &self,
        uuid: Uuid,
        body: &UpdateHealthMonitor,
    ) -> Result<()> {
        let path = format!("{HEALTH_MONITORS}/{uuid}");
        self.patch("health-monitor", &uuid.to_string(), &path, body)
            .await
    }

    pub async fn delete_health_monitor(&self, uuid: Uuid) -> Result<()> {
        let path = format!("{HEALTH_MONITORS}/{uuid}");
        self.delete_path("health-monitor", &path).await
    }
}
