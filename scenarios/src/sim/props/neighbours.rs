//! The other Services of a case ([`Neighbour`]): in namespace `default` or `team` of the
//! same cluster, sharing its nodes, or in a second cluster on the same cloud account. They
//! are created before the Service, take part in claims across Services, are judged after
//! every change (properties 6 and 7 of the module documentation of `props`) and are
//! deleted before the Service's end.

use super::backend::Backend;
use super::measure::{self, CLIENTS, Mark, availability, merged, seconds};
use super::state::State;
use super::verdict::Violation;
use super::{A, Change, Neighbour, Place};
use crate::sim::world::{World, load_balancers_of};
use fakecloud::clock::Time;
use fakecloud::dataplane::EntryKind;
use k8s_openapi::api::core::v1::{Event, Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;
use uuid::Uuid;

/// The namespace of neighbours placed in [`Place::Team`].
pub const TEAM: &str = "team";

/// How long a floating IP its holder gave up may take to reach the Service claiming it,
/// from the edit that let it go (s): the CCM re-queues the other claimants of a floating
/// IP when a claim changes (`ccm/src/service/reconcile/claims.rs`), so the hand-over waits for no
/// resync; one reconcile, the assignment and its propagation fit well within.
pub const HAND_OVER_S: f64 = 45.0;

/// One neighbour as it stands.
#[derive(Debug, Clone)]
pub struct Nb {
    pub place: Place,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// Floating IP networks it claims.
    pub fips: Vec<String>,
    pub gone: bool,
}

/// A copy of a neighbour (see [`Change::CopyOf`]).
#[derive(Debug, Clone)]
struct Copy {
    place: Place,
    namespace: String,
    name: String,
    uid: String,
}

/// The neighbours of a case and the second cluster some of them live in.
pub struct Neighbours<'w> {
    pub list: Vec<Nb>,
    copies: Vec<Copy>,
    second: Option<&'w World>,
}

/// What a neighbour looked like when a change began.
pub struct Before {
    index: usize,
    lb: Uuid,
    fingerprint: Value,
    /// Its floating IPs' addresses delivering to its load balancer then.
    fips: BTreeSet<IpAddr>,
    t0: Time,
}

/// Load balancer UUIDs for a message: `none`, or the list.
fn uuids(list: &[Uuid]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter()
        .map(Uuid::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn address_of(network: &str) -> Option<IpAddr> {
    network.split('/').next()?.parse().ok()
}

/// The same cluster's nodes (running or not) that are still there.
fn node_names(state: &State) -> Vec<String> {
    state
        .nodes
        .iter()
        .filter(|n| !n.gone)
        .map(|n| n.name.clone())
        .collect()
}

impl<'w> Neighbours<'w> {
    /// Creates the drawn neighbours (those of another cluster only where `second` is one)
    /// and waits until each has its load balancer.
    pub async fn start(
        b: &impl Backend,
        draws: &[Neighbour],
        second: Option<&'w World>,
        state: &State,
    ) -> Result<Neighbours<'w>, String> {
        let mut out = Neighbours {
            list: Vec::new(),
            copies: Vec::new(),
            second,
        };
        for (i, d) in draws.iter().enumerate() {
            let Some(kube) = out.kube(b, d.place) else {
                continue;
            };
            let namespace = if d.place == Place::Team {
                TEAM
            } else {
                "default"
            };
            ensure_namespace(&kube, namespace).await?;
            let mut fips = Vec::new();
            if d.fip {
                let fip = b
                    .outside(
                        "POST",
                        "/v1/floating-ips",
                        Some(json!({"ip_version": 4, "region": "rma"})),
                    )
                    .await?;
                fips.push(
                    fip["network"]
                        .as_str()
                        .ok_or("a floating IP without network")?
                        .to_string(),
                );
            }
            let name = format!("nb-{i}");
            let nodes = match d.place {
                Place::OtherCluster => second.map(World::node_names).unwrap_or_default(),
                _ => node_names(state),
            };
            write_slice(&kube, namespace, &name, &nodes).await?;
            let created = Api::<Service>::namespaced(kube, namespace)
                .create(
                    &PostParams::default(),
                    &manifest(namespace, &name, 8000 + i as u16, &fips)?,
                )
                .await
                .map_err(|e| format!("creating neighbour {namespace}/{name}: {e}"))?;
            out.list.push(Nb {
                place: d.place,
                namespace: namespace.into(),
                name,
                uid: created.metadata.uid.unwrap_or_default(),
                fips,
                gone: false,
            });
        }
        for n in &out.list {
            wait_served(b, n).await?;
        }
        Ok(out)
    }

    fn kube(&self, b: &impl Backend, place: Place) -> Option<kube::Client> {
        match place {
            Place::OtherCluster => self.second.map(|w| w.kube.clone()),
            _ => Some(b.kube()),
        }
    }

    /// The neighbour (still there) that index `i` names, of the same cluster only when
    /// `same_cluster`.
    fn pick(&self, i: usize, same_cluster: bool) -> Option<usize> {
        let live: Vec<usize> = (0..self.list.len())
            .filter(|j| !self.list[*j].gone)
            .filter(|j| !same_cluster || self.list[*j].place != Place::OtherCluster)
            .collect();
        (!live.is_empty()).then(|| live[i % live.len()])
    }

    /// Whether `change` (one of the neighbour changes) can be played now; any other change
    /// can.
    pub fn applies(&self, change: &Change, state: &State) -> bool {
        match change {
            Change::ClaimOf(i) => self
                .pick(*i, false)
                .is_some_and(|n| self.list[n].fips.iter().any(|f| !state.fips.contains(f))),
            Change::Hand { of, to_web, .. } => match self.pick(*of, true) {
                Some(n) if *to_web => !self.list[n].fips.is_empty(),
                // A rival claiming the Service's addresses may take the one it lets go
                // (a documented outcome): only hand-overs no rival contends are judged.
                Some(_) => state.rivals.is_empty() && self.held_by_web(state).is_some(),
                None => false,
            },
            Change::NameOf(i) | Change::CopyOf(i) | Change::DeleteNeighbour(i) => {
                self.pick(*i, false).is_some()
            }
            _ => true,
        }
    }

    /// The first floating IP the Service claims that no live neighbour holds: one it can
    /// give away. A claim refused because a neighbour holds the address is not the
    /// Service's to hand over.
    pub fn held_by_web(&self, state: &State) -> Option<String> {
        state
            .fips
            .iter()
            .find(|f| !self.list.iter().any(|n| !n.gone && n.fips.contains(f)))
            .cloned()
    }

    /// Neighbour `i`'s floating IP the Service claims too ([`Change::ClaimOf`]).
    pub fn fip_to_claim(&self, i: usize, state: &State) -> Option<String> {
        let n = self.pick(i, false)?;
        self.list[n]
            .fips
            .iter()
            .find(|f| !state.fips.contains(f))
            .cloned()
    }

    /// The name of neighbour `i`'s load balancer ([`Change::NameOf`]).
    pub fn lb_name(&self, b: &impl Backend, i: usize) -> Option<String> {
        let n = &self.list[self.pick(i, false)?];
        let lb = load_balancers_of(b.cloud(), &n.uid).into_iter().next()?;
        b.cloud().read("", |ctx| {
            ctx.st.load_balancers().get(&lb).map(|l| l.name.clone())
        })
    }

    /// Writes the same cluster's neighbours' EndpointSlices again (after node changes).
    pub async fn refresh_endpoints(&self, b: &impl Backend, state: &State) -> Result<(), String> {
        for n in self.list.iter().filter(|n| !n.gone) {
            if n.place != Place::OtherCluster {
                write_slice(&b.kube(), &n.namespace, &n.name, &node_names(state)).await?;
            }
        }
        Ok(())
    }

    /// Sets what neighbour `n` claims (an edit of its floating-ips annotation).
    async fn claim(&mut self, b: &impl Backend, n: usize, fips: Vec<String>) -> Result<(), String> {
        let nb = &self.list[n];
        let kube = self
            .kube(b, nb.place)
            .ok_or("no cluster for the neighbour")?;
        let value = if fips.is_empty() {
            Value::Null
        } else {
            json!(serde_json::to_string(&fips).map_err(|e| e.to_string())?)
        };
        Api::<Service>::namespaced(kube, &nb.namespace)
            .patch(
                &nb.name,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"annotations": {format!("{A}floating-ips"): value}}}),
                ),
            )
            .await
            .map_err(|e| format!("editing neighbour {}/{}: {e}", nb.namespace, nb.name))?;
        self.list[n].fips = fips;
        Ok(())
    }

    /// Plays [`Change::Hand`]'s part on neighbour `of` for the floating IP `fip`: it lets
    /// go of it (`to_web`) or claims it. Returns the neighbour's index.
    pub async fn hand(
        &mut self,
        b: &impl Backend,
        of: usize,
        to_web: bool,
        fip: &str,
    ) -> Result<usize, String> {
        let n = self
            .pick(of, true)
            .ok_or("no neighbour to hand over with")?;
        let mut fips = self.list[n].fips.clone();
        if to_web {
            fips.retain(|f| f != fip);
        } else {
            fips.push(fip.to_string());
        }
        self.claim(b, n, fips).await?;
        Ok(n)
    }

    /// The floating IP neighbour `of` gives in [`Change::Hand`] towards the Service.
    pub fn fip_to_hand(&self, of: usize) -> Option<String> {
        self.list[self.pick(of, true)?].fips.first().cloned()
    }

    /// Creates a copy of neighbour `i` (its annotations, the CCM-written ones included)
    /// beside it; a neighbour of the second cluster is copied into this one's `default`
    /// (a manifest carried from one cluster to another).
    pub async fn copy(&mut self, b: &impl Backend, i: usize, step: usize) -> Result<(), String> {
        let n = self.pick(i, false).ok_or("no neighbour to copy")?;
        let nb = self.list[n].clone();
        let kube = self
            .kube(b, nb.place)
            .ok_or("no cluster for the neighbour")?;
        let live = Api::<Service>::namespaced(kube, &nb.namespace)
            .get(&nb.name)
            .await
            .map_err(|e| format!("reading neighbour {}/{}: {e}", nb.namespace, nb.name))?;
        let (place, namespace) = match nb.place {
            Place::OtherCluster => (Place::Default, "default".to_string()),
            p => (p, nb.namespace.clone()),
        };
        let name = format!("copy-{step}");
        let mut m = manifest(&namespace, &name, 8000 + n as u16, &nb.fips)?;
        m.metadata.annotations = live.metadata.annotations.clone();
        let created = Api::<Service>::namespaced(b.kube(), &namespace)
            .create(&PostParams::default(), &m)
            .await
            .map_err(|e| format!("creating the copy {namespace}/{name}: {e}"))?;
        self.copies.push(Copy {
            place,
            namespace,
            name,
            uid: created.metadata.uid.unwrap_or_default(),
        });
        Ok(())
    }

    /// Deletes neighbour `i` and waits until its load balancer is gone.
    pub async fn delete(&mut self, b: &impl Backend, i: usize) -> Result<usize, String> {
        let n = self.pick(i, false).ok_or("no neighbour to delete")?;
        let nb = self.list[n].clone();
        let kube = self
            .kube(b, nb.place)
            .ok_or("no cluster for the neighbour")?;
        delete_service(b, kube, &nb.namespace, &nb.name, &nb.uid).await?;
        self.list[n].gone = true;
        Ok(n)
    }

    /// Deletes every neighbour and copy still there (before the Service's end, so that its
    /// name and floating IPs are free for the Service created from scratch); the
    /// violations of their deletion (their floating IPs stay in the account, unassigned
    /// unless `web_claims` them: then they go to the Service).
    pub async fn remove_all(
        &mut self,
        b: &impl Backend,
        web_claims: &[String],
    ) -> Result<Vec<Violation>, String> {
        let mut out = Vec::new();
        for c in std::mem::take(&mut self.copies) {
            let Some(kube) = self.kube(b, c.place) else {
                continue;
            };
            delete_service(b, kube, &c.namespace, &c.name, &c.uid).await?;
        }
        for n in 0..self.list.len() {
            if self.list[n].gone {
                continue;
            }
            let nb = self.list[n].clone();
            let lb = load_balancers_of(b.cloud(), &nb.uid);
            self.delete(b, n).await?;
            let free: Vec<String> = nb
                .fips
                .iter()
                .filter(|f| !web_claims.contains(f))
                .cloned()
                .collect();
            out.extend(
                measure::gone_checks(b, &nb.uid, &free, super::End::Delete)
                    .await
                    .into_iter()
                    .map(|v| Violation {
                        property: v.property,
                        detail: format!(
                            "neighbour {}/{} (load balancer {}): {}",
                            nb.namespace,
                            nb.name,
                            uuids(&lb),
                            v.detail
                        ),
                    }),
            );
        }
        Ok(out)
    }

    /// What each neighbour still there looks like as a change begins.
    pub async fn open(&self, b: &impl Backend) -> Result<Vec<Before>, String> {
        let mut out = Vec::new();
        for (index, n) in self.list.iter().enumerate().filter(|(_, n)| !n.gone) {
            let Some(lb) = load_balancers_of(b.cloud(), &n.uid).into_iter().next() else {
                continue;
            };
            let fips = n
                .fips
                .iter()
                .filter_map(|f| address_of(f))
                .filter(|a| delivers_to(b.cloud(), *a) == Some(lb))
                .collect();
            out.push(Before {
                index,
                lb,
                fingerprint: fingerprint(b, lb).await?,
                fips,
                t0: b.cloud().now(),
            });
        }
        Ok(out)
    }

    /// Property 6 over the change's window: every neighbour the change does not concern
    /// kept its load balancer, its configuration and its service (0 s). A neighbour the
    /// change edits or deletes, and every neighbour on a node change of its cluster (its
    /// members follow the nodes), is not judged.
    pub async fn judge(
        &self,
        b: &impl Backend,
        before: &[Before],
        change: &Change,
        concerned: Option<usize>,
    ) -> Result<(usize, Vec<Violation>), String> {
        let node_change = matches!(
            change,
            Change::NodeJoin(_)
                | Change::NodeRelabel(_)
                | Change::NodeStop(_)
                | Change::NodeStart(_)
                | Change::NodeDelete(_)
        );
        let mut checks = 0;
        let mut out = Vec::new();
        for w in before {
            let n = &self.list[w.index];
            if n.gone
                || Some(w.index) == concerned
                || (node_change && n.place != Place::OtherCluster)
            {
                continue;
            }
            checks += 1;
            let who = format!(
                "{}: neighbour {}/{}",
                change_text(change),
                n.namespace,
                n.name
            );
            let lb_now = load_balancers_of(b.cloud(), &n.uid);
            if lb_now != vec![w.lb] {
                out.push(Violation {
                    property: "neighbour-untouched",
                    detail: format!(
                        "{who}: its load balancer {} is now {}",
                        w.lb,
                        uuids(&lb_now)
                    ),
                });
                continue;
            }
            let now = fingerprint(b, w.lb).await?;
            if let Some(diff) = first_difference(&w.fingerprint, &now) {
                out.push(Violation {
                    property: "neighbour-untouched",
                    detail: format!("{who}: its load balancer changed: {diff}"),
                });
            }
            out.extend(downtime(b, w, &who));
        }
        Ok((checks, out))
    }
}

/// A change as the violations name it (the case's JSON form).
fn change_text(change: &Change) -> String {
    serde_json::to_string(change).unwrap_or_default()
}

/// The load balancer a floating IP address delivers to now, by fakecloud's data plane.
fn delivers_to(cloud: &fakecloud::App, address: IpAddr) -> Option<Uuid> {
    cloud.read("", |ctx| {
        ctx.st
            .dataplane()
            .floating
            .iter()
            .rev()
            .find(|e| e.address == address)
            .and_then(|e| e.load_balancer)
    })
}

/// When the floating IP `network` last came to deliver to `lb`, if it does now.
pub fn assigned_at(cloud: &fakecloud::App, network: &str, lb: Uuid) -> Option<Time> {
    let address = address_of(network)?;
    cloud.read("", |ctx| {
        let events: Vec<_> = ctx
            .st
            .dataplane()
            .floating
            .iter()
            .filter(|e| e.address == address)
            .collect();
        let last = events.last()?;
        (last.load_balancer == Some(lb)).then_some(last.at)
    })
}

/// 0 s on every VIP and held floating IP × port of the neighbour, for the first client
/// (neighbours restrict no source).
fn downtime(b: &impl Backend, w: &Before, who: &str) -> Vec<Violation> {
    let t1 = b.cloud().now();
    let start = w.t0 - fakecloud::clock::delta_from_secs(1.0);
    let mut out = Vec::new();
    for e in availability(b.cloud(), w.lb, (start, t1), CLIENTS[0]) {
        if e.kind == EntryKind::FloatingIp && !w.fips.contains(&e.address) {
            continue;
        }
        let down = merged(&e.down);
        // Down before the change already (its nodes were stopped by an earlier change).
        if down.iter().any(|(a, _)| *a <= start) {
            continue;
        }
        let took = seconds(&down);
        if took > b.slack() {
            out.push(Violation {
                property: "neighbour-untouched",
                detail: format!(
                    "{who}: {}:{}/{} down {took:.1} s through another Service's change",
                    e.address, e.port, e.protocol
                ),
            });
        }
    }
    out
}

/// Property 7 for [`Change::Hand`]: `fip` delivers to the taker's load balancer (the
/// Service's with UID `taker`) within [`HAND_OVER_S`] of `released`.
pub fn handed(b: &impl Backend, fip: &str, taker: &str, released: Time) -> Option<Violation> {
    let Some(lb) = load_balancers_of(b.cloud(), taker).into_iter().next() else {
        return Some(Violation {
            property: "conflict-resolved",
            detail: format!("the Service taking {fip} has no load balancer"),
        });
    };
    match assigned_at(b.cloud(), fip, lb) {
        None => Some(Violation {
            property: "conflict-resolved",
            detail: format!("{fip} did not reach the load balancer of the Service claiming it"),
        }),
        Some(at) => {
            let took = (at - released).num_milliseconds() as f64 / 1000.0;
            (took > HAND_OVER_S).then(|| Violation {
                property: "conflict-resolved",
                detail: format!(
                    "{fip} reached the Service claiming it {took:.1} s after its holder let go (bound {HAND_OVER_S} s)"
                ),
            })
        }
    }
}

/// Property 7 for [`Change::ClaimOf`]: the neighbour keeps its floating IP and the
/// Service is told why it does not get it.
pub async fn claim_refused(
    b: &impl Backend,
    nbs: &Neighbours<'_>,
    fip: &str,
    web_uid: &str,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let holder = nbs
        .list
        .iter()
        .find(|n| !n.gone && n.fips.iter().any(|f| f == fip));
    if let Some(h) = holder {
        let lb = load_balancers_of(b.cloud(), &h.uid).into_iter().next();
        let at = address_of(fip).and_then(|a| delivers_to(b.cloud(), a));
        if lb.is_none() || at != lb {
            out.push(Violation {
                property: "conflict-resolved",
                detail: format!(
                    "{fip} of neighbour {}/{} was taken by a later claim (it delivers to {})",
                    h.namespace,
                    h.name,
                    uuids(&at.into_iter().collect::<Vec<_>>())
                ),
            });
        }
    }
    let web_lb = load_balancers_of(b.cloud(), web_uid).into_iter().next();
    if web_lb.is_some() && address_of(fip).and_then(|a| delivers_to(b.cloud(), a)) == web_lb {
        return out;
    }
    let address = fip.split('/').next().unwrap_or(fip);
    let warned = warnings(&b.kube(), "default", "web")
        .await
        .iter()
        .any(|m| m.contains(address));
    if !warned {
        out.push(Violation {
            property: "conflict-resolved",
            detail: format!("no Warning tells the Service why it does not get {fip}"),
        });
    }
    out
}

/// Property 7 for [`Change::CopyOf`]: the copy got no load balancer and a Warning.
pub async fn copy_refused(b: &impl Backend, nbs: &Neighbours<'_>) -> Vec<Violation> {
    let Some(c) = nbs.copies.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let taken = load_balancers_of(b.cloud(), &c.uid);
    if !taken.is_empty() {
        out.push(Violation {
            property: "conflict-resolved",
            detail: format!(
                "the copy {}/{} got load balancers {}",
                c.namespace,
                c.name,
                uuids(&taken)
            ),
        });
    }
    if let Some(kube) = nbs.kube(b, c.place)
        && warnings(&kube, &c.namespace, &c.name).await.is_empty()
    {
        out.push(Violation {
            property: "conflict-resolved",
            detail: format!("no Warning on the copy {}/{}", c.namespace, c.name),
        });
    }
    out
}

async fn warnings(kube: &kube::Client, namespace: &str, name: &str) -> Vec<String> {
    Api::<Event>::namespaced(kube.clone(), namespace)
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .filter_map(|e| e.message)
        .collect()
}

/// The load balancer `lb` with its pools, members, listeners, monitors and floating IPs
/// as fakecloud's API shows them, UUIDs kept, health and status left out.
async fn fingerprint(b: &impl Backend, lb: Uuid) -> Result<Value, String> {
    let mut v = super::scratch::parts(b, lb).await?;
    strip_health(&mut v);
    Ok(v)
}

fn strip_health(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for k in ["status", "monitor_status", "operational_status"] {
                m.remove(k);
            }
            m.values_mut().for_each(strip_health);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_health),
        _ => {}
    }
}

fn first_difference(a: &Value, b: &Value) -> Option<String> {
    super::scratch::first_difference(a, b).map(|d| {
        d.replace("after the changes", "before")
            .replace("created from scratch", "after")
    })
}

fn manifest(namespace: &str, name: &str, port: u16, fips: &[String]) -> Result<Service, String> {
    let mut v = json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "http", "port": port, "protocol": "TCP"}]},
    });
    if !fips.is_empty() {
        v["metadata"]["annotations"] = json!({
            format!("{A}floating-ips"): serde_json::to_string(fips).map_err(|e| e.to_string())?
        });
    }
    serde_json::from_value(v).map_err(|e| e.to_string())
}

async fn ensure_namespace(kube: &kube::Client, name: &str) -> Result<(), String> {
    let api: Api<Namespace> = Api::all(kube.clone());
    if api
        .get_opt(name)
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        return Ok(());
    }
    let ns =
        serde_json::from_value(json!({"metadata": {"name": name}})).map_err(|e| e.to_string())?;
    api.create(&PostParams::default(), &ns)
        .await
        .map(|_| ())
        .map_err(|e| format!("creating namespace {name}: {e}"))
}

/// The neighbour's endpoints: one ready endpoint on each of `nodes`.
async fn write_slice(
    kube: &kube::Client,
    namespace: &str,
    service: &str,
    nodes: &[String],
) -> Result<(), String> {
    let name = format!("{service}-props");
    let endpoints: Vec<Value> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            json!({"addresses": [format!("10.244.{}.{}", 100 + i, 10)],
                   "conditions": {"ready": true}, "nodeName": node})
        })
        .collect();
    let body = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    });
    upsert_slice(kube, namespace, &name, body).await
}

/// Writes EndpointSlice `name` in `namespace`: created, or merge-patched when it exists.
pub(super) async fn upsert_slice(
    kube: &kube::Client,
    namespace: &str,
    name: &str,
    body: Value,
) -> Result<(), String> {
    let api: Api<EndpointSlice> = Api::namespaced(kube.clone(), namespace);
    let exists = api
        .get_opt(name)
        .await
        .map_err(|e| format!("reading EndpointSlice {namespace}/{name}: {e}"))?
        .is_some();
    let written = if exists {
        api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
    } else {
        let slice: EndpointSlice = serde_json::from_value(body).map_err(|e| e.to_string())?;
        api.create(&PostParams::default(), &slice).await
    };
    written
        .map(|_| ())
        .map_err(|e| format!("writing EndpointSlice {namespace}/{name}: {e}"))
}

async fn delete_service(
    b: &impl Backend,
    kube: kube::Client,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Result<(), String> {
    let from = Mark::now(b);
    Api::<Service>::namespaced(kube, namespace)
        .delete(name, &DeleteParams::default())
        .await
        .map_err(|e| format!("deleting {namespace}/{name}: {e}"))?;
    measure::settle_gone(b, &from, uid).await;
    Ok(())
}

/// Waits until neighbour `n` has its load balancer with its floating IPs delivering to it
/// and the CCMs are quiet.
async fn wait_served(b: &impl Backend, n: &Nb) -> Result<(), String> {
    for _ in 0..180 {
        b.pass(Duration::from_secs(5)).await;
        let Some(lb) = load_balancers_of(b.cloud(), &n.uid).into_iter().next() else {
            continue;
        };
        let running = b.cloud().read("", |ctx| {
            ctx.st
                .load_balancers()
                .get(&lb)
                .is_some_and(|l| l.status(ctx.now) == "running")
        });
        let fips = n
            .fips
            .iter()
            .filter_map(|f| address_of(f))
            .all(|a| delivers_to(b.cloud(), a) == Some(lb));
        if running && fips && measure::quiet(b.cloud()) {
            return Ok(());
        }
    }
    Err(format!(
        "not-converged: neighbour {}/{} has no running load balancer after 15 minutes",
        n.namespace, n.name
    ))
}
