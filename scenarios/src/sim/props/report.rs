//! Many cases at once: run in parallel, the first failure shrunk to a minimal case, and the
//! outcomes summed up per change type into the markdown report (`sim report`) whose table
//! `ccm/README.md` shows ("Impact of Service changes").

use super::Case;
use super::model::{self, Kind, ROWS};
use super::play::{self, Outcome};
use super::strategy;
use ccm::service::pure::plan::Impact;
use proptest::strategy::ValueTree;
use std::collections::{BTreeMap, BTreeSet};

/// The seed and case count the README's table comes from (and `ci/test` runs).
pub const SEED: u64 = 1;
pub const CASES: usize = 500;

/// Runs `cases` on `threads` threads; outcomes in case order.
pub fn run_all(cases: &[Case], threads: usize) -> Vec<Outcome> {
    crate::sim::parallel(cases.len(), threads, |i| play::run(&cases[i], false))
}

/// The case `index` of the seeded run shrunk with proptest's simplification while it still
/// breaks `property`: fewer changes, ports, nodes and annotations, smaller values. At most
/// `budget` runs; `None` if the run has no such case.
pub fn shrink(seed: u64, index: usize, property: &str, budget: usize) -> Option<(Case, Outcome)> {
    let mut tree = strategy::case_trees(seed, index + 1).pop()?;
    let fails = |c: &Case| {
        let out = play::run(c, true);
        let broke = out.violations.iter().any(|v| v.property == property);
        (broke, out)
    };
    let mut best = tree.current();
    let (_, mut best_out) = fails(&best);
    let mut runs = 0;
    while runs < budget && tree.simplify() {
        runs += 1;
        let candidate = tree.current();
        let (broke, out) = fails(&candidate);
        if broke {
            best = candidate;
            best_out = out;
        } else if !tree.complicate() {
            break;
        }
    }
    Some((best, best_out))
}

/// Per change type: the cases, the classes the CCM announced, the downtimes observed.
#[derive(Debug, Default, Clone)]
struct Agg {
    cases: usize,
    predicted: BTreeSet<Impact>,
    observed: Vec<f64>,
}

/// The outcomes summed up.
#[derive(Debug, Default)]
pub struct Summary {
    rows: BTreeMap<Kind, Agg>,
    pub passed: usize,
    pub failed: usize,
    pub violations: Vec<(usize, super::verdict::Violation)>,
    pub cases: usize,
    pub skipped_changes: usize,
}

pub fn summarize(outcomes: &[Outcome]) -> Summary {
    let mut s = Summary {
        cases: outcomes.len(),
        ..Summary::default()
    };
    for (i, o) in outcomes.iter().enumerate() {
        s.failed += o.violations.len();
        s.passed += o.checks.saturating_sub(o.violations.len());
        s.violations
            .extend(o.violations.iter().map(|v| (i, v.clone())));
        for step in &o.steps {
            if !step.played {
                s.skipped_changes += 1;
                continue;
            }
            let agg = s.rows.entry(step.kind).or_default();
            agg.cases += 1;
            agg.predicted.insert(step.predicted);
            if let Some(x) = step.observed {
                agg.observed.push(x);
            }
        }
        let removal = s.rows.entry(Kind::Removal).or_default();
        removal.cases += 1;
    }
    s
}

fn figure(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

fn spread(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let (min, med, max) = (v[0], v[v.len() / 2], v[v.len() - 1]);
    format!("{} / {} / {}", figure(min), figure(med), figure(max))
}

impl Summary {
    /// The impact table: every change type with the reference's class and figure, the
    /// classes this CCM announced, and the downtime observed (min / median / max) over the
    /// cases that had it.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| change | reference class | reference on fakecloud | this CCM's class (announced) | this CCM on fakecloud: min / median / max | changes |\n\
             | --- | --- | --- | --- | --- | --- |\n",
        );
        for r in ROWS {
            let agg = self.rows.get(&r.kind).cloned().unwrap_or_default();
            let classes = if r.kind == Kind::Removal {
                "load balancer deleted, floating IPs unassigned".to_string()
            } else if agg.predicted.is_empty() {
                "-".to_string()
            } else {
                agg.predicted
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let observed = if r.kind == Kind::Removal {
                "-".to_string()
            } else {
                spread(&agg.observed)
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                r.change, r.reference_class, r.reference_on_fakecloud, classes, observed, agg.cases
            ));
        }
        out
    }

    /// The whole report.
    pub fn markdown(&self, seed: u64, wall_s: f64) -> String {
        let mut out = format!(
            "# Impact of Service changes: property-based report\n\n\
             {} generated cases (seed {seed}), each a Service on 1-6 nodes taken through 1-4 \
             changes and deleted or re-created from scratch, run against the real CCM on the \
             simulation's virtual clock in {wall_s:.0} s. Downtime is for new connections, in \
             virtual seconds, from fakecloud's data-plane oracle over every entry address, \
             port and client the change leaves allowed; {} drawn changes did not apply where \
             they came (stopping the last node that serves, removing the only port) and were \
             skipped.\n\n",
            self.cases, self.skipped_changes
        );
        out.push_str(&self.table());
        out.push_str("\nBounds per announced class (virtual s): ");
        let bounds: Vec<String> = [
            Impact::None,
            Impact::Minimal,
            Impact::ListenerRecreate,
            Impact::MemberRecreate,
        ]
        .iter()
        .map(|c| format!("{c} {}", figure(model::bound(*c, 4.0, 2, false))))
        .collect();
        out.push_str(&bounds.join(", "));
        out.push_str(
            " (at the default monitor and 2 ports; a replaced monitor adds delay × up threshold, \
             member-recreate grows with the ports).\n",
        );
        if !self.violations.is_empty() {
            out.push_str("\n## Violations\n\n");
            for (i, v) in &self.violations {
                out.push_str(&format!("- case {i}: `{}`: {}\n", v.property, v.detail));
            }
        }
        out.push_str(&format!(
            "\n{} passed, {} failed\n",
            self.passed, self.failed
        ));
        out
    }
}
