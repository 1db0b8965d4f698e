//! Pools of a load balancer.

use super::{Verb, change, describe_pool, remove_pool};
use crate::clock::Time;
use crate::config::Timing;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, State, Tags};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pool {
    pub uuid: Uuid,
    pub name: String,
    pub load_balancer: Uuid,
    pub algorithm: String,
    pub protocol: String,
    pub tags: Tags,
    pub created_at: Time,
}

impl Pool {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("load-balancers/pools", self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "load_balancer": ctx.load_balancer_stub(self.load_balancer),
            "algorithm": self.algorithm,
            "protocol": self.protocol,
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

/// A pool to create; the load balancer is known to exist.
pub struct NewPool {
    pub name: String,
    pub load_balancer: Uuid,
    pub algorithm: String,
    pub protocol: String,
    pub tags: Tags,
}

pub fn create_pool(st: &mut State, now: Time, timing: &Timing, new: NewPool) -> ApiResult<Uuid> {
    let uuid = st.ids.new_uuid();
    change(st, now, timing, Verb::Create, describe_pool, uuid, |st| {
        st.pools.insert(
            uuid,
            Pool {
                uuid,
                name: new.name,
                load_balancer: new.load_balancer,
                algorithm: new.algorithm,
                protocol: new.protocol,
                tags: new.tags,
                created_at: now,
            },
        );
        Ok(uuid)
    })
}

/// The changeable fields of a pool (`None`: unchanged).
#[derive(Debug, Default)]
pub struct PoolPatch {
    pub name: Option<String>,
    pub tags: Option<Tags>,
}

pub fn update_pool(
    st: &mut State,
    id: Uuid,
    now: Time,
    timing: &Timing,
    patch: PoolPatch,
) -> ApiResult<()> {
    change(st, now, timing, Verb::Update, describe_pool, id, |st| {
        let pool = st.pools.get_mut(&id).ok_or(ApiError::NotFound)?;
        if let Some(n) = patch.name {
            pool.name = n;
        }
        if let Some(t) = patch.tags {
            pool.tags = t;
        }
        Ok(())
    })
}

/// Deletes a pool with its members, its health monitor and the listeners that use it.
pub fn delete_pool(st: &mut State, id: Uuid, now: Time, timing: &Timing) -> ApiResult<()> {
    change(st, now, timing, Verb::Delete, describe_pool, id, |st| {
        if !st.pools.contains_key(&id) {
            return Err(ApiError::NotFound);
        }
        remove_pool(st, id);
        Ok(())
    })
}
