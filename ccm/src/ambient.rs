//! What the process draws from its surroundings besides the two APIs: the wall clock and
//! randomness (retry jitter, leader-election jitter, identities).
//!
//! Production uses [`Ambient::system`]. A deterministic simulation (see `scenarios/`) runs
//! the same code with [`Ambient::simulated`]: wall time follows tokio's clock from a fixed
//! epoch (so a paused runtime moves it only when every task waits) and every random draw
//! comes from one seed, so a run can be replayed exactly.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::time::Instant;

#[derive(Debug)]
enum Source {
    System,
    Simulated {
        epoch: Timestamp,
        anchor: Instant,
        rng: Mutex<SplitMix64>,
    },
}

/// The wall clock and the random source of one CCM. Cheap to clone; clones share the
/// random sequence.
#[derive(Debug, Clone)]
pub struct Ambient(Arc<Source>);

impl Default for Ambient {
    fn default() -> Self {
        Ambient::system()
    }
}

impl Ambient {
    /// The machine's clock and the operating system's randomness.
    pub fn system() -> Ambient {
        Ambient(Arc::new(Source::System))
    }

    /// Wall time `epoch` plus the tokio time elapsed since this call; random draws from
    /// `seed`.
    pub fn simulated(epoch: Timestamp, seed: u64) -> Ambient {
        Ambient(Arc::new(Source::Simulated {
            epoch,
            anchor: Instant::now(),
            rng: Mutex::new(SplitMix64(seed)),
        }))
    }

    /// The current wall-clock time.
    pub fn now(&self) -> Timestamp {
        match &*self.0 {
            Source::System => Timestamp::now(),
            Source::Simulated { epoch, anchor, .. } => {
                let elapsed =
                    SignedDuration::try_from(anchor.elapsed()).unwrap_or(SignedDuration::MAX);
                epoch.saturating_add(elapsed).unwrap_or(Timestamp::MAX)
            }
        }
    }

    /// A uniformly random 64-bit number.
    pub fn next_u64(&self) -> u64 {
        match &*self.0 {
            Source::System => rand::random(),
            Source::Simulated { rng, .. } => rng.lock().next(),
        }
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, max]`.
    pub fn up_to(&self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(n) => self.next_u64() % n,
            None => self.next_u64(),
        }
    }

    /// A random (version 4) UUID.
    pub fn uuid(&self) -> uuid::Uuid {
        let bytes = (u128::from(self.next_u64()) << 64 | u128::from(self.next_u64())).to_be_bytes();
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }
}

/// SplitMix64: tiny and seedable; plenty for jitter that must repeat exactly.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_simulated_clock_follows_tokio_time_from_its_epoch() {
        let epoch: Timestamp = "2026-01-01T00:00:00Z".parse().expect("epoch");
        let a = Ambient::simulated(epoch, 7);
        assert_eq!(a.now(), epoch);
        tokio::time::sleep(std::time::Duration::from_secs(90)).await;
        assert_eq!(a.now().duration_since(epoch).as_secs(), 90);
    }

    #[test]
    fn the_same_seed_draws_the_same_numbers_and_another_seed_others() {
        let epoch = Timestamp::UNIX_EPOCH;
        let draw = |seed| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("runtime");
            let _g = rt.enter();
            let a = Ambient::simulated(epoch, seed);
            (a.uuid(), a.next_u64(), a.up_to(10))
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        let (u, _, n) = draw(3);
        assert_eq!(u.get_version_num(), 4);
        assert!(n <= 10);
    }
}
