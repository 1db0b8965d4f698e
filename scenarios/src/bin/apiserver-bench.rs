//! Benchmark of the embedded API server through kube-rs: objects created per second, and
//! watch fan-out (events delivered per second to many watchers).
//!
//! `cargo run --release -p scenarios --bin apiserver-bench -- [--objects 2000]
//! [--concurrency 16] [--watchers 20]`

use anyhow::{Context, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use scenarios::testbed::Cluster;
use std::time::{Duration, Instant};

#[derive(Debug, Parser)]
#[command(name = "apiserver-bench")]
struct Args {
    /// Objects created in each phase.
    #[arg(long, default_value_t = 2000)]
    objects: usize,
    /// Concurrent create requests.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Watchers in the fan-out phase.
    #[arg(long, default_value_t = 20)]
    watchers: usize,
}

fn config_map(prefix: &str, i: usize) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{prefix}-{i}")),
            labels: Some([("bench".to_string(), prefix.to_string())].into()),
            ..Default::default()
        },
        data: Some([("i".to_string(), i.to_string())].into()),
        ..Default::default()
    }
}

async fn create_all(
    api: &Api<ConfigMap>,
    prefix: &str,
    n: usize,
    concurrency: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let cm = config_map(prefix, i);
            async move { api.create(&PostParams::default(), &cm).await.map(|_| ()) }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await
        .context("create")?;
    Ok(started.elapsed())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.objects == 0 || args.watchers == 0 {
        bail!("--objects and --watchers must be positive");
    }
    let cluster = Cluster::embedded()
        .await
        .context("start the embedded API server")?;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    println!(
        "embedded API server bench: {} objects, {} concurrent creates, {} watchers, {} cores",
        args.objects,
        args.concurrency,
        args.watchers,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );

    let took = create_all(&api, "create", args.objects, args.concurrency).await?;
    println!(
        "create:        {:>9.0} objects/s ({} in {:.2} s)",
        args.objects as f64 / took.as_secs_f64(),
        args.objects,
        took.as_secs_f64()
    );

    // Fan-out: every watcher must see every new object once.
    let mut watchers = Vec::new();
    for _ in 0..args.watchers {
        let api = api.clone();
        let n = args.objects;
        let stream = api
            .watch(
                &WatchParams::default().labels("bench=fanout").timeout(290),
                "0",
            )
            .await
            .context("watch")?;
        watchers.push(tokio::spawn(async move {
            let mut stream = stream.boxed();
            let mut seen = 0usize;
            while let Some(ev) = stream.next().await {
                if let Ok(WatchEvent::Added(_)) = ev {
                    seen += 1;
                    if seen == n {
                        return Instant::now();
                    }
                }
            }
            Instant::now()
        }));
    }
    let started = Instant::now();
    create_all(&api, "fanout", args.objects, args.concurrency).await?;
    let mut last = started;
    for w in watchers {
        last = last.max(w.await.context("watcher")?);
    }
    let took = last - started;
    let delivered = args.objects * args.watchers;
    println!(
        "watch fan-out: {:>9.0} events/s delivered ({} objects x {} watchers in {:.2} s)",
        delivered as f64 / took.as_secs_f64(),
        args.objects,
        args.watchers,
        took.as_secs_f64()
    );
    Ok(())
}
