//! When a CronJob's schedule runs (UTC). The schedule is parsed once, by the API server's
//! check (`apiserver/cron.rs`, robfig/cron's `ParseStandard`), so what the server accepts
//! and what runs here cannot drift apart. When both day fields are restricted, a day
//! matching either runs (cron's rule); when one is a bare `*`, both must match.

use crate::apiserver::cron::{Fields, Parsed, parse};
use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Timelike, Utc};

/// Why a CronJob's schedule does not run here.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CronError {
    /// The API server's own check refuses it (its message).
    #[error("{0}")]
    Invalid(String),
    #[error("`@every {0}` is accepted by the API server but not run by the testbed")]
    Every(String),
}

/// A parsed five-field schedule (the API server's parse, `apiserver/cron.rs`: one parser
/// for what is accepted and what runs).
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule(Fields);

impl std::str::FromStr for Schedule {
    type Err = CronError;

    fn from_str(spec: &str) -> Result<Schedule, CronError> {
        match parse(spec.trim()).map_err(CronError::Invalid)? {
            Parsed::Fields(f) => Ok(Schedule(f)),
            Parsed::Every(d) => Err(CronError::Every(d)),
        }
    }
}

/// How far a search looks (robfig gives up after five years too).
const SEARCH_DAYS: i64 = 366 * 5;

impl Schedule {
    fn day_matches(&self, d: NaiveDate) -> bool {
        let f = &self.0;
        let dom = f.days & (1 << d.day()) != 0;
        let dow = f.weekdays & (1 << d.weekday().num_days_from_sunday()) != 0;
        let day = if f.days_star || f.weekdays_star {
            dom && dow
        } else {
            dom || dow
        };
        f.months & (1 << d.month()) != 0 && day
    }

    /// The day's run times (minutes since midnight), in order.
    fn times(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        (0..24u32)
            .filter(|h| self.0.hours & (1 << h) != 0)
            .flat_map(move |h| {
                (0..60u32)
                    .filter(move |m| self.0.minutes & (1 << m) != 0)
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
