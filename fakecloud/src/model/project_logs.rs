//! The project log (`GET /v1/project-logs`): one entry per server action, in the order the
//! actions happened. The real API's acceptance tests show `server_create`, `server_stop` and
//! `server_delete` with the messages modelled here; start and reboot follow the same
//! pattern [INF]. Rules: fakecloud/MODEL.md, "Project log".

use crate::clock::Time;
use crate::model::store::{Ctx, State, TimeText};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    ServerCreate,
    ServerStart,
    ServerStop,
    ServerReboot,
    ServerDelete,
}

impl Action {
    /// The end of the sentence after "Server '<name>'".
    fn done(self) -> &'static str {
        match self {
            Action::ServerCreate => "has been created",
            Action::ServerStart => "has been started",
            Action::ServerStop => "has been shut down",
            Action::ServerReboot => "has been rebooted",
            Action::ServerDelete => "has been deleted",
        }
    }
}

/// One entry. `seq` orders entries that share a timestamp (a manual clock stamps every
/// action of a test with the same instant) and makes the `poll_more` cursor exact.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    pub action: Action,
    pub message: String,
    pub server: Uuid,
    pub created_at: Time,
}

#[derive(Serialize)]
pub struct EntryView<'a> {
    pub action: Action,
    pub message: &'a str,
    pub created_at: TimeText,
}

impl Entry {
    pub fn view<'a>(&'a self, ctx: &Ctx) -> EntryView<'a> {
        EntryView {
            action: self.action,
            message: &self.message,
            created_at: ctx.stamp(self.created_at),
        }
    }
}

/// Appends an entry for `action` on the server `name`.
pub fn record(st: &mut State, now: Time, action: Action, server: Uuid, name: &str) {
    let seq = st.project_log.last().map_or(1, |e| e.seq + 1);
    st.project_log.push(Entry {
        seq,
        action,
        message: format!("Server '{name}' {}", action.done()),
        server,
        created_at: now,
    });
}

/// Most entries one page holds [INF: the real page size is not documented].
pub const PAGE: usize = 100;

/// One page of the log: entries stamped at or after `start` (as answers show them) and,
/// when `after` is given, with a sequence number above it; at most [`PAGE`]. Returns the
/// entries and the cursor the next page starts after.
pub fn page<'a>(ctx: &Ctx<'a>, start: Time, after: Option<u64>) -> (Vec<&'a Entry>, Option<u64>) {
    let entries: Vec<&Entry> = ctx
        .st
        .project_log
        .iter()
        .filter(|e| after.is_none_or(|a| e.seq > a))
        .filter(|e| ctx.stamp.apply(e.created_at) >= start)
        .take(PAGE)
        .collect();
    let cursor = entries.last().map(|e| e.seq).or(after);
    (entries, cursor)
}
