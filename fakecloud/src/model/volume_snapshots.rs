//! Volume snapshots (`/v1/volume-snapshots`): point-in-time copies of one volume.
//!
//! A snapshot is `creating` for `SNAPSHOT_CREATE_S` virtual seconds, then `available`;
//! after a DELETE it is `deleting` for `SNAPSHOT_DELETE_S`, then gone (404). Nothing runs in
//! the background: readers compare the stored times with the clock, and writes purge the
//! snapshots whose deletion is over. Rules: fakecloud/MODEL.md, "Volumes and volume snapshots".

use crate::clock::{Time, delta_from_secs};
use crate::error::{ApiError, ApiResult};
use crate::model::servers::ZoneStub;
use crate::model::store::{Ctx, Href, NamedStub, State, Tags, TimeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Virtual seconds a new snapshot is `creating` [INF: clients allow 30 s].
pub const SNAPSHOT_CREATE_S: f64 = 2.0;
/// Virtual seconds a deleted snapshot stays visible as `deleting` [INF: clients allow 10 s].
pub const SNAPSHOT_DELETE_S: f64 = 2.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VolumeSnapshot {
    pub uuid: Uuid,
    pub name: String,
    pub source_volume: Uuid,
    /// Size, type and zone of the source volume when the snapshot was taken.
    pub size_gb: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub zone: String,
    pub tags: Tags,
    pub created_at: Time,
    /// `creating` until then, `available` after.
    pub available_at: Time,
    /// Set by DELETE: `deleting` until then, gone after.
    pub deleting_until: Option<Time>,
}

#[derive(Serialize)]
pub struct SnapshotView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub size_gb: i64,
    pub zone: ZoneStub<'a>,
    pub source_volume: NamedStub<'a>,
    pub status: &'static str,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

impl VolumeSnapshot {
    pub fn status(&self, now: Time) -> &'static str {
        if self.deleting_until.is_some() {
            "deleting"
        } else if now < self.available_at {
            "creating"
        } else {
            "available"
        }
    }

    /// Deleted and the deletion is over: no longer visible.
    pub fn gone(&self, now: Time) -> bool {
        self.deleting_until.is_some_and(|t| now >= t)
    }

    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> SnapshotView<'a> {
        SnapshotView {
            href: ctx.href_of("volume-snapshots", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            size_gb: self.size_gb,
            zone: ZoneStub { slug: &self.zone },
            source_volume: NamedStub {
                href: ctx.href_of("volumes", self.source_volume),
                uuid: self.source_volume,
                name: ctx
                    .st
                    .volumes
                    .get(&self.source_volume)
                    .map(|v| v.name.as_str())
                    .unwrap_or(""),
            },
            status: self.status(ctx.now),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// Drops the snapshots whose deletion is over.
pub(in crate::model) fn purge(st: &mut State, now: Time) {
    st.volume_snapshots.retain(|_, s| !s.gone(now));
}

/// What a snapshot is created from.
#[derive(Debug, Clone)]
pub struct NewSnapshot {
    pub name: String,
    pub source_volume: Uuid,
    pub tags: Tags,
    /// `true`: `available` at once (seed files: the snapshot already existed, as for settled
    /// servers); `false`: `creating` first, like an API-created one.
    pub settled: bool,
}

/// `POST /v1/volume-snapshots`: a snapshot of `source_volume` (also a root volume of a
/// running server). Nothing changes on error.
pub fn create_snapshot(st: &mut State, now: Time, new: NewSnapshot) -> ApiResult<Uuid> {
    purge(st, now);
    let source = new.source_volume;
    let v = st.volumes.get(&source).ok_or_else(|| {
        ApiError::field(
            "source_volume",
            format!("Invalid pk \"{source}\" - object does not exist."),
        )
    })?;
    let (size_gb, kind, zone) = (v.size_gb, v.kind.clone(), v.zone.clone());
    let uuid = st.ids.new_uuid();
    let available_at = if new.settled {
        now
    } else {
        now + delta_from_secs(SNAPSHOT_CREATE_S)
    };
    st.volume_snapshots.insert(
        uuid,
        VolumeSnapshot {
            uuid,
            name: new.name,
            source_volume: source,
            size_gb,
            kind,
            zone,
            tags: new.tags,
            created_at: now,
            available_at,
            deleting_until: None,
        },
    );
    Ok(uuid)
}

/// The changeable fields of a snapshot (`None`: unchanged).
#[derive(Debug, Default)]
pub struct SnapshotPatch {
    pub name: Option<String>,
    pub tags: Option<Tags>,
}

pub fn update_snapshot(st: &mut State, id: Uuid, now: Time, patch: SnapshotPatch) -> ApiResult<()> {
    purge(st, now);
    let s = st.volume_snapshots.get_mut(&id).ok_or(ApiError::NotFound)?;
    if let Some(n) = patch.name {
        s.name = n;
    }
    if let Some(t) = patch.tags {
        s.tags = t;
    }
    Ok(())
}

/// `DELETE /v1/volume-snapshots/{uuid}`: `deleting`, then gone. A second DELETE while it is
/// `deleting` is accepted and changes nothing.
pub fn delete_snapshot(st: &mut State, id: Uuid, now: Time) -> ApiResult<()> {
    purge(st, now);
    let s = st.volume_snapshots.get_mut(&id).ok_or(ApiError::NotFound)?;
    if s.deleting_until.is_none() {
        s.deleting_until = Some(now + delta_from_secs(SNAPSHOT_DELETE_S));
    }
    Ok(())
}
