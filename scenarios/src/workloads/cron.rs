//! Cron schedules as CronJobs write them (the standard five fields, parsed as Kubernetes'
//! `robfig/cron` `ParseStandard` does): minute, hour, day of month, month, day of week;
//! each a comma list of `*` (or `?`), `N`, `N-M`, any of those with `/step` (`N/step` runs
//! from N to the field's end), month names `jan`…`dec` and day names `sun`…`sat`; the
//! macros `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`.
//! When both day fields are restricted, a day matching either runs (cron's rule); when
//! one starts with `*`, both must match. Times are UTC.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Timelike, Utc};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CronError {
    #[error("expected exactly 5 fields, found {0}: {1:?}")]
    Fields(usize, String),
    #[error("unrecognized descriptor: {0}")]
    Descriptor(String),
    #[error("failed to parse {0:?} in {1} field")]
    Value(String, &'static str),
    #[error("{0:?} is out of range {1}-{2} in {3} field")]
    Range(String, u32, u32, &'static str),
}

/// A parsed schedule: one bit per allowed value of each field.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// The day fields started with `*`/`?` (without a step > 1).
    days_star: bool,
    weekdays_star: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// One field's bounds and names.
struct Field {
    what: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field {
        what: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        what: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        what: "day-of-month",
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        what: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    Field {
        what: "day-of-week",
        min: 0,
        max: 6,
        names: &WEEKDAYS,
    },
];

fn value(f: &Field, s: &str) -> Result<u32, CronError> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = f.names.iter().position(|n| *n == lower) {
        // Months count from 1, days from 0 (Sunday).
        return Ok(i as u32 + f.min);
    }
    let v: u32 = s.parse().map_err(|_| CronError::Value(s.into(), f.what))?;
    if v < f.min || v > f.max {
        return Err(CronError::Range(s.into(), f.min, f.max, f.what));
    }
    Ok(v)
}

/// One comma-separated part: its bits, and whether it was a star without a step.
fn part(f: &Field, expr: &str) -> Result<(u64, bool), CronError> {
    let (range, step) = match expr.split_once('/') {
        Some((r, s)) => {
            let step: u32 = s
                .parse()
                .map_err(|_| CronError::Value(expr.into(), f.what))?;
            if step == 0 {
                return Err(CronError::Value(expr.into(), f.what));
            }
            (r, Some(step))
        }
        None => (expr, None),
    };
    let star = range == "*" || range == "?";
    let (lo, hi) = if star {
        (f.min, f.max)
    } else if let Some((a, b)) = range.split_once('-') {
        (value(f, a)?, value(f, b)?)
    } else {
        let v = value(f, range)?;
        // `N/step` runs to the end of the field.
        (v, if step.is_some() { f.max } else { v })
    };
    if lo > hi {
        return Err(CronError::Value(expr.into(), f.what));
    }
    let step = step.unwrap_or(1);
    let bits = (lo..=hi)
        .step_by(step as usize)
        .fold(0u64, |b, v| b | (1 << v));
    Ok((bits, star && step == 1))
}

fn field(f: &Field, expr: &str) -> Result<(u64, bool), CronError> {
    let mut bits = 0;
    let mut star = false;
    for p in expr.split(',') {
        let (b, s) = part(f, p)?;
        bits |= b;
        star |= s;
    }
    Ok((bits, star))
}

impl std::str::FromStr for Schedule {
    type Err = CronError;

    fn from_str(spec: &str) -> Result<Schedule, CronError> {
        let spec = spec.trim();
        let expanded = match spec {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => return Err(CronError::Descriptor(other.into())),
            other => other,
        };
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        let [m, h, dom, mon, dow] = parts.as_slice() else {
            return Err(CronError::Fields(parts.len(), spec.into()));
        };
        let (minutes, _) = field(&FIELDS[0], m)?;
        let (hours, _) = field(&FIELDS[1], h)?;
        let (days, days_star) = field(&FIELDS[2], dom)?;
        let (months, _) = field(&FIELDS[3], mon)?;
        let (weekdays, weekdays_star) = field(&FIELDS[4], dow)?;
        Ok(Schedule {
            minutes,
            hours,
            days,
            months,
            weekdays,
            days_star,
            weekdays_star,
        })
    }
}

/// How far a search looks (robfig gives up after five years too).
const SEARCH_DAYS: i64 = 366 * 5;

impl Schedule {
    fn day_matches(&self, d: NaiveDate) -> bool {
        let dom = self.days & (1 << d.day()) != 0;
        let dow = self.weekdays & (1 << d.weekday().num_days_from_sunday()) != 0;
        let day = if self.days_star || self.weekdays_star {
            dom && dow
        } else {
            dom || dow
        };
        self.months & (1 << d.month()) != 0 && day
    }

    /// The day's run times (minutes since midnight), in order.
    fn times(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        (0..24u32)
            .filter(|h| self.hours & (1 << h) != 0)
            .flat_map(move |h| {
                (0..60u32)
                    .filter(move |m| self.minutes & (1 << m) != 0)
                    .map(move |m| h * 60 + m)
            })
    }

    fn at(d: NaiveDate, minute: u32) -> Option<DateTime<Utc>> {
        let t = d.and_hms_opt(minute / 60, minute % 60, 0)?;
        Some(Utc.from_utc_datetime(&t))
    }

    /// The first run strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = t.date_naive();
        let now_minute = t.hour() * 60 + t.minute();
        (0..SEARCH_DAYS).find_map(|i| {
            let d = start + Duration::days(i);
            if !self.day_matches(d) {
                return None;
            }
            let m = self.times().find(|m| i > 0 || *m > now_minute)?;
            Self::at(d, m)
        })
    }

    /// The last run at or before `t`.
    pub fn last_at_or_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = t.date_naive();
        let now_minute = t.hour() * 60 + t.minute();
        (0..SEARCH_DAYS).find_map(|i| {
            let d = start - Duration::days(i);
            if !self.day_matches(d) {
                return None;
            }
            let m = self.times().rev().find(|m| i > 0 || *m <= now_minute)?;
            Self::at(d, m)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .expect("time")
    }

    fn next(spec: &str, after: &str) -> String {
        let s: Schedule = spec.parse().expect("parses");
        s.next_after(t(after))
            .map(|t| t.format("%Y-%m-%dT%H:%MZ %a").to_string())
            .unwrap_or_default()
    }

    #[test]
    fn fields_lists_ranges_steps_and_names() {
        // 2026-01-01 is a Thursday.
        assert_eq!(
            next("*/15 * * * *", "2026-01-01T00:07:30Z"),
            "2026-01-01T00:15Z Thu"
        );
        assert_eq!(
            next("5,50 9-17/4 * * *", "2026-01-01T13:51:00Z"),
            "2026-01-01T17:05Z Thu"
        );
        assert_eq!(
            next("0 12 * * mon-fri", "2026-01-02T12:00:00Z"),
            "2026-01-05T12:00Z Mon"
        );
        assert_eq!(
            next("0 0 1 FEB,jul *", "2026-03-01T00:00:00Z"),
            "2026-07-01T00:00Z Wed"
        );
        assert_eq!(
            next("30 2/6 * * *", "2026-01-01T09:00:00Z"),
            "2026-01-01T14:30Z Thu"
        );
        // Both day fields restricted: either may match (the 13th or a Friday).
        assert_eq!(
            next("0 0 13 * 5", "2026-01-03T00:00:00Z"),
            "2026-01-09T00:00Z Fri"
        );
        // A starred day-of-month: the weekday must match as well.
        assert_eq!(
            next("0 0 * * sun", "2026-01-01T00:00:00Z"),
            "2026-01-04T00:00Z Sun"
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-01-01T00:00:00Z"),
            "2028-02-29T00:00Z Tue"
        );
    }

    #[test]
    fn macros_expand_as_cron_does() {
        assert_eq!(
            next("@hourly", "2026-01-01T10:00:00Z"),
            "2026-01-01T11:00Z Thu"
        );
        assert_eq!(
            next("@daily", "2026-01-01T10:00:00Z"),
            "2026-01-02T00:00Z Fri"
        );
        assert_eq!(
            next("@weekly", "2026-01-01T10:00:00Z"),
            "2026-01-04T00:00Z Sun"
        );
        assert_eq!(
            next("@monthly", "2026-01-01T10:00:00Z"),
            "2026-02-01T00:00Z Sun"
        );
        assert_eq!(
            next("@yearly", "2026-01-01T10:00:00Z"),
            "2027-01-01T00:00Z Fri"
        );
        assert_eq!(
            "@annually".parse::<Schedule>(),
            "@yearly".parse::<Schedule>()
        );
    }

    #[test]
    fn the_last_run_is_found_backwards() {
        let s: Schedule = "*/10 * * * *".parse().expect("parses");
        assert_eq!(
            s.last_at_or_before(t("2026-01-01T00:25:59Z")),
            Some(t("2026-01-01T00:20:00Z"))
        );
        assert_eq!(
            s.last_at_or_before(t("2026-01-01T00:20:00Z")),
            Some(t("2026-01-01T00:20:00Z"))
        );
        let s: Schedule = "0 23 * * *".parse().expect("parses");
        assert_eq!(
            s.last_at_or_before(t("2026-01-02T22:00:00Z")),
            Some(t("2026-01-01T23:00:00Z"))
        );
    }

    #[test]
    fn bad_schedules_are_refused() {
        for bad in [
            "* * * *",
            "60 * * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 7",
            "*/0 * * * *",
            "5-1 * * * *",
            "x * * * *",
            "@fortnightly",
            "* * * foo *",
        ] {
            assert!(bad.parse::<Schedule>().is_err(), "{bad}");
        }
    }
}
