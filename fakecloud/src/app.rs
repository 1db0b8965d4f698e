//! The shared application state handlers work on ([`App`]) and the `Base` extractor. The
//! router, its middleware and the running server are in `server.rs`, so that handlers can
//! use `App` without importing the router that imports them.

use crate::clock::{Clock, Time};
use crate::config::Config;
use crate::error::ApiResult;
use crate::faults::Faults;
use crate::model::store::{Ctx, Ids, State};
use crate::rules::ApiRules;
use axum::extract::FromRequestParts;
use axum::http::{header, request::Parts};
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// One API request as the admin request log shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    pub time: String,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Route template, e.g. `/v1/servers/{uuid}` (absent for unknown paths).
    pub route: Option<String>,
    pub status: u16,
    pub duration_ms: f64,
    /// The client's `User-Agent` (which client sent it, when several share an account).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
}

#[derive(Debug, Default)]
pub struct RequestLog {
    pub entries: VecDeque<LogEntry>,
    /// Entries recorded since start or reset, the dropped ones included: the sequence
    /// number of the next entry (the console fetches only what is new, `src/console/`).
    pub recorded: u64,
    /// `"METHOD /route/template"` → count.
    pub counters: BTreeMap<String, u64>,
}

pub struct Shared {
    pub state: RwLock<State>,
    pub clock: Clock,
    pub config: Config,
    pub log: Mutex<RequestLog>,
    pub faults: Faults,
    /// The rules in force; start as `config.rules`.
    pub rules: RwLock<ApiRules>,
}

/// Cheap handle to everything a handler needs.
#[derive(Clone)]
pub struct App(pub Arc<Shared>);

impl App {
    pub fn new(config: Config) -> App {
        App(Arc::new(Shared {
            state: RwLock::new(State::empty_with_ids(
                config.id_seed.map(Ids::seeded).unwrap_or_default(),
            )),
            clock: Clock::with_timestamps(config.clock, config.timestamps),
            rules: RwLock::new(config.rules),
            config,
            log: Mutex::new(RequestLog::default()),
            faults: Faults::default(),
        }))
    }

    pub fn now(&self) -> Time {
        self.0.clock.now()
    }

    pub fn config(&self) -> &Config {
        &self.0.config
    }

    /// Runs `f` with a rendering context over the current state.
    pub fn read<R>(&self, base: &str, f: impl FnOnce(&Ctx) -> R) -> R {
        let now = self.now();
        let st = self.0.state.read();
        let ctx = Ctx {
            base,
            now,
            st: &st,
            timing: &self.0.config.timing,
            stamp: self.0.clock.stamp(),
        };
        f(&ctx)
    }

    /// Runs a mutation atomically. The closure validates before it changes anything, so an
    /// error leaves the state as it was.
    pub fn write<R>(&self, f: impl FnOnce(&mut State, Time) -> ApiResult<R>) -> ApiResult<R> {
        let now = self.now();
        let mut st = self.0.state.write();
        f(&mut st, now)
    }

    /// The fault rules.
    pub fn faults(&self) -> &Faults {
        &self.0.faults
    }

    /// The switches for undocumented API behaviour in force now.
    pub fn rules(&self) -> ApiRules {
        *self.0.rules.read()
    }

    /// Replaces the switches; requests from now on follow them (resources already created
    /// stay as they are).
    pub fn set_rules(&self, rules: ApiRules) {
        *self.0.rules.write() = rules;
    }

    /// Clears every resource, the request log, the counters and the fault rules, and puts
    /// the API rules back to the configured ones.
    pub fn reset(&self) {
        let mut st = self.0.state.write();
        let ids = std::mem::take(&mut st.ids);
        *st = State::empty_with_ids(ids);
        drop(st);
        *self.0.log.lock() = RequestLog::default();
        self.0.faults.clear();
        self.set_rules(self.0.config.rules);
    }

    pub(crate) fn record(&self, entry: LogEntry) {
        let mut log = self.0.log.lock();
        let key = format!(
            "{} {}",
            entry.method,
            entry.route.as_deref().unwrap_or("(unmatched)")
        );
        *log.counters.entry(key).or_insert(0) += 1;
        if log.entries.len() >= self.0.config.request_log_capacity.max(1) {
            log.entries.pop_front();
        }
        log.entries.push_back(entry);
        log.recorded += 1;
    }
}

/// The externally visible base URL (`scheme://host[:port]`), for `href`s.
pub struct Base(pub String);

impl FromRequestParts<App> for Base {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        if let Some(url) = &app.config().public_url {
            return Ok(Base(url.trim_end_matches('/').to_string()));
        }
        let host = parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_graphic()))
            .map(str::to_string)
            .or_else(|| parts.uri.authority().map(|a| a.to_string()))
            .unwrap_or_else(|| app.config().listen.to_string());
        Ok(Base(format!("http://{host}")))
    }
}
