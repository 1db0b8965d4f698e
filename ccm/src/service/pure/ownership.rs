//! Which load balancer is a Service's, decided before anything is written. Pure.
//!
//! Every load balancer this CCM creates carries the tags `k8s.cloudscale.ch/cluster` and
//! `k8s.cloudscale.ch/service-uid`. A Service's candidates are the load balancers with its
//! UUID annotation, with its name, or tagged with its UID:
//!
//! - tagged with this Service's UID: its own (however it is named now: a renamed load
//!   balancer is found by its tag, so removing the UUID annotation with a rename never
//!   orphans it);
//! - tagged with another UID: another Service's (here or in another cluster on the same
//!   account): never adopted, changed or deleted; the Service is refused with a Warning that
//!   names the owner. A Service copied with its UUID annotation, or named like another's
//!   load balancer, thus never takes it over;
//! - untagged (made by hand, or by a CCM that does not tag, such as the Go reference):
//!   adopted (tagged) only when no other Service of the cluster claims it as strongly: a
//!   claim by name is stronger than a claim by the UUID annotation alone.

use super::model::Tags;
use uuid::Uuid;

pub const TAG_CLUSTER: &str = "k8s.cloudscale.ch/cluster";
pub const TAG_SERVICE_UID: &str = "k8s.cloudscale.ch/service-uid";
/// The Service's `namespace/name`, for people reading the account (the cloud control
/// panel, fakecloud's console): set on what the CCM creates, never a reason to write, and
/// never read to decide ownership (the UID says whose it is).
pub const TAG_SERVICE: &str = "k8s.cloudscale.ch/service";

/// A load balancer of the account, as far as ownership goes: what names it and whose it
/// says it is. The cloud edge makes one of each load balancer it lists, borrowing its name
/// and tags: every Service resolves over the whole account at every pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub uuid: Uuid,
    pub name: &'a str,
    pub tags: &'a Tags,
}

/// The Service looking for its load balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seeker<'a> {
    pub uid: &'a str,
    /// The load balancer name it wants.
    pub name: &'a str,
    /// Its UUID annotation.
    pub uuid: Option<Uuid>,
}

/// Another LoadBalancer Service of the cluster, as far as claims go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimant {
    /// `namespace/name`.
    pub service: String,
    pub uid: String,
    pub lb_name: String,
    pub lb_uuid: Option<Uuid>,
}

/// Who owns a load balancer that is not the seeker's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// A Service of this cluster (`namespace/name`).
    Service(String),
    /// A Service UID this cluster does not know (another cluster, or a deleted Service).
    Unknown {
        uid: String,
        cluster: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Resolution<'a> {
    /// No load balancer yet: create one.
    None,
    /// Its own (tagged with its UID).
    Owned(&'a Candidate<'a>),
    /// Untagged and not claimed as strongly by another Service: adopt (tag) it.
    Adopt(&'a Candidate<'a>),
    /// Another Service's: refuse.
    Foreign { lb: &'a Candidate<'a>, owner: Owner },
    /// Untagged, and another Service claims it as strongly: refuse until one lets go.
    Contested {
        lb: &'a Candidate<'a>,
        others: Vec<String>,
    },
    /// Several load balancers are its own, or several untagged ones match.
    Ambiguous(Vec<&'a Candidate<'a>>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    None,
    ByUuid,
    ByName,
}

fn strength(lb: &Candidate, name: &str, uuid: Option<Uuid>) -> Strength {
    if !name.is_empty() && lb.name == name {
        Strength::ByName
    } else if uuid == Some(lb.uuid) {
        Strength::ByUuid
    } else {
        Strength::None
    }
}

/// Finds the seeker's load balancer among `lbs` (every load balancer of the account).
pub fn resolve<'a>(
    seeker: &Seeker,
    lbs: &'a [Candidate<'a>],
    cluster: &str,
    others: &[Claimant],
) -> Resolution<'a> {
    let tag_uid = |lb: &Candidate| lb.tags.get(TAG_SERVICE_UID).cloned();
    let mine: Vec<&Candidate> = lbs
        .iter()
        .filter(|lb| tag_uid(lb).as_deref() == Some(seeker.uid))
        .collect();
    match mine.as_slice() {
        [one] => return Resolution::Owned(one),
        [] => {}
        _ => return Resolution::Ambiguous(mine),
    }
    let candidates: Vec<&Candidate> = lbs
        .iter()
        .filter(|lb| strength(lb, seeker.name, seeker.uuid) > Strength::None)
        .collect();
    // The load balancer named in the UUID annotation comes first: it is the one the user
    // most likely copied.
    let mut foreign: Vec<&Candidate> = candidates
        .iter()
        .copied()
        .filter(|lb| tag_uid(lb).is_some())
        .collect();
    foreign.sort_by_key(|lb| strength(lb, "", seeker.uuid) != Strength::ByUuid);
    if let Some(lb) = foreign.first() {
        let uid = tag_uid(lb).unwrap_or_default();
        let lb_cluster = lb.tags.get(TAG_CLUSTER).cloned();
        let owner = match others.iter().find(|o| o.uid == uid) {
            Some(o) if lb_cluster.as_deref().is_none_or(|c| c == cluster) => {
                Owner::Service(o.service.clone())
            }
            _ => Owner::Unknown {
                uid,
                cluster: lb_cluster,
            },
        };
        return Resolution::Foreign { lb, owner };
    }
    match candidates.as_slice() {
        [] => Resolution::None,
        [lb] => {
            let mine = strength(lb, seeker.name, seeker.uuid);
            let rivals: Vec<String> = others
                .iter()
                .filter(|o| o.uid != seeker.uid && strength(lb, &o.lb_name, o.lb_uuid) >= mine)
                .map(|o| o.service.clone())
                .collect();
            if rivals.is_empty() {
                Resolution::Adopt(lb)
            } else {
                Resolution::Contested { lb, others: rivals }
            }
        }
        _ => Resolution::Ambiguous(candidates),
    }
}

/// The tags a Service's load balancer carries.
pub fn tags(cluster: &str, uid: &str) -> Tags {
    [
        (TAG_CLUSTER.to_string(), cluster.to_string()),
        (TAG_SERVICE_UID.to_string(), uid.to_string()),
    ]
    .into()
}

/// The tags that name the Service for people (see [`TAG_SERVICE`]).
pub fn labels(namespace: &str, name: &str) -> Tags {
    [(TAG_SERVICE.to_string(), format!("{namespace}/{name}"))].into()
}

/// Why a Service cannot have a load balancer it asks for, in words for a Warning Event.
pub fn refusal(r: &Resolution, own_uid: &str) -> Option<String> {
    let fix_uuid = "remove the k8s.cloudscale.ch/loadbalancer-uuid annotation if it was copied with the Service, and choose another k8s.cloudscale.ch/loadbalancer-name if that one is taken";
    match r {
        Resolution::Foreign { lb, owner } => Some(match owner {
            Owner::Service(s) => format!(
                "load balancer {} ({}) belongs to Service {s}: it is not adopted, changed or deleted; {fix_uuid}",
                lb.name, lb.uuid
            ),
            Owner::Unknown { uid, cluster } => format!(
                "load balancer {} ({}) belongs to the Service with UID {uid}{}, which this cluster does not have: it is not adopted, changed or deleted; {fix_uuid}, or, to take it over, set its tag {TAG_SERVICE_UID} to {own_uid}",
                lb.name,
                lb.uuid,
                cluster
                    .as_deref()
                    .map(|c| format!(" of cluster {c}"))
                    .unwrap_or_default()
            ),
        }),
        Resolution::Contested { lb, others } => Some(format!(
            "load balancer {} ({}) is claimed by Service {} as well: it is not adopted until only one Service names it; {fix_uuid}",
            lb.name,
            lb.uuid,
            others.join(", ")
        )),
        Resolution::Ambiguous(lbs) => Some(format!(
            "found more than one load balancer for this Service: {} (delete the extra one or fix the k8s.cloudscale.ch/loadbalancer-uuid annotation)",
            lbs.iter()
                .map(|lb| format!("{} ({})", lb.name, lb.uuid))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Resolution::None | Resolution::Owned(_) | Resolution::Adopt(_) => None,
    }
}

/// What a Service being removed may delete: every load balancer that is its own. `Err`
/// says why one it found is left alone (another Service's, or not provably its own).
pub fn doomed<'a>(r: &Resolution<'a>, own_uid: &str) -> Result<Vec<&'a Candidate<'a>>, String> {
    match r {
        Resolution::Owned(lb) | Resolution::Adopt(lb) => Ok(vec![*lb]),
        // Several tagged with this Service's UID: all of them are its own.
        Resolution::Ambiguous(lbs)
            if lbs
                .iter()
                .all(|lb| lb.tags.get(TAG_SERVICE_UID).map(String::as_str) == Some(own_uid)) =>
        {
            Ok(lbs.clone())
        }
        Resolution::None => Ok(Vec::new()),
        other => Err(refusal(other, own_uid).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A load balancer with UUID `uuid`, named `name`, tagged `tags` (a JSON object).
    /// (Its name and tags live as long as the test binary: a candidate borrows them.)
    fn lb(uuid: u128, name: &str, tags: serde_json::Value) -> Candidate<'static> {
        Candidate {
            uuid: Uuid::from_u128(uuid),
            name: Box::leak(name.to_string().into_boxed_str()),
            tags: Box::leak(Box::new(serde_json::from_value(tags).expect("tags"))),
        }
    }

    fn claimant(service: &str, uid: &str, lb_name: &str, lb_uuid: Option<u128>) -> Claimant {
        Claimant {
            service: service.into(),
            uid: uid.into(),
            lb_name: lb_name.into(),
            lb_uuid: lb_uuid.map(Uuid::from_u128),
        }
    }

    fn tagged(uid: &str) -> serde_json::Value {
        json!({TAG_CLUSTER: "c1", TAG_SERVICE_UID: uid})
    }

    #[test]
    fn a_copy_with_the_uuid_annotation_never_takes_the_original_load_balancer() {
        let lbs = [lb(1, "k8s-service-a1", tagged("a1"))];
        let others = [claimant("default/a1", "a1", "k8s-service-a1", Some(1))];
        let copy = Seeker {
            uid: "copy",
            name: "k8s-service-copy",
            uuid: Some(Uuid::from_u128(1)),
        };
        let r = resolve(&copy, &lbs, "c1", &others);
        assert_eq!(
            r,
            Resolution::Foreign {
                lb: &lbs[0],
                owner: Owner::Service("default/a1".into())
            }
        );
        let text = refusal(&r, "copy").expect("a refusal");
        assert!(text.contains("belongs to Service default/a1"), "{text}");
    }

    #[test]
    fn a_name_taken_by_another_services_load_balancer_is_refused() {
        let lbs = [lb(1, "shared", tagged("a1"))];
        let others = [claimant("default/a1", "a1", "shared", None)];
        let s = Seeker {
            uid: "b",
            name: "shared",
            uuid: None,
        };
        assert!(matches!(
            resolve(&s, &lbs, "c1", &others),
            Resolution::Foreign { .. }
        ));
    }

    #[test]
    fn the_own_load_balancer_is_found_by_its_tag_after_a_rename() {
        let lbs = [lb(1, "old-name", tagged("a1"))];
        let s = Seeker {
            uid: "a1",
            name: "new-name",
            uuid: None,
        };
        assert_eq!(resolve(&s, &lbs, "c1", &[]), Resolution::Owned(&lbs[0]));
    }

    #[test]
    fn an_owner_from_another_cluster_is_named_by_cluster() {
        let lbs = [lb(
            1,
            "x",
            json!({TAG_CLUSTER: "other", TAG_SERVICE_UID: "zz"}),
        )];
        let s = Seeker {
            uid: "a1",
            name: "x",
            uuid: None,
        };
        let r = resolve(&s, &lbs, "c1", &[]);
        let text = refusal(&r, "a1").expect("refused");
        assert!(text.contains("of cluster other"), "{text}");
        assert!(text.contains("set its tag"), "{text}");
    }

    #[test]
    fn untagged_load_balancers_are_adopted_by_the_strongest_claim_only() {
        let lbs = [lb(1, "k8s-service-a1", json!({}))];
        let a1 = Seeker {
            uid: "a1",
            name: "k8s-service-a1",
            uuid: Some(Uuid::from_u128(1)),
        };
        let copy = Seeker {
            uid: "copy",
            name: "k8s-service-copy",
            uuid: Some(Uuid::from_u128(1)),
        };
        let others_of_a1 = [claimant(
            "default/copy",
            "copy",
            "k8s-service-copy",
            Some(1),
        )];
        let others_of_copy = [claimant("default/a1", "a1", "k8s-service-a1", Some(1))];
        assert_eq!(
            resolve(&a1, &lbs, "c1", &others_of_a1),
            Resolution::Adopt(&lbs[0])
        );
        assert!(matches!(
            resolve(&copy, &lbs, "c1", &others_of_copy),
            Resolution::Contested { .. }
        ));
    }

    #[test]
    fn two_own_load_balancers_are_ambiguous() {
        let lbs = [lb(1, "a", tagged("a1")), lb(2, "b", tagged("a1"))];
        let s = Seeker {
            uid: "a1",
            name: "a",
            uuid: None,
        };
        let r = resolve(&s, &lbs, "c1", &[]);
        assert!(matches!(&r, Resolution::Ambiguous(v) if v.len() == 2));
        assert_eq!(doomed(&r, "a1").map(|v| v.len()), Ok(2));
    }

    #[test]
    fn a_removed_service_deletes_only_load_balancers_that_are_its_own() {
        let mixed = [lb(1, "a", tagged("a1")), lb(2, "a", json!({}))];
        let s = Seeker {
            uid: "a1",
            name: "a",
            uuid: None,
        };
        let own = resolve(&s, &mixed[..1], "c1", &[]);
        assert_eq!(doomed(&own, "a1"), Ok(vec![&mixed[0]]));
        assert_eq!(doomed(&Resolution::None, "a1"), Ok(vec![]));
        // One tagged, one untagged of the same name: the untagged one is not provably its own.
        let both = Resolution::Ambiguous(vec![&mixed[0], &mixed[1]]);
        let kept = doomed(&both, "a1").expect_err("kept");
        assert!(kept.contains("more than one load balancer"), "{kept}");
        let taken = [lb(3, "a", tagged("b2"))];
        let others = [claimant("default/b", "b2", "a", None)];
        let foreign = resolve(&s, &taken, "c1", &others);
        let kept = doomed(&foreign, "a1").expect_err("kept");
        assert!(kept.contains("belongs to Service default/b"), "{kept}");
    }
}
