//! Health monitors: at most one per pool.

use super::{HttpCheck, Verb, change, describe_monitor};
use crate::clock::Time;
use crate::config::Timing;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, Href, NamedStub, State, Tags, TimeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HealthMonitor {
    pub uuid: Uuid,
    pub pool: Uuid,
    pub load_balancer: Uuid,
    #[serde(rename = "type")]
    pub kind: String,
    pub delay_s: i64,
    pub timeout_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    pub http: Option<HttpCheck>,
    pub tags: Tags,
    pub created_at: Time,
}

impl HealthMonitor {
    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> HealthMonitorView<'a> {
        HealthMonitorView {
            href: ctx.href_of("load-balancers/health-monitors", self.uuid),
            uuid: self.uuid,
            pool: ctx.pool_ref(self.pool),
            load_balancer: ctx.load_balancer_ref(self.load_balancer),
            kind: &self.kind,
            delay_s: self.delay_s,
            timeout_s: self.timeout_s,
            up_threshold: self.up_threshold,
            down_threshold: self.down_threshold,
            http: self.http.as_ref(),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// A health monitor as the API shows it, serialized from borrows.
#[derive(Serialize)]
pub struct HealthMonitorView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub pool: NamedStub<'a>,
    pub load_balancer: NamedStub<'a>,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub delay_s: i64,
    pub timeout_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    pub http: Option<&'a HttpCheck>,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

pub fn is_http(kind: &str) -> bool {
    kind == "http" || kind == "https"
}

/// Whether `pool` has a health monitor already (a second one is refused).
pub fn pool_has_monitor(st: &State, pool: Uuid) -> bool {
    st.health_monitors.values().any(|m| m.pool == pool)
}

/// A health monitor to create; the pool is known to exist.
pub struct NewHealthMonitor {
    pub pool: Uuid,
    pub kind: String,
    pub delay_s: i64,
    pub timeout_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    pub http: Option<HttpCheck>,
    pub tags: Tags,
}

pub fn create_health_monitor(
    st: &mut State,
    now: Time,
    timing: &Timing,
    new: NewHealthMonitor,
) -> ApiResult<Uuid> {
    let lb = st
        .pools
        .get(&new.pool)
        .map(|p| p.load_balancer)
        .ok_or(ApiError::NotFound)?;
    let uuid = st.ids.new_uuid();
    change(
        st,
        now,
        timing,
        Verb::Create,
        describe_monitor,
        uuid,
        |st| {
            st.health_monitors.insert(
                uuid,
                HealthMonitor {
                    uuid,
                    pool: new.pool,
                    load_balancer: lb,
                    kind: new.kind,
                    delay_s: new.delay_s,
                    timeout_s: new.timeout_s,
                    up_threshold: new.up_threshold,
                    down_threshold: new.down_threshold,
                    http: new.http,
                    tags: new.tags,
                    created_at: now,
                },
            );
            Ok(uuid)
        },
    )
}

/// The changeable fields of a health monitor (`None`: unchanged).
#[derive(Debug, Default)]
pub struct HealthMonitorPatch {
    pub delay_s: Option<i64>,
    pub timeout_s: Option<i64>,
    pub up_threshold: Option<i64>,
    pub down_threshold: Option<i64>,
    pub http: Option<HttpCheck>,
    pub tags: Option<Tags>,
}

pub fn update_health_monitor(
    st: &mut State,
    id: Uuid,
    now: Time,
    timing: &Timing,
    patch: HealthMonitorPatch,
) -> ApiResult<()> {
    let verb = Verb::update_if(
        patch.delay_s.is_some()
            || patch.timeout_s.is_some()
            || patch.up_threshold.is_some()
            || patch.down_threshold.is_some()
            || patch.http.is_some(),
    );
    change(st, now, timing, verb, describe_monitor, id, |st| {
        let m = st.health_monitors.get_mut(&id).ok_or(ApiError::NotFound)?;
        if let Some(v) = patch.delay_s {
            m.delay_s = v;
        }
        if let Some(v) = patch.timeout_s {
            m.timeout_s = v;
        }
        if let Some(v) = patch.up_threshold {
            m.up_threshold = v;
        }
        if let Some(v) = patch.down_threshold {
            m.down_threshold = v;
        }
        if let Some(h) = patch.http {
            m.http = Some(h);
        }
        if let Some(t) = patch.tags {
            m.tags = t;
        }
        Ok(())
    })
}

pub fn delete_health_monitor(
    st: &mut State,
    id: Uuid,
    now: Time,
    timing: &Timing,
) -> ApiResult<()> {
    change(st, now, timing, Verb::Delete, describe_monitor, id, |st| {
        st.health_monitors
            .shift_remove(&id)
            .ok_or(ApiError::NotFound)?;
        Ok(())
    })
}
