//! Volumes (`/v1/volumes`): block storage, attached to at most one server. A server's root
//! volume and the extra volumes of a server create are ordinary volumes of this collection.
//!
//! The attachment is held twice, kept in step by this module alone: `Volume::server` (what
//! `/v1/volumes` shows) and `Server::volumes` (the order `/v1/servers` lists them in, root
//! first). Rules: fakecloud/MODEL.md, "Volumes and volume snapshots".

use crate::clock::{Time, delta_from_secs};
use crate::error::{ApiError, ApiResult};
use crate::model::servers::ZoneStub;
use crate::model::store::{Ctx, Href, NamedStub, State, Tags, TimeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// The values of a volume's `type` (`ssd` when omitted).
pub const VOLUME_TYPES: [&str; 2] = ["ssd", "bulk"];
/// At most this many volumes (root included) on one server.
pub const MAX_VOLUMES_PER_SERVER: usize = 128;
/// Virtual seconds a revert keeps `current_operation` non-null [INF].
pub const REVERT_S: f64 = 5.0;

pub const ATTACH_LIMIT: &str =
    "Due to internal limitations, it is currently not possible to attach more than 128 volumes.";
pub const REVERT_ATTACHED: &str =
    "Cannot revert non-root volumes while they are attached to a server.";
pub const REVERT_ROOT_RUNNING: &str =
    "Root volumes can only be reverted if server state is \"stopped\".";
pub const SNAPSHOTS_EXIST: &str = "Snapshots exist for this volume. The snapshot must be deleted before the volume can be deleted.";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Volume {
    pub uuid: Uuid,
    pub name: String,
    pub size_gb: i64,
    /// `ssd` or `bulk`.
    #[serde(rename = "type")]
    pub kind: String,
    pub zone: String,
    /// The server it is attached to.
    pub server: Option<Uuid>,
    /// The server whose root volume this is (it then is attached to it, for good).
    pub root_of: Option<Uuid>,
    pub tags: Tags,
    pub created_at: Time,
    /// While set and in the future, a revert runs (`current_operation: "revert"`).
    pub revert_until: Option<Time>,
}

#[derive(Serialize)]
pub struct VolumeView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub size_gb: i64,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub zone: ZoneStub<'a>,
    pub server_uuids: Vec<Uuid>,
    pub servers: Vec<NamedStub<'a>>,
    pub current_operation: Option<&'static str>,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

impl Volume {
    pub fn current_operation(&self, now: Time) -> Option<&'static str> {
        match self.revert_until {
            Some(t) if now < t => Some("revert"),
            _ => None,
        }
    }

    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> VolumeView<'a> {
        let servers: Vec<NamedStub<'a>> = self
            .server
            .and_then(|s| ctx.st.servers.get(&s))
            .map(|s| NamedStub {
                href: ctx.href_of("servers", s.uuid),
                uuid: s.uuid,
                name: &s.name,
            })
            .into_iter()
            .collect();
        VolumeView {
            href: ctx.href_of("volumes", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            size_gb: self.size_gb,
            kind: &self.kind,
            zone: ZoneStub { slug: &self.zone },
            server_uuids: servers.iter().map(|s| s.uuid).collect(),
            servers,
            current_operation: self.current_operation(ctx.now),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// The size rules of a volume type: `None` if `size` is fine, else the message (under
/// `size_gb`). `root`: a server's root volume (at least 10 GiB).
pub fn size_error(kind: &str, size: i64, root: bool) -> Option<String> {
    match kind {
        "bulk" if size < 100 => Some("Ensure this value is greater than or equal to 100.".into()),
        "bulk" if size % 100 != 0 => {
            Some("The size of bulk volumes must be a multiple of 100.".into())
        }
        _ if root && size < 10 => Some("Ensure this value is greater than or equal to 10.".into()),
        _ if size < 1 => Some("Ensure this value is greater than or equal to 1.".into()),
        _ => None,
    }
}

/// Checks that `server` exists, is in `zone` and has room for one more volume. The
/// messages go under the attachment field (`server_uuids`), except the limit (`detail`).
pub fn check_attach(st: &State, server: Uuid, zone: &str, field: &str) -> ApiResult<()> {
    let s = st.servers.get(&server).ok_or_else(|| {
        ApiError::field(
            field,
            format!("Invalid pk \"{server}\" - object does not exist."),
        )
    })?;
    if s.zone != zone {
        return Err(ApiError::field(
            field,
            format!(
                "The server is in zone {}, the volume in zone {zone}.",
                s.zone
            ),
        ));
    }
    if s.volumes.len() >= MAX_VOLUMES_PER_SERVER {
        return Err(ApiError::detail(ATTACH_LIMIT));
    }
    Ok(())
}

/// Moves volume `id` to `target` (`None`: detached), keeping both sides in step.
pub(in crate::model) fn set_attachment(st: &mut State, id: Uuid, target: Option<Uuid>) {
    let Some(v) = st.volumes.get_mut(&id) else {
        return;
    };
    let previous = std::mem::replace(&mut v.server, target);
    if let Some(p) = previous.and_then(|p| st.servers.get_mut(&p)) {
        p.volumes.retain(|x| *x != id);
    }
    if let Some(s) = target.and_then(|t| st.servers.get_mut(&t)) {
        s.volumes.push(id);
    }
}

/// A volume to insert.
pub struct NewVolume {
    pub name: String,
    pub size_gb: i64,
    pub kind: String,
    pub zone: String,
    pub server: Option<Uuid>,
    pub root_of: Option<Uuid>,
    pub tags: Tags,
}

/// Inserts a volume (checks already made) and attaches it.
pub(in crate::model) fn insert_volume_unchecked(st: &mut State, now: Time, new: NewVolume) -> Uuid {
    let uuid = st.ids.new_uuid();
    st.volumes.insert(
        uuid,
        Volume {
            uuid,
            name: new.name,
            size_gb: new.size_gb,
            kind: new.kind,
            zone: new.zone,
            server: None,
            root_of: new.root_of,
            tags: new.tags,
            created_at: now,
            revert_until: None,
        },
    );
    if new.server.is_some() {
        set_attachment(st, uuid, new.server);
    }
    uuid
}

/// What a volume create asks for.
pub enum VolumeSource {
    Empty {
        size_gb: i64,
        kind: String,
        zone: String,
        server: Option<Uuid>,
    },
    Snapshot(Uuid),
}

/// `POST /v1/volumes`: an empty volume or a copy of a snapshot (size, type and zone
/// inherited; detached). Type and size rules are checked here too, for the callers that
/// do not go through the handler (seed files). Nothing changes on error.
pub fn create_volume(
    st: &mut State,
    now: Time,
    name: String,
    tags: Tags,
    source: VolumeSource,
) -> ApiResult<Uuid> {
    crate::model::volume_snapshots::purge(st, now);
    let new = match source {
        VolumeSource::Empty {
            size_gb,
            kind,
            zone,
            server,
        } => {
            if !VOLUME_TYPES.contains(&kind.as_str()) {
                return Err(ApiError::field(
                    "type",
                    format!(
                        "\"{kind}\" is not a valid choice. Expect one of: {}.",
                        VOLUME_TYPES.join(", ")
                    ),
                ));
            }
            if let Some(msg) = size_error(&kind, size_gb, false) {
                return Err(ApiError::field("size_gb", msg));
            }
            if let Some(s) = server {
                check_attach(st, s, &zone, "server_uuids")?;
            }
            NewVolume {
                name,
                size_gb,
                kind,
                zone,
                server,
                root_of: None,
                tags,
            }
        }
        VolumeSource::Snapshot(snap) => {
            let sn = st
                .volume_snapshots
                .get(&snap)
                .filter(|s| s.deleting_until.is_none())
                .ok_or_else(|| {
                    ApiError::field(
                        "volume_snapshot_uuid",
                        format!("Invalid pk \"{snap}\" - object does not exist."),
                    )
                })?;
            NewVolume {
                name,
                size_gb: sn.size_gb,
                kind: sn.kind.clone(),
                zone: sn.zone.clone(),
                server: None,
                root_of: None,
                tags,
            }
        }
    };
    Ok(insert_volume_unchecked(st, now, new))
}

/// The changeable fields of a volume (`None`: unchanged). `server`: `Some(None)` detaches.
#[derive(Debug, Default)]
pub struct VolumePatch {
    pub name: Option<String>,
    pub size_gb: Option<i64>,
    pub server: Option<Option<Uuid>>,
    pub tags: Option<Tags>,
}

/// `PATCH /v1/volumes/{uuid}`: grow-only resize, attach / move / detach (root volumes stay
/// on their server), rename, tags. Nothing changes on error.
pub fn update_volume(st: &mut State, id: Uuid, patch: VolumePatch) -> ApiResult<()> {
    let v = st.volumes.get(&id).ok_or(ApiError::NotFound)?;
    if let Some(size) = patch.size_gb {
        if let Some(msg) = size_error(&v.kind, size, v.root_of.is_some()) {
            return Err(ApiError::field("size_gb", msg));
        }
        if size < v.size_gb {
            return Err(ApiError::field(
                "size_gb",
                format!("Volumes can only grow: the volume has {} GiB.", v.size_gb),
            ));
        }
    }
    if let Some(target) = patch.server
        && target != v.server
    {
        if v.root_of.is_some() {
            return Err(ApiError::field(
                "server_uuids",
                "The root volume of a server cannot be detached or moved.",
            ));
        }
        if let Some(s) = target {
            check_attach(st, s, &v.zone, "server_uuids")?;
        }
    }
    let v = st.volumes.get_mut(&id).ok_or(ApiError::NotFound)?;
    if let Some(n) = patch.name {
        v.name = n;
    }
    if let Some(s) = patch.size_gb {
        v.size_gb = s;
    }
    if let Some(t) = patch.tags {
        v.tags = t;
    }
    if let Some(target) = patch.server
        && target != v.server
    {
        set_attachment(st, id, target);
    }
    Ok(())
}

/// Whether volume `id` has snapshots (also `deleting` ones, until they are gone).
pub fn has_snapshots(st: &State, id: Uuid, now: Time) -> bool {
    st.volume_snapshots
        .values()
        .any(|s| s.source_volume == id && !s.gone(now))
}

/// `DELETE /v1/volumes/{uuid}`: attached non-root volumes may go; root volumes go with
/// their server only; a volume with snapshots stays.
pub fn delete_volume(st: &mut State, id: Uuid, now: Time) -> ApiResult<()> {
    let v = st.volumes.get(&id).ok_or(ApiError::NotFound)?;
    if v.root_of.is_some() {
        return Err(ApiError::detail(
            "The root volume of a server cannot be deleted; delete the server instead.",
        ));
    }
    if has_snapshots(st, id, now) {
        return Err(ApiError::detail(SNAPSHOTS_EXIST));
    }
    set_attachment(st, id, None);
    st.volumes.shift_remove(&id);
    Ok(())
}

/// `POST /v1/volumes/{uuid}/revert`: back to the volume's most recent snapshot.
pub fn revert_volume(st: &mut State, id: Uuid, snapshot: Uuid, now: Time) -> ApiResult<()> {
    crate::model::volume_snapshots::purge(st, now);
    let v = st.volumes.get(&id).ok_or(ApiError::NotFound)?;
    let latest = st
        .volume_snapshots
        .values()
        .filter(|s| s.source_volume == id && s.deleting_until.is_none())
        // Several snapshots in one virtual instant: the last created is the most recent.
        .max_by_key(|s| s.created_at)
        .map(|s| s.uuid);
    let Some(sn) = st
        .volume_snapshots
        .get(&snapshot)
        .filter(|s| s.source_volume == id && s.deleting_until.is_none())
    else {
        return Err(ApiError::field(
            "snapshot",
            format!("Invalid pk \"{snapshot}\" - object does not exist."),
        ));
    };
    if latest != Some(sn.uuid) {
        return Err(ApiError::field(
            "snapshot",
            "Only the most recent snapshot of a volume can be reverted to.",
        ));
    }
    match (v.root_of, v.server) {
        (Some(server), _) => {
            let stopped = st
                .servers
                .get(&server)
                .is_some_and(|s| s.status(now) == "stopped");
            if !stopped {
                return Err(ApiError::detail(REVERT_ROOT_RUNNING));
            }
        }
        (None, Some(_)) => return Err(ApiError::detail(REVERT_ATTACHED)),
        (None, None) => {}
    }
    if let Some(v) = st.volumes.get_mut(&id) {
        v.revert_until = Some(now + delta_from_secs(REVERT_S));
    }
    Ok(())
}

/// The volumes of a new server: the root volume (`ssd`) then `extra` in order, all attached
/// to `server`, named after it [INF].
pub(in crate::model) fn create_server_volumes(
    st: &mut State,
    now: Time,
    server: Uuid,
    server_name: &str,
    zone: &str,
    root_size_gb: i64,
    extra: &[(String, i64)],
) {
    insert_volume_unchecked(
        st,
        now,
        NewVolume {
            name: format!("{server_name}-root"),
            size_gb: root_size_gb,
            kind: "ssd".to_string(),
            zone: zone.to_string(),
            server: Some(server),
            root_of: Some(server),
            tags: Tags::new(),
        },
    );
    for (i, (kind, size)) in extra.iter().enumerate() {
        insert_volume_unchecked(
            st,
            now,
            NewVolume {
                name: format!("{server_name}-volume-{}", i + 1),
                size_gb: *size,
                kind: kind.clone(),
                zone: zone.to_string(),
                server: Some(server),
                root_of: None,
                tags: Tags::new(),
            },
        );
    }
}

/// What deleting server `id` does to its volumes: checked first (a root volume with
/// snapshots keeps the server [INF]), then the root volume goes and the others are
/// detached [INF].
pub(in crate::model) fn check_server_delete(st: &State, id: Uuid, now: Time) -> ApiResult<()> {
    let root_with_snapshots = st
        .volumes
        .values()
        .any(|v| v.root_of == Some(id) && has_snapshots(st, v.uuid, now));
    if root_with_snapshots {
        return Err(ApiError::detail(format!(
            "{SNAPSHOTS_EXIST} (the server's root volume)"
        )));
    }
    Ok(())
}

pub(in crate::model) fn release_server_volumes(st: &mut State, id: Uuid) {
    st.volumes.retain(|_, v| v.root_of != Some(id));
    for v in st.volumes.values_mut() {
        if v.server == Some(id) {
            v.server = None;
        }
    }
}
