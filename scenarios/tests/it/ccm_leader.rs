//! Leader election against the embedded API server, with short timings (lease 2 s, renew
//! deadline 1.5 s, retry 0.2 s): mutual exclusion, take-over after a crash, hand-over after a
//! graceful release, step-down when cut off from the API server or overwritten out of band.
//!
//! Exclusion is checked twice: a sampler reads every candidate's status every 20 ms, and the
//! `leading` futures count themselves while alive (the stronger check: a future that is not
//! dropped when leadership ends would show up as two at once).

use ccm::leader::{LeaderElectionConfig, LeaderElector, LeaderStatus};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use scenarios::testbed::Cluster;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(1500);
const RETRY: Duration = Duration::from_millis(200);
/// Acquisition attempts are spread over [1, 1.2] retry periods.
const RETRY_MAX: Duration = Duration::from_millis(240);
/// Scheduling and request latency allowance for the upper bounds.
const SLACK: Duration = Duration::from_millis(300);
const LEASE_NAME: &str = "cloud-controller-manager";
const NAMESPACE: &str = "kube-system";

fn config(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_name: LEASE_NAME.into(),
        lease_namespace: NAMESPACE.into(),
        identity: identity.into(),
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ambient: Default::default(),
    }
}

/// Counts live `leading` futures across all candidates of a test.
#[derive(Default)]
struct Exclusion {
    active: AtomicUsize,
    max: AtomicUsize,
}

struct Active(Arc<Exclusion>);

impl Active {
    fn enter(e: &Arc<Exclusion>) -> Active {
        let now = e.active.fetch_add(1, Ordering::SeqCst) + 1;
        e.max.fetch_max(now, Ordering::SeqCst);
        Active(e.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Candidate {
    identity: String,
    status: LeaderStatus,
    task: JoinHandle<()>,
    stop: Option<oneshot::Sender<()>>,
}

fn spawn(client: kube::Client, identity: &str, exclusion: &Arc<Exclusion>) -> Candidate {
    spawn_with(client, identity, exclusion, None)
}

/// A candidate whose leader work runs until stopped, or for `work_for` when given.
fn spawn_with(
    client: kube::Client,
    identity: &str,
    exclusion: &Arc<Exclusion>,
    work_for: Option<Duration>,
) -> Candidate {
    let elector = LeaderElector::new(client, config(identity)).expect("valid config");
    assert_eq!(elector.identity(), identity);
    let status = elector.status();
    let (stop, stopped) = oneshot::channel::<()>();
    let exclusion = exclusion.clone();
    let task = tokio::spawn(elector.run(
        async {
            let _ = stopped.await;
        },
        move || {
            let active = Active::enter(&exclusion);
            async move {
                let _active = active;
                match work_for {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            }
        },
    ));
    Candidate {
        identity: identity.into(),
        status,
        task,
        stop: Some(stop),
    }
}

/// Samples the statuses every 20 ms until dropped; counts samples with two leaders.
struct Sampler {
    overlaps: Arc<AtomicUsize>,
    samples: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Sampler {
    fn start(statuses: Vec<LeaderStatus>) -> Sampler {
        let overlaps = Arc::new(AtomicUsize::new(0));
        let samples = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (o, s, st) = (overlaps.clone(), samples.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while !st.load(Ordering::SeqCst) {
                tick.tick().await;
                let leaders = statuses.iter().filter(|s| s.is_leader()).count();
                s.fetch_add(1, Ordering::SeqCst);
                if leaders > 1 {
                    o.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Sampler {
            overlaps,
            samples,
            stop,
            task,
        }
    }

    /// Stops sampling and asserts no sample saw two leaders.
    async fn finish(self) {
        self.stop.store(true, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(1), self.task)
            .await
            .expect("sampler stops")
            .expect("sampler ran");
        let samples = self.samples.load(Ordering::SeqCst);
        assert!(samples > 10, "only {samples} samples");
        assert_eq!(
            self.overlaps.load(Ordering::SeqCst),
            0,
            "two leaders at once in {samples} samples"
        );
    }
}

/// Polls `f` every 10 ms until it holds; the time it took, or a panic after `limit`.
async fn within(limit: Duration, what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if f() {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Polls for `period` asserting `f` holds at every poll.
async fn always(period: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < period {
        assert!(f(), "{what}: violated after {:?}", start.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn lease(client: &kube::Client) -> Lease {
    Api::<Lease>::namespaced(client.clone(), NAMESPACE)
        .get(LEASE_NAME)
        .await
        .expect("lease exists")
}

fn holder(l: &Lease) -> String {
    l.spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default()
}

fn transitions(l: &Lease) -> i32 {
    l.spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0)
}

fn renew_time(l: &Lease) -> Timestamp {
    l.spec
        .as_ref()
        .and_then(|s| s.renew_time.clone())
        .expect("renewTime")
        .0
}

async fn cluster() -> Cluster {
    Cluster::embedded().await.expect("embedded API server")
}

/// Starts `first`, waits until it leads, then starts `second` and checks it follows.
async fn leader_and_follower(
    client: &kube::Client,
    exclusion: &Arc<Exclusion>,
) -> (Candidate, Candidate) {
    let a = spawn(client.clone(), "candidate-a", exclusion);
    within(Duration::from_secs(5), "a leads", || a.status.is_leader()).await;
    let b = spawn(client.clone(), "candidate-b", exclusion);
    always(Duration::from_millis(800), "b follows", || {
        a.status.is_leader() && !b.status.is_leader()
    })
    .await;
    (a, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_of_two_candidates_leads() {
    let cluster = cluster().await;
    let client = cluster.client();
    let exclusion = Arc::new(Exclusion::default());
    let a = spawn(client.clone(), "candidate-a", &exclusion);
    let b = spawn(client.clone(), "candidate-b", &exclusion);
    let sampler = Sampler::start(vec![a.status.clone(), b.status.clone()]);

    let took = within(Duration::from_secs(5), "someone leads", || {
        a.status.is_leader() || b.status.is_leader()
    })
    .await;
    eprintln!("first leader after {took:?}");
    let (leader, follower) = if a.status.is_leader() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    // Every 50 ms for 3 s: exactly one leads, and always the same.
    let start = Instant::now();
    let mut samples = 0;
    while start.elapsed() < Duration::from_secs(3) {
        assert!(leader.status.is_leader(), "leader lost the lease");
        assert!(!follower.status.is_leader(), "two leaders");
        samples += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(samples >= 30);

    let l1 = lease(&client).await;
    assert_eq!(holder(&l1), leader.identity);
    assert_eq!(transitions(&l1), 0, "created by its first holder");
    let spec = l1.spec.clone().unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(2));
    assert!(spec.acquire_time.is_some());
    let age = Timestamp::now().duration_since(renew_time(&l1));
    assert!(age.as_secs_f64() < 1.0, "renewTime {age:?} old");
    // The leader keeps renewing.
    let before = renew_time(&l1);
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let l = lease(&client).await;
        if renew_time(&l) > before {
            assert_eq!(holder(&l), leader.identity);
            assert_eq!(spec.acquire_time, l.spec.unwrap().acquire_time);
            break;
        }
        assert!(Instant::now() < deadline, "renewTime does not advance");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // renewTime is written with microseconds.
    let raw = serde_json::to_value(&l1).unwrap();
    let text = raw["spec"]["renewTime"].as_str().unwrap().to_string();
    assert_eq!(text.len(), "2024-01-01T00:00:00.000000Z".len(), "{text}");

    sampler.finish().await;
    assert_eq!(exclusion.max.load(Ordering::SeqCst), 1);
    assert_eq!(exclusion.active.load(Ordering::SeqCst), 1);
    a.task.abort();
    b.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crashed_leader_is_replaced_after_the_lease_duration() {
    let cluster = cluster().await;
    let client = cluster.client();
    let exclusion = Arc::new(Exclusion::default());
    let (a, b) = leader_and_follower(&client, &exclusion).await;
    let sampler = Sampler::start(vec![a.status.clone(), b.status.clone()]);
    let before = lease(&client).await;
    assert_eq!(holder(&before), "candidate-a");

    // A crash: the task is gone, nothing is released.
    a.task.abort();
    let killed = Instant::now();
    let _ = a.task.await;
    let took = within(LEASE + 3 * RETRY_MAX + SLACK, "b takes over", || {
        b.status.is_leader()
    })
    .await;
    let since_kill = killed.elapsed();
    eprintln!("take-over after a crash: {since_kill:?} (lease {LEASE:?}, retry {RETRY:?})");
    // Not before the lease could have expired (the last renewal was at most a retry period
    // before the crash), and within lease duration + observation and polling lag.
    assert!(
        since_kill >= LEASE - RETRY - Duration::from_millis(50),
        "took over early: {since_kill:?}"
    );
    assert!(
        since_kill <= LEASE + 2 * RETRY_MAX + SLACK,
        "took over late: {since_kill:?} ({took:?})"
    );

    let after = lease(&client).await;
    assert_eq!(holder(&after), "candidate-b");
    assert_eq!(transitions(&after), transitions(&before) + 1);
    sampler.finish().await;
    assert_eq!(exclusion.max.load(Ordering::SeqCst), 1);
    b.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn graceful_release_hands_over_within_a_retry_period() {
    let cluster = cluster().await;
    let client = cluster.client();
    let exclusion = Arc::new(Exclusion::default());
    let (mut a, b) = leader_and_follower(&client, &exclusion).await;
    let sampler = Sampler::start(vec![a.status.clone(), b.status.clone()]);
    let before = lease(&client).await;

    let _ = a.stop.take().unwrap().send(());
    let stopped = Instant::now();
    tokio::time::timeout(Duration::from_secs(3), &mut a.task)
        .await
        .expect("run returns after shutdown")
        .expect("run did not panic");
    let returned = stopped.elapsed();
    assert!(!a.status.is_leader());
    let took = within(RETRY_MAX + SLACK, "b takes over", || b.status.is_leader()).await;
    let since_stop = stopped.elapsed();
    eprintln!(
        "hand-over after a graceful release: {since_stop:?} (run returned after {returned:?})"
    );
    assert!(since_stop <= RETRY_MAX + 2 * SLACK, "{took:?}");

    let after = lease(&client).await;
    assert_eq!(holder(&after), "candidate-b");
    assert_eq!(transitions(&after), transitions(&before) + 1);
    always(Duration::from_millis(500), "b keeps leading", || {
        b.status.is_leader() && !a.status.is_leader()
    })
    .await;
    sampler.finish().await;
    assert_eq!(exclusion.max.load(Ordering::SeqCst), 1);
    b.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_cut_off_from_the_api_server_steps_down_before_the_lease_expires() {
    let cluster = cluster().await;
    let client = cluster.client();
    let url = cluster.api_server().expect("embedded").url();
    // A TCP proxy: TLS passes through it (the certificate names 127.0.0.1, as the proxy).
    let upstream: SocketAddr = url
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("host:port");
    let proxy = Proxy::start(upstream).await;
    let yaml = cluster.kubeconfig_yaml().replace(&url, &proxy.url);
    assert_ne!(yaml, cluster.kubeconfig_yaml());
    let cut_client = scenarios::testbed::client_for(&yaml)
        .await
        .expect("proxied client");

    let exclusion = Arc::new(Exclusion::default());
    let c = spawn(cut_client, "candidate-c", &exclusion);
    within(Duration::from_secs(5), "c leads", || c.status.is_leader()).await;
    let b = spawn(client.clone(), "candidate-b", &exclusion);
    always(Duration::from_millis(800), "b follows", || {
        c.status.is_leader() && !b.status.is_leader()
    })
    .await;
    let sampler = Sampler::start(vec![c.status.clone(), b.status.clone()]);
    let before = lease(&client).await;
    assert_eq!(holder(&before), "candidate-c");

    // Requests through the proxy now hang: no error, no answer.
    proxy.cut(true);
    let cut = Instant::now();
    let stepped_down = within(RENEW + SLACK, "c steps down", || !c.status.is_leader()).await;
    let c_stopped = Instant::now();
    within(LEASE + 3 * RETRY_MAX + SLACK, "b takes over", || {
        b.status.is_leader()
    })
    .await;
    let b_led = Instant::now();
    eprintln!(
        "cut off: c stepped down after {stepped_down:?} (renew deadline {RENEW:?}), \
         b took over after {:?}, {:?} after c stopped",
        b_led - cut,
        b_led - c_stopped
    );
    assert!(
        stepped_down <= RENEW + Duration::from_millis(100),
        "stepped down late: {stepped_down:?}"
    );
    // The lease outlives the leader's renew deadline by lease - renew deadline (0.5 s).
    assert!(
        b_led - c_stopped >= LEASE - RENEW - Duration::from_millis(100),
        "b took over only {:?} after c stopped",
        b_led - c_stopped
    );
    let after = lease(&client).await;
    assert_eq!(holder(&after), "candidate-b");
    assert_eq!(transitions(&after), transitions(&before) + 1);

    // The connection comes back: c follows, b keeps the lease.
    proxy.cut(false);
    always(Duration::from_secs(1), "b keeps leading", || {
        b.status.is_leader() && !c.status.is_leader()
    })
    .await;
    sampler.finish().await;
    assert_eq!(exclusion.max.load(Ordering::SeqCst), 1);
    c.task.abort();
    b.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lease_overwritten_out_of_band_stops_the_leader_and_expires() {
    let cluster = cluster().await;
    let client = cluster.client();
    let exclusion = Arc::new(Exclusion::default());
    let a = spawn(client.clone(), "candidate-a", &exclusion);
    within(Duration::from_secs(5), "a leads", || a.status.is_leader()).await;

    // Another identity writes the lease (optimistically, retrying on 409).
    let api = Api::<Lease>::namespaced(client.clone(), NAMESPACE);
    let deadline = Instant::now() + Duration::from_secs(3);
    let (written, overwritten) = loop {
        let mut l = lease(&client).await;
        let spec = l.spec.as_mut().unwrap();
        spec.holder_identity = Some("intruder".into());
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        match api.replace(LEASE_NAME, &PostParams::default(), &l).await {
            Ok(w) => break (w, Instant::now()),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => panic!("overwrite: {e}"),
        }
        assert!(Instant::now() < deadline, "cannot overwrite the lease");
    };
    let stepped_down = within(RENEW, "a steps down", || !a.status.is_leader()).await;
    eprintln!("out-of-band overwrite: a stepped down after {stepped_down:?}");
    assert!(stepped_down <= RETRY + SLACK, "{stepped_down:?}");
    assert_eq!(exclusion.active.load(Ordering::SeqCst), 0);

    // The intruder never renews: a takes the lease back once it expired.
    let took = within(LEASE + 3 * RETRY_MAX + SLACK, "a leads again", || {
        a.status.is_leader()
    })
    .await;
    let since = overwritten.elapsed();
    eprintln!("a took the expired lease back {since:?} after the overwrite");
    assert!(
        since >= LEASE - Duration::from_millis(50),
        "{since:?} ({took:?})"
    );
    let after = lease(&client).await;
    assert_eq!(holder(&after), "candidate-a");
    assert_eq!(transitions(&after), transitions(&written) + 1);
    assert_eq!(exclusion.max.load(Ordering::SeqCst), 1);
    a.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn finished_leader_work_releases_the_lease() {
    let cluster = cluster().await;
    let client = cluster.client();
    let exclusion = Arc::new(Exclusion::default());
    let mut a = spawn_with(
        client.clone(),
        "candidate-a",
        &exclusion,
        Some(Duration::from_millis(300)),
    );
    within(Duration::from_secs(5), "a leads", || a.status.is_leader()).await;
    tokio::time::timeout(Duration::from_secs(3), &mut a.task)
        .await
        .expect("run returns when the work is done")
        .expect("no panic");
    assert!(!a.status.is_leader());
    let l = lease(&client).await;
    assert_eq!(holder(&l), "", "released");
    assert_eq!(l.spec.unwrap().lease_duration_seconds, Some(1));
    // A newcomer acquires the released lease at its first attempt.
    let b = spawn(client.clone(), "candidate-b", &exclusion);
    let took = within(Duration::from_secs(1), "b leads", || b.status.is_leader()).await;
    eprintln!("newcomer acquired a released lease after {took:?}");
    assert_eq!(transitions(&lease(&client).await), 1);
    assert_eq!(exclusion.max.load(Ordering::SeqCst), 1);
    b.task.abort();
}

/// A TCP proxy that can be cut: connections then hang (nothing forwarded, nothing closed),
/// as behind a network partition.
struct Proxy {
    url: String,
    cut: watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("https://{}", listener.local_addr().unwrap());
        let (cut, rx) = watch::channel(false);
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let mut rx = rx.clone();
                tokio::spawn(async move {
                    if *rx.borrow() {
                        return hang(inbound).await;
                    }
                    let Ok(mut outbound) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let mut inbound = inbound;
                    let cut = tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => false,
                        r = rx.wait_for(|c| *c) => r.is_ok(),
                    };
                    if cut {
                        drop(outbound);
                        hang(inbound).await;
                    }
                });
            }
        });
        Proxy { url, cut }
    }

    fn cut(&self, cut: bool) {
        self.cut.send_replace(cut);
    }
}

/// Reads and discards until the client gives up; never answers.
async fn hang(mut s: TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}
