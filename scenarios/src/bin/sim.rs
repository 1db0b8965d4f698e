//! Runs seeded fault schedules in the deterministic simulation and checks every invariant:
//!
//! ```sh
//! cargo run --release -p scenarios --bin sim -- --schedules 2000 [--seed S] [--trace FILE]
//! ```
//!
//! Prints one line per failing schedule (seed, invariant, detail, the shortest failing prefix
//! and a replay command), `trace digest: HEX` over all schedules run, the speed, and ends
//! with `N passed, M failed`. The same arguments print the same digest.

use clap::Parser;
use scenarios::sim::Fnv;
use scenarios::sim::Schedule;
use scenarios::sim::{self, Outcome};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "Seeded fault schedules in the deterministic simulation")]
struct Args {
    /// How many schedules to run (seeds S, S+1, ...).
    #[arg(long, default_value_t = 100)]
    schedules: u64,
    /// The first seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Derive the first seed from this text (CI passes the commit id): every commit runs a
    /// block of schedules no run looked at before, far from the fixed seeds.
    #[arg(long, value_name = "TEXT", conflicts_with = "seed")]
    seed_from: Option<String>,
    /// Write every schedule's trace to this file (one block per seed).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Do not shrink failures to their shortest failing prefix.
    #[arg(long)]
    no_shrink: bool,
    /// Known failures (`SEED INVARIANT...  # why` per line): a schedule breaking only the
    /// invariants listed for its seed is reported as known; one listed that passes is an
    /// error (take it off the list).
    #[arg(long)]
    known: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// How the simulation scales: S Services (one port each) on N nodes, created at once,
    /// then M virtual minutes; prints wall time, simulated seconds per real second and the
    /// requests made.
    Scale {
        #[arg(long, default_value_t = 10)]
        services: usize,
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        #[arg(long, default_value_t = 10)]
        minutes: u64,
    },
    /// The property-based suite of Service changes (`scenarios::sim::props`): runs N
    /// generated cases and writes the markdown report (per change type: the reference's
    /// class and figure, this CCM's announced class, the downtime observed), ending with
    /// `N passed, M failed`.
    Report {
        #[arg(long, default_value_t = scenarios::sim::props::CASES)]
        cases: usize,
        #[arg(long, default_value_t = scenarios::sim::props::SEED)]
        seed: u64,
        /// Write the report here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// For each property broken, shrink its first failing case to a minimal one and
        /// print it (JSON, with its replay command).
        #[arg(long)]
        shrink: bool,
    },
    /// N virtual days of churn in one world (Services created, edited, deleted; nodes
    /// stopped, started, replaced; faults now and then) around a steady population, sampled
    /// every H virtual hours: process memory, the CCM's cache sizes and metric series, live
    /// objects and what the harness keeps; prints the samples and whether they stay flat
    /// (exit code 1 if not). See scenarios/README.md, "Soak".
    Soak {
        #[arg(long, default_value_t = 7.0)]
        days: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// About this many Services at any time.
        #[arg(long, default_value_t = 20)]
        services: usize,
        /// About this many nodes at any time.
        #[arg(long, default_value_t = 5)]
        nodes: usize,
        #[arg(long, default_value_t = 6.0)]
        sample_hours: f64,
        /// Also write every sample, every column, as CSV here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Keep the whole trace and write it here (memory grows with it: for short soaks,
        /// to see where two runs of one seed part).
        #[arg(long)]
        trace: Option<PathBuf>,
    },
    /// Plays one case of the property-based suite (its JSON, as a failure prints it) and
    /// prints its steps, violations and trace.
    Case { json: String },
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    // Logs only when asked (`SIM_LOG=info`): thousands of runs would drown a terminal.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("SIM_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    }
    match args.command.take() {
        Some(command) => subcommand(command, args.threads),
        None => schedules(&args),
    }
}

/// Runs a subcommand (`scale`, `report`, `soak`, `case`).
fn subcommand(command: Command, threads: Option<usize>) -> ExitCode {
    match command {
        Command::Scale {
            services,
            nodes,
            minutes,
        } => match scenarios::sim::scale(services, nodes, minutes) {
            Ok(report) => {
                println!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("sim scale: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Report {
            cases,
            seed,
            out,
            shrink,
        } => props_report(cases, seed, out, shrink, threads),
        Command::Case { json } => case(&json),
        Command::Soak {
            days,
            seed,
            services,
            nodes,
            sample_hours,
            out,
            trace,
        } => {
            let population = (services, nodes);
            soak(days, seed, population, sample_hours, out, trace)
        }
    }
}

/// Runs the seeded schedules and reports failures, the digest and the speed.
fn schedules(args: &Args) -> ExitCode {
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let known = match &args.known {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => parse_known(&text),
            Err(e) => {
                eprintln!("sim: cannot read {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
        None => BTreeMap::new(),
    };
    let keep = args.trace.is_some();
    let first = first_seed(args);
    let started = Instant::now();
    let outcomes = scenarios::sim::run_many(first, args.schedules, threads, keep);
    let wall = started.elapsed();
    let tally = Tally::of(&outcomes, &known, !args.no_shrink);
    if let Some(path) = &args.trace {
        write_traces(path, &outcomes);
    }
    println!("trace digest: {:016x}", tally.digest.0);
    println!(
        "{} schedules in {:.1} s on {threads} threads: {:.1} schedules/s, {:.0} simulated s per real s",
        outcomes.len(),
        wall.as_secs_f64(),
        outcomes.len() as f64 / wall.as_secs_f64().max(1e-9),
        tally.simulated / wall.as_secs_f64().max(1e-9),
    );
    let (failed, unexpected) = (tally.failed, tally.unexpected);
    let known_failed = failed - unexpected.min(failed);
    if known_failed > 0 {
        println!(
            "{} passed, {failed} failed ({known_failed} known: see --known)",
            outcomes.len() - failed
        );
    } else {
        println!("{} passed, {failed} failed", outcomes.len() - failed);
    }
    if unexpected == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The first seed: `--seed`, or derived from `--seed-from` (and said so).
fn first_seed(args: &Args) -> u64 {
    let Some(text) = &args.seed_from else {
        return args.seed;
    };
    let first = scenarios::sim::seed_base(text);
    println!(
        "seeds {first}-{} (derived from {text}; replay one with --schedules 1 --seed SEED)",
        first + args.schedules.saturating_sub(1)
    );
    first
}

/// The schedules' digest and counts; failures are printed as they are counted.
#[derive(Default)]
struct Tally {
    digest: Fnv,
    failed: usize,
    /// Failures not listed as known, and known failures that pass now.
    unexpected: usize,
    simulated: f64,
}

impl Tally {
    fn of(outcomes: &[Outcome], known: &BTreeMap<u64, BTreeSet<String>>, shrink: bool) -> Tally {
        let mut t = Tally::default();
        for o in outcomes {
            t.digest.write(&o.digest.to_le_bytes());
            t.simulated += o.simulated.as_secs_f64();
            let listed = known.get(&o.seed);
            if o.violations.is_empty() {
                if listed.is_some() {
                    t.unexpected += 1;
                    println!(
                        "FIXED seed {}: listed as a known failure, passes now: take it off the list",
                        o.seed
                    );
                }
                continue;
            }
            t.failed += 1;
            let expected =
                listed.is_some_and(|l| o.violations.iter().all(|v| l.contains(v.invariant)));
            if expected {
                println!(
                    "known seed {}: {}",
                    o.seed,
                    o.violations
                        .iter()
                        .map(|v| v.invariant)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            } else {
                t.unexpected += 1;
                report(o, shrink);
            }
        }
        t
    }
}

/// Every schedule's trace, one block per seed.
fn write_traces(path: &std::path::Path, outcomes: &[Outcome]) {
    match std::fs::File::create(path) {
        Ok(mut f) => {
            for o in outcomes {
                let _ = writeln!(f, "# seed {} digest {:016x}", o.seed, o.digest);
                for l in o.trace.iter().flatten() {
                    let _ = writeln!(f, "{l}");
                }
            }
        }
        Err(e) => eprintln!("sim: cannot write {}: {e}", path.display()),
    }
}

/// `SEED INVARIANT...  # why` lines; `#` starts a comment.
fn parse_known(text: &str) -> BTreeMap<u64, BTreeSet<String>> {
    text.lines()
        .filter_map(|l| {
            let l = l.split('#').next()?.trim();
            let mut words = l.split_whitespace();
            let seed = words.next()?.parse().ok()?;
            Some((seed, words.map(str::to_string).collect()))
        })
        .collect()
}

fn report(o: &Outcome, shrink: bool) {
    for v in &o.violations {
        println!("FAIL seed {}: {}: {}", o.seed, v.invariant, v.detail);
    }
    let Some(first) = o.violations.first() else {
        return;
    };
    let schedule = Schedule::generate(o.seed);
    if shrink {
        let (prefix, failing, passing) = sim::shrink(&schedule, first.invariant);
        println!(
            "  shortest failing prefix: {} of {} steps:",
            prefix.steps.len(),
            schedule.steps.len()
        );
        for s in &prefix.steps {
            println!("    at {:>4} s: {:?}", s.at.as_secs(), s.action);
        }
        // The prefix one step shorter keeps the invariant: this step is where the run
        // diverges from a passing one.
        if let Some(last) = prefix.steps.last() {
            println!(
                "  first failing step: at {} s (after the warm-up): {:?}",
                last.at.as_secs(),
                last.action
            );
        }
        // Where its trace leaves the passing one's, and what follows.
        let (a, b) = (
            failing.trace.unwrap_or_default(),
            passing.and_then(|p| p.trace).unwrap_or_default(),
        );
        if let Some((i, _, _)) = scenarios::sim::first_difference(&a, &b) {
            println!("  the trace diverges from the passing prefix's at line {i}:");
            for line in a.iter().skip(i).take(8) {
                println!("    {line}");
            }
        }
    }
    println!(
        "  replay: cargo run --release -p scenarios --bin sim -- --schedules 1 --seed {} --trace sim-{}.trace",
        o.seed, o.seed
    );
}

fn cores(threads: Option<usize>) -> usize {
    threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

fn props_report(
    cases: usize,
    seed: u64,
    out: Option<PathBuf>,
    shrink: bool,
    threads: Option<usize>,
) -> ExitCode {
    use scenarios::sim::props;
    let started = Instant::now();
    let drawn = props::cases(seed, cases);
    let outcomes = props::run_all(&drawn, cores(threads));
    let summary = props::summarize(&outcomes);
    let text = summary.markdown(seed, started.elapsed().as_secs_f64());
    for (i, v) in &summary.violations {
        eprintln!(
            "case {i}: {}: {}\n  replay: {}",
            v.property,
            v.detail,
            drawn[*i].replay_command()
        );
    }
    if shrink {
        let mut seen = BTreeSet::new();
        for (i, v) in &summary.violations {
            if !seen.insert(v.property) {
                continue;
            }
            if let Some((minimal, out)) = props::shrink(seed, *i, v.property, 200) {
                eprintln!(
                    "minimal case for {} (from case {i}):\n  {}\n  violations: {:?}\n  replay: {}",
                    v.property,
                    serde_json::to_string(&minimal).unwrap_or_default(),
                    out.violations
                        .iter()
                        .map(|v| format!("{}: {}", v.property, v.detail))
                        .collect::<Vec<_>>(),
                    minimal.replay_command()
                );
            }
        }
    }
    match out {
        Some(path) => {
            if let Err(e) = std::fs::write(&path, &text) {
                eprintln!("sim report: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            println!("{} passed, {} failed", summary.passed, summary.failed);
        }
        None => print!("{text}"),
    }
    if summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// mimalloc, which allocates and frees the schedules' millions of small JSON values much
/// faster than glibc (a quarter of a run went to glibc's malloc and free), counting the live
/// heap bytes for `sim soak` only: one counter shared by the worker threads of a sweep would
/// cost it a contended atomic add per allocation.
struct CountingAlloc;

static HEAP_LIVE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
/// Set once, before `sim soak` starts its world: the few blocks allocated before (the
/// arguments) and freed during the soak make the figure at most their size too low.
static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

// SAFETY: every call is passed on to mimalloc unchanged; the counter only
// follows the sizes.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `alloc` hold for `MiMalloc.alloc`.
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) };
        if !p.is_null() && COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            HEAP_LIVE.fetch_add(layout.size() as i64, std::sync::atomic::Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `alloc` or `realloc` above with this layout.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) };
        if COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            HEAP_LIVE.fetch_sub(layout.size() as i64, std::sync::atomic::Ordering::Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees for `realloc` hold for `MiMalloc.realloc`.
        let p = unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() && COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            HEAP_LIVE.fetch_sub(layout.size() as i64, std::sync::atomic::Ordering::Relaxed);
            HEAP_LIVE.fetch_add(new_size as i64, std::sync::atomic::Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn heap_live() -> u64 {
    HEAP_LIVE
        .load(std::sync::atomic::Ordering::Relaxed)
        .max(0)
        .unsigned_abs()
}

fn soak(
    days: f64,
    seed: u64,
    (services, nodes): (usize, usize),
    sample_hours: f64,
    out: Option<PathBuf>,
    trace: Option<PathBuf>,
) -> ExitCode {
    use scenarios::sim::{self, SoakConfig};
    use std::time::Duration;
    let (Ok(duration), Ok(sample_every)) = (
        Duration::try_from_secs_f64(days * 86_400.0),
        Duration::try_from_secs_f64(sample_hours * 3600.0),
    ) else {
        eprintln!("sim soak: --days and --sample-hours must be positive numbers");
        return ExitCode::FAILURE;
    };
    COUNTING.store(true, std::sync::atomic::Ordering::Relaxed);
    let config = SoakConfig {
        services,
        nodes,
        sample_every,
        heap: Some(heap_live),
        whole_trace: trace.is_some(),
        ..SoakConfig::new(seed, duration)
    };
    let report = match sim::soak(&config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sim soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", report.text());
    if let Some(path) = out
        && let Err(e) = std::fs::write(&path, sim::csv(&report.samples))
    {
        eprintln!("sim soak: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    if let (Some(path), Some(lines)) = (&trace, &report.trace)
        && let Err(e) = std::fs::write(path, lines.join("\n") + "\n")
    {
        eprintln!("sim soak: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    if report.verdict.flat() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn case(json: &str) -> ExitCode {
    let case: scenarios::sim::props::Case = match serde_json::from_str(json) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sim case: not a case: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = scenarios::sim::props::run(&case, true);
    for line in out.trace.iter().flatten() {
        println!("{line}");
    }
    for s in &out.steps {
        println!(
            "step {:?}: {:?}, documented {}, announced {}, preview {:?}, observed {:?} s",
            s.change, s.kind, s.documented, s.predicted, s.preview, s.observed
        );
        for line in &s.announced {
            println!("  announced {line}");
        }
    }
    for v in &out.violations {
        println!("violation {}: {}", v.property, v.detail);
    }
    println!(
        "{} passed, {} failed",
        out.checks.saturating_sub(out.violations.len()),
        out.violations.len()
    );
    if out.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
