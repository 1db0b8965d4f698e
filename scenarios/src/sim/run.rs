//! One schedule from start to verdict: build the world, warm up (a steady Service and
//! another cluster's load balancer), play the steps, stop the faults, let the CCM converge,
//! watch a quiet window, check the invariants.

use super::check::{self, Context, Violation};
use super::schedule::{self, Effects, Schedule, Shape};
use super::trace::Request;
use super::world::{World, WorldConfig, runtime};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Until the steps begin: the steady Service and the foreign load balancer are provisioned.
pub const WARM_UP: Duration = Duration::from_secs(150);
/// After the last step and the end of the faults: the bound within which everything must
/// have converged. A change waiting for members that never come up is held for
/// `--load-balancer-members-timeout` (5 min), a failed Service is retried after at most
/// `--service-sync-max-retry-delay` (5 min), a new load balancer takes 60 s to provision and
/// each write keeps it reconfiguring 10 s: 14 minutes covers the sum with room.
pub const CONVERGE: Duration = Duration::from_secs(840);
/// How much longer than [`CONVERGE`] convergence may take while a load balancer still
/// applies operations queued on it (fakecloud applies one write after another, 10 s each: a
/// change of 50 writes queued behind another keeps a load balancer busy for many minutes).
pub const QUEUED: Duration = Duration::from_secs(1800);
/// After convergence: a converged CCM writes nothing in this window (two resync periods).
pub const QUIET: Duration = Duration::from_secs(125);
/// The Service no step touches.
pub const STEADY: &str = "steady";

/// The verdict of one schedule.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub seed: u64,
    pub steps: usize,
    pub digest: u64,
    pub violations: Vec<Violation>,
    /// Virtual time the run covered.
    pub simulated: Duration,
    /// The whole trace (kept only when asked for).
    pub trace: Option<Vec<String>>,
    /// The run's API token (to look for in what the run left).
    pub token: Option<String>,
}

/// The logs of one run (every component logs through `tracing` on the run's one thread).
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }

    pub(crate) fn contains(&self, needle: &str) -> bool {
        let logs = self.0.lock();
        !needle.is_empty() && logs.windows(needle.len()).any(|w| w == needle.as_bytes())
    }
}

/// Writes `converged NAMESPACE/NAME RESOURCE_VERSION` to the run's trace whenever a CCM logs
/// that a Service converged (its `service converged` debug line), and `planned
/// NAMESPACE/NAME` whenever it begins a pass from a new plan (`service planned`).
#[derive(Clone, Default)]
pub(crate) struct Converged(Arc<Mutex<Option<super::trace::Trace>>>);

impl Converged {
    /// From now on, convergence lines go to `trace`.
    pub(crate) fn to(&self, trace: &super::trace::Trace) {
        self.0.lock().replace(trace.clone());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Converged {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Fields {
            message: Option<&'static str>,
            service: Option<String>,
            resource_version: String,
        }
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "resource_version" {
                    self.resource_version = value.to_string();
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => {
                        self.message = match format!("{value:?}").as_str() {
                            "service converged" => Some("converged"),
                            "service planned" => Some("planned"),
                            _ => None,
                        }
                    }
                    "service" => self.service = Some(format!("{value:?}")),
                    _ => {}
                }
            }
        }
        if !matches!(
            event.metadata().target(),
            "ccm::service::reconcile::controller" | "ccm::service::reconcile::ensure"
        ) {
            return;
        }
        let mut f = Fields {
            message: None,
            service: None,
            resource_version: String::new(),
        };
        event.record(&mut f);
        match (f.message, f.service, &*self.0.lock()) {
            (Some("converged"), Some(service), Some(trace)) => {
                trace.note(format!("converged {service} {}", f.resource_version))
            }
            (Some("planned"), Some(service), Some(trace)) => {
                trace.note(format!("planned {service}"))
            }
            _ => {}
        }
    }
}

/// Plays `schedule` in a fresh world on its own paused runtime.
pub fn run(schedule: &Schedule, keep_trace: bool) -> Outcome {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            return Outcome {
                seed: schedule.seed,
                steps: schedule.steps.len(),
                digest: 0,
                violations: vec![Violation {
                    invariant: "harness",
                    detail: format!("cannot build the runtime: {e}"),
                }],
                simulated: Duration::ZERO,
                trace: None,
                token: None,
            };
        }
    };
    let (mut outcome, logs) =
        with_logs(|converged| rt.block_on(play(schedule, keep_trace, converged)));
    // Each run logs into its own buffer (the global subscriber never sees it): `SIM_LOG`
    // set shows that buffer, the CCMs' INFO lines in order, once the run is over.
    if std::env::var_os("SIM_LOG").is_some() {
        eprintln!("--- logs of seed {} ---", schedule.seed);
        eprintln!("{}", String::from_utf8_lossy(&logs.0.lock()));
    }
    let shown = logs.text();
    if let Some(line) = super::check::debug_text(&shown) {
        outcome.violations.push(Violation {
            invariant: "debug-text",
            detail: format!("a log line shows Rust Debug text: {line}"),
        });
    }
    if let Some(token) = &outcome.token
        && logs.contains(token)
    {
        outcome.violations.push(Violation {
            invariant: "token-leaked",
            detail: "the API token appears in the logs".into(),
        });
    }
    outcome
}

/// Keeps every `tracing` callsite asking the current subscriber whether it is enabled.
///
/// `tracing` caches, process-wide, whether a callsite is enabled and the highest level any
/// subscriber wants, recomputing both from the live subscribers whenever one is created.
/// Two threads creating scoped subscribers at once can store a result computed from an
/// older set (say, only a WARN subscriber of another test): a run's "service converged"
/// debug events are then skipped before its subscriber sees them, and its trace misses
/// them. A subscriber that lives for the whole process and answers "ask each time, any
/// level" makes every such result the same. It is never any thread's default, so it
/// receives no events.
pub fn keep_callsites_asking() {
    struct AlwaysAsk;
    impl tracing::Subscriber for AlwaysAsk {
        fn register_callsite(&self, _: &tracing::Metadata<'_>) -> tracing::subscriber::Interest {
            tracing::subscriber::Interest::sometimes()
        }
        fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
            Some(tracing::level_filters::LevelFilter::TRACE)
        }
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            false
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }
    static KEEP: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    KEEP.get_or_init(|| tracing::Dispatch::new(AlwaysAsk));
}

/// Runs `f` with the run's logging: everything logged at INFO and above is kept (to be
/// searched for the token), and the CCMs' "service converged" lines go to the trace
/// [`Converged::to`] names.
pub(crate) fn with_logs<T>(f: impl FnOnce(&Converged) -> T) -> (T, Logs) {
    keep_callsites_asking();
    let logs = Logs::default();
    let converged = Converged::default();
    let writer = {
        let logs = logs.clone();
        move || logs.clone()
    };
    let subscriber = subscriber(tracing::Level::INFO, writer, &converged);
    let out = tracing::subscriber::with_default(subscriber, || f(&converged));
    (out, logs)
}

/// Logs at `level` and above to `writer`; the service controller's and the reconcile's
/// debug lines to `converged` as well.
fn subscriber<W>(
    level: tracing::Level,
    writer: W,
    converged: &Converged,
) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::{Layer as _, SubscriberExt as _};
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::filter::Targets::new()
                .with_default(level)
                .with_target("ccm::service::reconcile::controller", tracing::Level::DEBUG)
                .with_target("ccm::service::reconcile::ensure", tracing::Level::DEBUG),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_writer(writer)
                .with_filter(tracing_subscriber::filter::LevelFilter::from_level(level)),
        )
        .with(converged.clone())
}

/// The process-wide subscriber for backends whose CCM runs on other threads (the socket
/// testbed): warnings and errors to standard error, the CCMs' "service converged" lines
/// to the trace the returned handle is pointed at. Installed once; in a process that
/// already has a global subscriber the handle records nothing.
pub(crate) fn global_converged() -> Converged {
    static ONCE: std::sync::OnceLock<Converged> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        keep_callsites_asking();
        let converged = Converged::default();
        let _ = tracing::subscriber::set_global_default(subscriber(
            tracing::Level::WARN,
            std::io::stderr,
            &converged,
        ));
        converged
    })
    .clone()
}

async fn play(schedule: &Schedule, keep_trace: bool, converged: &Converged) -> Outcome {
    let harness = |detail: String| Outcome {
        seed: schedule.seed,
        steps: schedule.steps.len(),
        digest: 0,
        violations: vec![Violation {
            invariant: "harness",
            detail,
        }],
        simulated: Duration::ZERO,
        trace: None,
        token: None,
    };
    let start = tokio::time::Instant::now();
    let config = WorldConfig::new(schedule.seed).with_replicas(schedule.replicas);
    let mut world = match World::start(config).await {
        Ok(w) => w,
        Err(e) => return harness(format!("cannot build the world: {e}")),
    };
    converged.to(&world.trace);
    world.revive();
    let Some(foreign) = create_foreign(&world).await else {
        return harness("cannot create the foreign load balancer".into());
    };
    create_steady(&mut world).await;
    tokio::time::sleep_until(start + WARM_UP).await;
    let foreign_json = world.cloud.read("", |ctx| {
        ctx.st
            .load_balancers()
            .get(&foreign)
            .map(|lb| lb.render(ctx))
    });
    let steady_from = world.cloud.now();

    let mut effects = Effects::default();
    for step in &schedule.steps {
        supervise_until(&mut world, start + WARM_UP + step.at).await;
        schedule::execute(&mut world, step, &mut effects).await;
    }
    end_faults(&mut world).await;
    let foreign_json = foreign_json.unwrap_or_default();
    let probe = Context {
        foreign: (foreign, foreign_json.clone()),
        steady: None,
        quiet_writes: Vec::new(),
        quiet: None,
    };
    settle(&mut world, &probe).await;
    // A replaced monitor checks its members anew once applied (delay × up threshold, at most
    // 50 s with what the workload sets): that is the change's documented cost, not a
    // failure to converge.
    supervise_until(&mut world, tokio::time::Instant::now() + RECHECK).await;
    let quiet_from = world.trace.len();
    let quiet_start = world.cloud.now();
    tokio::time::sleep(QUIET).await;
    let quiet_writes = ccm_writes(&world, quiet_from);
    let steady_to = world.cloud.now();
    let cx = Context {
        foreign: (foreign, foreign_json),
        steady: effects
            .node_events
            .is_empty()
            .then(|| (STEADY.to_string(), steady_from, steady_to)),
        quiet_writes,
        quiet: Some((quiet_start, world.cloud.now())),
    };
    let mut violations = check::check(&world, &cx);
    violations.extend(super::downtime::check(&world, &effects, quiet_start));
    final_records(&world);
    Outcome {
        seed: schedule.seed,
        steps: schedule.steps.len(),
        digest: world.trace.digest(),
        violations,
        simulated: start.elapsed(),
        trace: keep_trace.then(|| world.trace.lines()),
        token: Some(world.token.clone()),
    }
}

/// Creates another cluster's load balancer, which the CCMs must never touch.
async fn create_foreign(world: &World) -> Option<uuid::Uuid> {
    let foreign = world
        .outside_with(
            "POST",
            "/v1/load-balancers",
            Some(json!({"name": "other-cluster", "flavor": "lb-standard", "zone": "rma1",
                        "tags": {ccm::service::reconcile::controller::TAG_CLUSTER: "other",
                                 ccm::service::reconcile::controller::TAG_SERVICE_UID: "00000000-0000-4000-8000-000000000000"}})),
        )
        .await;
    foreign.ok().and_then(|v| v["uuid"].as_str()?.parse().ok())
}

/// Creates the Service no step touches.
async fn create_steady(world: &mut World) {
    schedule::execute(
        world,
        &schedule::Step {
            at: Duration::ZERO,
            action: schedule::Action::Create(STEADY.into(), Shape::http()),
        },
        &mut Effects::default(),
    )
    .await;
}

/// The faults stop (a crash still armed is called off); a crashed CCM comes back.
async fn end_faults(world: &mut World) {
    tokio::time::sleep(Duration::from_secs(1)).await;
    world.trace.note("faults end");
    world.cloud.faults().clear();
    world.misconfigure(None);
    for c in &world.ccms {
        c.kube_faults.gone_on_rewatch(0);
        c.kube_faults.set_down(false);
        c.crash.disarm();
    }
}

/// Waits until converged: the end state holds and the CCMs wrote nothing for a probe
/// interval; CONVERGE is the bound.
async fn settle(world: &mut World, probe: &Context) {
    let mut deadline = tokio::time::Instant::now() + CONVERGE;
    let hard_deadline = deadline + QUEUED;
    let mut marks = vec![world.trace.len()];
    let mut last_failure = LastFailure::default();
    loop {
        let next = (tokio::time::Instant::now() + PROBE).min(deadline);
        supervise_until(world, next).await;
        marks.push(world.trace.len());
        // Settled: no write for two probes (longer than a resync, so drift was looked
        // for), no load balancer still applying changes, and the end state holds.
        let quiet_since = marks[marks.len().saturating_sub(3)];
        let applying = world.cloud.read("", |ctx| {
            ctx.st
                .load_balancers()
                .values()
                .any(|lb| lb.status(ctx.now) == "changing")
        });
        // A Service whose reconcile failed is retried after up to 5 min (the maximum
        // retry delay) from the end of that reconcile: silence shorter than that since
        // the last failed request proves nothing.
        let backoff_over = last_failure.look(world).is_none_or(|t| {
            world.trace.millis() >= t + (MAX_RETRY_DELAY + RECONCILE_TAIL).as_millis()
        });
        let settled = marks.len() >= 3
            && backoff_over
            && ccm_writes(world, quiet_since).is_empty()
            && !applying
            && check::check(world, probe).len() == world.found.lock().len();
        let now = tokio::time::Instant::now();
        // The CCM cannot be faster than its load balancers apply what it queued on them:
        // while one still applies, the bound waits (up to QUEUED more).
        if !settled && now >= deadline && applying && now < hard_deadline {
            deadline = now + PROBE;
            continue;
        }
        if settled || now >= deadline {
            world.trace.note(format!("settled {settled}"));
            break;
        }
    }
}

/// How often convergence is looked for after the faults end (two probes are longer than
/// the 60 s resync).
const PROBE: Duration = Duration::from_secs(35);

/// Between convergence and the quiet window: members checked anew by a replaced monitor.
const RECHECK: Duration = Duration::from_secs(60);

/// `--service-sync-max-retry-delay` (default): the longest a failed Service waits.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(300);

/// How long a reconcile may go on after its last failed request before it gives up (the
/// lookup of a lost POST, a few seconds after it): its retry delay counts from then (found
/// by the sweep, seed 49017739: a load balancer re-created 5.6 s after the harness thought
/// the longest retry delay over, in the quiet window).
const RECONCILE_TAIL: Duration = Duration::from_secs(30);

/// When a CCM's cloud request last failed (no answer, or an error other than 404), or its
/// cloud settings were last changed (under another project's token every request succeeds
/// and every Service fails), in trace milliseconds. Each look reads only the lines added
/// since the one before (the settle loop looks every probe).
#[derive(Default)]
struct LastFailure {
    scanned: usize,
    at: Option<u128>,
}

impl LastFailure {
    fn look(&mut self, world: &World) -> Option<u128> {
        let total = world.trace.len();
        let found = world.trace.scan(|lines| {
            // Lines dropped from the front (a soak keeps the last ones only) shift the index.
            let dropped = total.saturating_sub(lines.len());
            lines
                .skip(self.scanned.saturating_sub(dropped))
                .rev()
                .find_map(|l| failure_at(l))
        });
        self.scanned = total;
        if found.is_some() {
            self.at = found;
        }
        self.at
    }
}

/// The time of a trace line that is a failed cloud request of a CCM or a misconfiguration.
fn failure_at(l: &str) -> Option<u128> {
    if let Some(r) = Request::parse(l) {
        let failed = r.api == "cloud"
            && r.by_ccm()
            && (r.status == "lost" || (!r.status.starts_with('2') && r.status != "404"));
        return failed.then_some(r.millis);
    }
    let mut f = l.split(' ');
    let at = f.next()?.parse().ok()?;
    (f.next() == Some("misconfig")).then_some(at)
}

/// The cloud writes CCMs made since trace line `from`.
fn ccm_writes(world: &World, from: usize) -> Vec<String> {
    world.trace.scan(|lines| {
        lines
            .skip(from)
            .filter(|l| {
                Request::parse(l)
                    .is_some_and(|r| r.api == "cloud" && r.by_ccm() && r.method != "GET")
            })
            .cloned()
            .collect()
    })
}

/// How soon a crashed CCM is started again (as a restarted pod would be).
const RESTART_AFTER: Duration = Duration::from_secs(10);

/// Lets time pass until `deadline`, starting a new CCM whenever none runs.
async fn supervise_until(world: &mut World, deadline: tokio::time::Instant) {
    loop {
        world.revive();
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline.min(now + RESTART_AFTER)).await;
    }
}

/// The load balancers' applied operations and the Events, at the end of the trace.
fn final_records(world: &World) {
    let ops: Vec<String> = world.cloud.read("", |ctx| {
        ctx.st
            .dataplane()
            .lbs
            .iter()
            .flat_map(|(id, lb)| {
                lb.ops.iter().map(move |op| {
                    format!(
                        "applied {id} {} {} {}",
                        fakecloud::clock::format_time(op.requested_at),
                        fakecloud::clock::format_time(op.effective_at),
                        op.operation
                    )
                })
            })
            .collect()
    });
    for op in ops {
        world.trace.note(op);
    }
    let events: Vec<k8s_openapi::api::core::v1::Event> = world.api.objects("events");
    for e in events {
        world.trace.note(format!(
            "event {} {} {} {}",
            e.involved_object.name.unwrap_or_default(),
            e.type_.unwrap_or_default(),
            e.reason.unwrap_or_default(),
            e.message.unwrap_or_default().replace('\n', " ")
        ));
    }
}

/// The shortest prefix of `schedule` that still breaks `invariant`, with its outcome and the
/// outcome of the prefix one step shorter (which keeps it).
pub fn shrink(schedule: &Schedule, invariant: &str) -> (Schedule, Outcome, Option<Outcome>) {
    let mut passing = None;
    for n in 0..schedule.steps.len() {
        let prefix = schedule.prefix(n);
        let out = run(&prefix, true);
        if out.violations.iter().any(|v| v.invariant == invariant) {
            return (prefix, out, passing);
        }
        passing = Some(out);
    }
    (schedule.clone(), run(schedule, true), passing)
}

#[cfg(test)]
mod tests {
    /// Another subscriber that wants only warnings, created while no run's subscriber lives,
    /// leaves debug events enabled for the runs that follow.
    #[test]
    fn a_warn_only_subscriber_never_turns_debug_events_off() {
        use tracing_subscriber::layer::SubscriberExt as _;
        super::keep_callsites_asking();
        let warn_only =
            tracing_subscriber::registry().with(tracing_subscriber::filter::LevelFilter::WARN);
        let dispatch = tracing::Dispatch::new(warn_only);
        assert_eq!(
            tracing::level_filters::LevelFilter::current(),
            tracing::level_filters::LevelFilter::TRACE
        );
        drop(dispatch);
    }
}
