//! `GET /v1/metrics/buckets`: per-bucket usage, one point per Europe/Zurich day.
//!
//! Days start at midnight Europe/Zurich: UTC+1 (CET), UTC+2 (CEST) from the last Sunday of
//! March 01:00 UTC to the last Sunday of October 01:00 UTC (the EU rule, applied to every
//! year). The usage is synthetic but consistent: a pure function of the bucket's name, its
//! creation day and the day, zero before the creation day and for days not begun yet.
//! Rules: fakecloud/MODEL.md, "Bucket metrics".

use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::model::buckets::Bucket;
use crate::model::store::State;
use chrono::{Datelike, NaiveDate, TimeDelta};
use serde::Serialize;

/// The longest interval one request may ask for [INF: keeps answers bounded].
pub const MAX_DAYS: i64 = 3660;

/// The last Sunday of `month` in `year`.
fn last_sunday(year: i32, month: u32) -> Option<NaiveDate> {
    let first_of_next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?
    };
    let last = first_of_next.pred_opt()?;
    let back = last.weekday().num_days_from_sunday();
    last.checked_sub_signed(TimeDelta::days(i64::from(back)))
}

/// Whether Central European Summer Time is in force at the UTC instant `t`.
fn is_summer_time(t: Time) -> bool {
    let year = t.year();
    let switch = |month| {
        last_sunday(year, month)
            .and_then(|d| d.and_hms_opt(1, 0, 0))
            .map(|d| d.and_utc())
    };
    match (switch(3), switch(10)) {
        (Some(start), Some(end)) => start <= t && t < end,
        _ => false,
    }
}

/// Midnight Europe/Zurich at the start of `day`, in UTC.
pub fn zurich_midnight(day: NaiveDate) -> Time {
    let utc_midnight = day.and_time(chrono::NaiveTime::MIN).and_utc();
    // Midnight is never inside a switch hour (they happen at 02:00/03:00 local), so the
    // offset in force one hour before UTC midnight is the one of local midnight.
    let winter = utc_midnight - TimeDelta::hours(1);
    if is_summer_time(winter) {
        utc_midnight - TimeDelta::hours(2)
    } else {
        winter
    }
}

/// The Europe/Zurich calendar day the instant `t` falls on.
pub fn zurich_day(t: Time) -> NaiveDate {
    let guess = (t + TimeDelta::hours(1)).date_naive();
    match guess.succ_opt() {
        Some(next) if zurich_midnight(next) <= t => next,
        _ if zurich_midnight(guess) > t => guess.pred_opt().unwrap_or(guess),
        _ => guess,
    }
}

/// `2019-12-31T23:00:00Z`: whole seconds, as the metrics answer shows them.
pub struct Stamp(pub Time);

impl Serialize for Stamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0.format("%Y-%m-%dT%H:%M:%SZ"))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub requests: u64,
    pub object_count: u64,
    pub storage_bytes: u64,
    pub received_bytes: u64,
    pub sent_bytes: u64,
}

#[derive(Serialize)]
pub struct Point {
    pub start: Stamp,
    pub end: Stamp,
    pub usage: Usage,
}

#[derive(Serialize)]
pub struct Subject<'a> {
    pub name: &'a str,
    pub objects_user_id: &'a str,
}

#[derive(Serialize)]
pub struct Series<'a> {
    pub subject: Subject<'a>,
    pub time_series: Vec<Point>,
}

#[derive(Serialize)]
pub struct BucketMetrics<'a> {
    pub start: Stamp,
    pub end: Stamp,
    pub data: Vec<Series<'a>>,
}

/// FNV-1a: a hash that stays the same across runs and Rust versions.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain(b"\0") {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The usage of `bucket` on `day`; `today` is the current Zurich day (later days have not
/// begun).
///
/// Objects arrive at a steady, per-bucket rate, so `object_count` and `storage_bytes` grow
/// linearly from the creation day; `received_bytes` covers at least the day's new objects,
/// and the request and download counters vary from day to day.
pub fn usage(bucket: &Bucket, day: NaiveDate, today: NaiveDate) -> Usage {
    let created = zurich_day(bucket.created_at);
    if day < created || day > today {
        return Usage::default();
    }
    let age = u64::try_from((day - created).num_days()).unwrap_or(0);
    let h = fnv(&[bucket.name.as_bytes()]);
    let per_day = 10 + h % 90;
    let object_size = 1024 * (1 + (h >> 8) % 512);
    let object_count = per_day.saturating_mul(age + 1);
    let d = fnv(&[bucket.name.as_bytes(), day.to_string().as_bytes()]);
    let requests = per_day * 3 + d % (per_day * 4) + object_count / 10;
    Usage {
        requests,
        object_count,
        storage_bytes: object_count.saturating_mul(object_size),
        received_bytes: per_day * object_size + (d >> 16) % object_size,
        sent_bytes: requests.saturating_mul(object_size / 2),
    }
}

/// What a metrics request asks for; empty filters select everything.
#[derive(Debug, Clone)]
pub struct MetricsRequest {
    pub start: NaiveDate,
    pub end: NaiveDate,
    pub bucket_names: Vec<String>,
    pub objects_user_ids: Vec<String>,
}

/// The answer to a metrics request: one entry per bucket selected by the filters and
/// created by the end of the interval (in registration order), one point per day.
pub fn bucket_metrics<'a>(
    st: &'a State,
    now: Time,
    req: &MetricsRequest,
) -> ApiResult<BucketMetrics<'a>> {
    let days = (req.end - req.start).num_days() + 1;
    if days < 1 {
        return Err(ApiError::field(
            "end",
            "The end date lies before the start date.",
        ));
    }
    if days > MAX_DAYS {
        return Err(ApiError::field(
            "end",
            format!("The interval may span at most {MAX_DAYS} days."),
        ));
    }
    let day_list: Vec<NaiveDate> = req.start.iter_days().take(days as usize).collect();
    let end = zurich_midnight(req.end.succ_opt().unwrap_or(req.end));
    let today = zurich_day(now);
    let selected = |b: &&Bucket| {
        (req.bucket_names.is_empty() || req.bucket_names.contains(&b.name))
            && (req.objects_user_ids.is_empty()
                || req.objects_user_ids.contains(&b.objects_user_id))
            && zurich_day(b.created_at) <= req.end
    };
    let data = st
        .buckets
        .values()
        .filter(selected)
        .map(|b| Series {
            subject: Subject {
                name: &b.name,
                objects_user_id: &b.objects_user_id,
            },
            time_series: day_list
                .iter()
                .map(|d| Point {
                    start: Stamp(zurich_midnight(*d)),
                    end: Stamp(zurich_midnight(d.succ_opt().unwrap_or(*d))),
                    usage: usage(b, *d, today),
                })
                .collect(),
        })
        .collect();
    Ok(BucketMetrics {
        start: Stamp(zurich_midnight(req.start)),
        end: Stamp(end),
        data,
    })
}

/// Parses `YYYY-MM-DD` strictly (four-digit year, two-digit month and day).
pub fn parse_day(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    let shape = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return None;
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_time;

    fn day(s: &str) -> NaiveDate {
        parse_day(s).expect("day")
    }

    fn at(s: &str) -> Time {
        parse_time(s).expect("time")
    }

    #[test]
    fn last_sundays() {
        assert_eq!(last_sunday(2024, 3), Some(day("2024-03-31")));
        assert_eq!(last_sunday(2024, 10), Some(day("2024-10-27")));
        assert_eq!(last_sunday(2025, 3), Some(day("2025-03-30")));
        assert_eq!(last_sunday(2025, 10), Some(day("2025-10-26")));
        assert_eq!(last_sunday(2026, 12), Some(day("2026-12-27")));
    }

    #[test]
    fn midnights_in_winter_summer_and_on_switch_days() {
        assert_eq!(
            zurich_midnight(day("2020-01-01")),
            at("2019-12-31T23:00:00Z")
        );
        assert_eq!(
            zurich_midnight(day("2020-07-01")),
            at("2020-06-30T22:00:00Z")
        );
        // 2025-03-30 is the spring switch: it starts in CET and lasts 23 hours.
        assert_eq!(
            zurich_midnight(day("2025-03-30")),
            at("2025-03-29T23:00:00Z")
        );
        assert_eq!(
            zurich_midnight(day("2025-03-31")),
            at("2025-03-30T22:00:00Z")
        );
        // 2025-10-26 is the autumn switch: it starts in CEST and lasts 25 hours.
        assert_eq!(
            zurich_midnight(day("2025-10-26")),
            at("2025-10-25T22:00:00Z")
        );
        assert_eq!(
            zurich_midnight(day("2025-10-27")),
            at("2025-10-26T23:00:00Z")
        );
    }

    #[test]
    fn zurich_day_of_instants() {
        assert_eq!(zurich_day(at("2019-12-31T23:00:00Z")), day("2020-01-01"));
        assert_eq!(zurich_day(at("2019-12-31T22:59:59Z")), day("2019-12-31"));
        assert_eq!(zurich_day(at("2020-06-30T22:00:00Z")), day("2020-07-01"));
        assert_eq!(zurich_day(at("2020-06-30T21:59:59Z")), day("2020-06-30"));
    }

    #[test]
    fn dates_parse_strictly() {
        assert!(parse_day("2020-01-01").is_some());
        for bad in [
            "2020-1-01",
            "2020-13-01",
            "2020-02-30",
            "20200101",
            "",
            "2020-01-01T00",
        ] {
            assert!(parse_day(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn usage_is_zero_before_creation_and_grows_after() {
        let b = Bucket {
            name: "b1".into(),
            objects_user_id: "u".into(),
            created_at: at("2026-01-05T12:00:00Z"),
        };
        let today = day("2026-02-01");
        assert_eq!(usage(&b, day("2026-01-04"), today), Usage::default());
        assert_eq!(usage(&b, day("2026-02-02"), today), Usage::default());
        let first = usage(&b, day("2026-01-05"), today);
        let second = usage(&b, day("2026-01-06"), today);
        assert!(first.object_count > 0 && second.object_count > first.object_count);
        assert!(second.storage_bytes - first.storage_bytes <= second.received_bytes);
        assert_eq!(usage(&b, day("2026-01-06"), today), second, "deterministic");
    }
}
