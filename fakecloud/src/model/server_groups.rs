//! Server groups: anti-affinity groups; members are the servers that name the group.

use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, State, Tags};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerGroup {
    pub uuid: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub zone: String,
    pub tags: Tags,
    pub created_at: Time,
}

impl ServerGroup {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("server-groups", self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "type": self.kind,
            "zone": Ctx::zone_stub(&self.zone),
            "servers": ctx.st.servers.values()
                .filter(|s| s.server_groups.contains(&self.uuid))
                .map(|s| ctx.server_stub(s.uuid))
                .collect::<Vec<_>>(),
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

pub struct NewServerGroup {
    pub name: String,
    pub kind: String,
    pub zone: String,
    pub tags: Tags,
}

pub fn insert_server_group(st: &mut State, now: Time, new: NewServerGroup) -> Uuid {
    let uuid = st.ids.new_uuid();
    st.server_groups.insert(
        uuid,
        ServerGroup {
            uuid,
            name: new.name,
            kind: new.kind,
            zone: new.zone,
            tags: new.tags,
            created_at: now,
        },
    );
    uuid
}

/// The changeable fields of a group (`None`: unchanged).
#[derive(Default)]
pub struct GroupPatch {
    pub name: Option<String>,
    pub tags: Option<Tags>,
}

pub fn update_server_group(st: &mut State, id: Uuid, patch: GroupPatch) -> ApiResult<()> {
    let group = st.server_groups.get_mut(&id).ok_or(ApiError::NotFound)?;
    if let Some(n) = patch.name {
        group.name = n;
    }
    if let Some(t) = patch.tags {
        group.tags = t;
    }
    Ok(())
}

/// Servers leave a deleted group.
pub fn delete_server_group(st: &mut State, id: Uuid) -> ApiResult<()> {
    st.server_groups
        .shift_remove(&id)
        .ok_or(ApiError::NotFound)?;
    for s in st.servers.values_mut() {
        s.server_groups.retain(|g| *g != id);
    }
    Ok(())
}
