//! The virtual clock that drives every timestamp and status transition in fakecloud.
//!
//! Statuses are never changed by background tasks: each record stores *when* its next
//! transition happens, and readers compare that with [`Clock::now`]. That keeps the fake
//! deterministic under a manual clock and cheap under a real one.

use chrono::{DateTime, TimeDelta, Utc};
use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// Virtual time, in UTC.
pub type Time = DateTime<Utc>;

/// How the clock moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockMode {
    /// Virtual time follows real time multiplied by `scale` (100 makes 120 virtual seconds pass
    /// in 1.2 real seconds).
    Scaled { scale: f64 },
    /// Virtual time only moves when [`Clock::advance`] is called.
    Manual,
    /// Virtual time follows tokio's clock from [`MANUAL_EPOCH`]: on a runtime whose clock is
    /// paused (a deterministic simulation) it moves only when every task waits, together
    /// with every other component of the simulation. [`Clock::advance`] still adds to it.
    Simulated,
}

/// What the timestamps of API answers (`created_at`, …) show under a scaled clock.
///
/// Virtual time runs `scale` times faster than the wall clock, so after 40 real seconds at
/// `--time-scale 100` it is more than an hour ahead: clients that compare a resource's
/// `created_at` with their own clock (token expiry checks, "created in the future"
/// sanity checks) reject it. `Wall` maps every virtual instant back onto the wall clock,
/// while virtual durations still drive every status transition. See fakecloud/MODEL.md,
/// "Virtual clock".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timestamps {
    /// The virtual instant, mapped onto the wall clock: `start + (t - start) / scale`.
    #[default]
    Wall,
    /// The virtual instant itself.
    Virtual,
}

impl Timestamps {
    pub fn parse(s: &str) -> Option<Timestamps> {
        match s {
            "wall" => Some(Timestamps::Wall),
            "virtual" => Some(Timestamps::Virtual),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Timestamps::Wall => "wall",
            Timestamps::Virtual => "virtual",
        }
    }
}

/// How a virtual instant is shown in API answers: a pure mapping, copied into each
/// rendering context so that rendering takes no lock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp {
    origin_virtual: Time,
    origin_wall: Time,
    /// Wall seconds per virtual second; `None` shows virtual time unchanged.
    rate: Option<f64>,
}

impl Stamp {
    /// Virtual time shown as it is.
    pub const IDENTITY: Stamp = Stamp {
        origin_virtual: DateTime::<Utc>::MIN_UTC,
        origin_wall: DateTime::<Utc>::MIN_UTC,
        rate: None,
    };

    /// The timestamp an API answer shows for the virtual instant `t`.
    pub fn apply(&self, t: Time) -> Time {
        let Some(rate) = self.rate else { return t };
        let micros = (t - self.origin_virtual).num_microseconds().unwrap_or(0) as f64;
        let shown = (micros * rate).round();
        let shown = shown.clamp(i64::MIN as f64 / 2.0, i64::MAX as f64 / 2.0) as i64;
        self.origin_wall + TimeDelta::microseconds(shown)
    }
}

#[derive(Debug)]
struct Inner {
    mode: ClockMode,
    stamp: Stamp,
    /// Virtual time at `anchor_real`.
    anchor_virtual: Time,
    anchor_real: Instant,
    /// Tokio's clock when the simulated clock started.
    anchor_tokio: tokio::time::Instant,
}

/// A clock shared by the whole fake.
#[derive(Debug)]
pub struct Clock {
    inner: Mutex<Inner>,
}

impl Clock {
    pub fn new(mode: ClockMode) -> Self {
        let start = match mode {
            ClockMode::Manual | ClockMode::Simulated => {
                parse_time(MANUAL_EPOCH).unwrap_or_else(Utc::now)
            }
            ClockMode::Scaled { .. } => Utc::now(),
        };
        Clock {
            inner: Mutex::new(Inner {
                mode,
                stamp: Stamp::IDENTITY,
                anchor_virtual: start,
                anchor_real: Instant::now(),
                anchor_tokio: tokio::time::Instant::now(),
            }),
        }
    }

    /// A clock whose API timestamps follow `timestamps`. Only a scaled clock with a scale
    /// other than 1 differs: a manual or simulated clock starts at a fixed instant so that
    /// runs repeat to the byte, and its timestamps stay virtual.
    pub fn with_timestamps(mode: ClockMode, timestamps: Timestamps) -> Self {
        let clock = Clock::new(mode);
        if let (ClockMode::Scaled { scale }, Timestamps::Wall) = (mode, timestamps) {
            let mut inner = clock.inner.lock();
            if scale.is_finite() && scale > 0.0 && scale != 1.0 {
                inner.stamp = Stamp {
                    origin_virtual: inner.anchor_virtual,
                    origin_wall: inner.anchor_virtual,
                    rate: Some(1.0 / scale),
                };
            }
        }
        clock
    }

    pub fn mode(&self) -> ClockMode {
        self.inner.lock().mode
    }

    /// How API answers show virtual instants.
    pub fn stamp(&self) -> Stamp {
        self.inner.lock().stamp
    }

    /// The current virtual time.
    pub fn now(&self) -> Time {
        let inner = self.inner.lock();
        match inner.mode {
            ClockMode::Manual => inner.anchor_virtual,
            ClockMode::Scaled { scale } => {
                let real = inner.anchor_real.elapsed().as_secs_f64() * scale;
                inner.anchor_virtual + delta_from_secs(real)
            }
            ClockMode::Simulated => {
                let elapsed = inner.anchor_tokio.elapsed().as_secs_f64();
                inner.anchor_virtual + delta_from_secs(elapsed)
            }
        }
    }

    /// Moves virtual time forward by `by` (in any mode; in scaled mode it adds to the
    /// real-time progression).
    pub fn advance(&self, by: Duration) {
        let mut inner = self.inner.lock();
        inner.anchor_virtual += delta_from_secs(by.as_secs_f64());
    }
}

/// Converts virtual seconds to a chrono delta, saturating on absurd values.
pub fn delta_from_secs(secs: f64) -> TimeDelta {
    if !secs.is_finite() || secs <= 0.0 {
        return TimeDelta::zero();
    }
    let micros = (secs * 1_000_000.0).min(i64::MAX as f64 / 2.0) as i64;
    TimeDelta::microseconds(micros)
}

/// Where a manual clock starts: a fixed instant, so that runs are identical to the byte.
pub const MANUAL_EPOCH: &str = "2026-01-01T00:00:00Z";

/// Serde helper: a timestamp in the API's format.
pub fn ser_time<S: serde::Serializer>(t: &Time, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&t.format("%Y-%m-%dT%H:%M:%S%.6fZ"))
}

/// Serde helper for optional timestamps.
pub fn ser_opt_time<S: serde::Serializer>(t: &Option<Time>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => ser_time(t, s),
        None => s.serialize_none(),
    }
}

/// Parses an RFC 3339 timestamp into virtual time.
pub fn parse_time(s: &str) -> Option<Time> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Formats a timestamp as the API does: RFC 3339, UTC, microseconds, `Z`.
pub fn format_time(t: Time) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_on_advance() {
        let clock = Clock::new(ClockMode::Manual);
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.now() - t0, TimeDelta::seconds(90));
    }

    #[test]
    fn scaled_clock_runs_faster_than_real_time() {
        let clock = Clock::new(ClockMode::Scaled { scale: 1000.0 });
        let t0 = clock.now();
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(5) {
            std::hint::spin_loop();
        }
        assert!(clock.now() - t0 >= TimeDelta::seconds(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_simulated_clock_moves_with_tokios_clock_only() {
        let clock = Clock::new(ClockMode::Simulated);
        let t0 = clock.now();
        assert_eq!(format_time(t0), "2026-01-01T00:00:00.000000Z");
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert_eq!(clock.now() - t0, TimeDelta::seconds(120));
    }

    #[test]
    fn wall_timestamps_follow_the_wall_clock_while_virtual_time_runs_ahead() {
        let clock = Clock::with_timestamps(ClockMode::Scaled { scale: 100.0 }, Timestamps::Wall);
        let t0 = clock.now();
        // 40 real seconds at 100x: 4,000 virtual seconds later.
        let later = t0 + TimeDelta::seconds(4000);
        let stamp = clock.stamp();
        // `t0` is a few real microseconds after the start, so compare with a tolerance.
        let near = |d: TimeDelta, want: TimeDelta| (d - want).abs() < TimeDelta::milliseconds(5);
        assert!(near(stamp.apply(t0) - t0, TimeDelta::zero()));
        assert!(near(
            stamp.apply(later) - stamp.apply(t0),
            TimeDelta::seconds(40)
        ));
        // Order is kept, and durations shrink by the scale.
        assert!(stamp.apply(later + TimeDelta::seconds(1)) > stamp.apply(later));
        let virt = Clock::with_timestamps(ClockMode::Scaled { scale: 100.0 }, Timestamps::Virtual);
        assert_eq!(virt.stamp().apply(later), later);
    }

    #[test]
    fn manual_and_unscaled_clocks_keep_virtual_timestamps() {
        for mode in [
            ClockMode::Manual,
            ClockMode::Simulated,
            ClockMode::Scaled { scale: 1.0 },
        ] {
            let clock = Clock::with_timestamps(mode, Timestamps::Wall);
            let t = clock.now() + TimeDelta::seconds(90);
            assert_eq!(clock.stamp().apply(t), t, "{mode:?}");
        }
    }

    #[test]
    fn timestamps_have_microseconds_and_z() {
        let t = DateTime::parse_from_rfc3339("2019-05-27T16:45:32.241824Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("valid literal");
        assert_eq!(format_time(t), "2019-05-27T16:45:32.241824Z");
    }
}
