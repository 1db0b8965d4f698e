//! The `cloudscale-cloud-controller-manager` command: parses flags, sets up logging, runs
//! until SIGTERM. In the library so that another binary target (the testbed's process
//! tests build one) runs exactly what the released binary runs.

use crate::app::{self, Environment};
use crate::options::{Command, Options};
use clap::Parser;
use std::process::ExitCode;

/// Whether log lines on stderr may carry terminal colour: only for a person at a terminal.
/// Logs written to a file or a pipe (a pod's log) stay plain text; NO_COLOR (no-color.org)
/// turns colour off everywhere.
pub fn colour_wanted() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none()
}

fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_wanted())
        .with_writer(std::io::stderr);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// SIGTERM or SIGINT. The handlers are installed at once (inside a runtime), not when the
/// future is first polled: a signal sent as soon as the CCM logs that it started must stop
/// it cleanly, not meet the default action.
fn termination() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate()).ok();
    let int = signal(SignalKind::interrupt()).ok();
    async move {
        let recv = |s: Option<tokio::signal::unix::Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = recv(term) => {}
            _ = recv(int) => {}
        }
    }
}

/// Parses flags; help and version print and succeed, errors print one line (clap's message
/// without its "error: " prefix and its usage) and exit 2.
fn parse<T: Parser>(args: impl IntoIterator<Item = String>, program: &str) -> Result<T, ExitCode> {
    T::try_parse_from(args).map_err(|e| {
        use clap::error::ErrorKind;
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // clap's message up to its usage, on one line (a missing argument is named on the
        // line after "the following required arguments were not provided:").
        let text = e.to_string();
        let line = text
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        let line = line.trim_start_matches("error: ");
        eprintln!("{program}: {line}");
        ExitCode::from(2)
    })
}

fn plan_command(args: crate::options::PlanArgs) -> ExitCode {
    init_logging("text");
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cloudscale-cloud-controller-manager plan: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(crate::preview::run(args, Environment::from_process())) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cloudscale-cloud-controller-manager plan: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The whole command: `plan` or the controller manager.
pub fn main() -> ExitCode {
    let mut opts = match parse::<Options>(std::env::args(), "cloudscale-cloud-controller-manager") {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Some(Command::Plan(args)) = opts.command.take() {
        return plan_command(args);
    }
    if let Err(e) = opts.validate() {
        eprintln!("cloudscale-cloud-controller-manager: {e}");
        return ExitCode::from(2);
    }
    init_logging(&opts.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cloudscale-cloud-controller-manager: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stop = {
        let _in_runtime = runtime.enter();
        termination()
    };
    match runtime.block_on(app::run(opts, Environment::from_process(), stop, |_| {})) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cloudscale-cloud-controller-manager: {e}");
            ExitCode::FAILURE
        }
    }
}
