//! The `process_*` families, read from `/proc/self` on Linux (the platform the CCM ships
//! for); elsewhere they are left out. The parsers are pure and tested on sample text.

/// One look at the process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Process {
    pub cpu_seconds: Option<f64>,
    pub resident_bytes: Option<u64>,
    pub virtual_bytes: Option<u64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    pub start_time_seconds: Option<f64>,
}

/// Clock ticks per second of `/proc`'s times (`USER_HZ`: 100 on every Linux platform the
/// CCM is built for).
const TICKS: f64 = 100.0;
const PAGE: u64 = 4096;

/// The fields of `/proc/self/stat` after the command name, from 0 = state (field 3 of
/// proc(5)); the name, in parentheses, may itself hold spaces and parentheses.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().collect())
}

/// CPU seconds (utime + stime), start time in ticks since boot, virtual and resident size
/// in bytes from `/proc/self/stat`.
pub fn parse_stat(stat: &str) -> Option<(f64, u64, u64, u64)> {
    let f = stat_fields(stat)?;
    // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (pages); minus 3.
    let num = |i: usize| f.get(i)?.parse::<u64>().ok();
    let cpu = (num(11)? + num(12)?) as f64 / TICKS;
    Some((cpu, num(19)?, num(20)?, num(21)? * PAGE))
}

/// Seconds since the epoch at boot, from `/proc/stat`'s `btime` line.
pub fn parse_btime(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The soft limit of open files from `/proc/self/limits`.
pub fn parse_max_fds(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Process {
    /// The process now (every field `None` where `/proc` is not there).
    pub fn now() -> Process {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let mut p = Process::default();
        if let Some((cpu, start_ticks, vsize, rss)) =
            read("/proc/self/stat").as_deref().and_then(parse_stat)
        {
            p.cpu_seconds = Some(cpu);
            p.virtual_bytes = Some(vsize);
            p.resident_bytes = Some(rss);
            p.start_time_seconds = read("/proc/stat")
                .as_deref()
                .and_then(parse_btime)
                .map(|boot| boot as f64 + start_ticks as f64 / TICKS);
        }
        p.open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64);
        p.max_fds = read("/proc/self/limits").as_deref().and_then(parse_max_fds);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_is_read_even_with_a_name_holding_parentheses() {
        let stat = "4242 (ccm (x) y) S 1 4242 4242 0 -1 4194560 1900 0 0 0 250 75 0 0 20 0 \
                    9 0 123456 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 \
                    17 1 0 0 0 0 0";
        let (cpu, start, vsize, rss) = parse_stat(stat).expect("parsed");
        assert!((cpu - 3.25).abs() < 1e-9, "{cpu}");
        assert_eq!(start, 123_456);
        assert_eq!(vsize, 104_857_600);
        assert_eq!(rss, 2560 * 4096);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn boot_time_and_the_fd_limit_are_read() {
        assert_eq!(
            parse_btime("cpu  1 2 3\nbtime 1764400000\nprocesses 9\n"),
            Some(1_764_400_000)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            1048576              1048576              files     \n";
        assert_eq!(parse_max_fds(limits), Some(1_048_576));
        assert_eq!(parse_max_fds("nothing"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_live_process_is_read_on_linux() {
        let p = Process::now();
        assert!(p.resident_bytes.is_some_and(|b| b > 0));
        assert!(p.open_fds.is_some_and(|n| n > 0));
        assert!(p.max_fds.is_some_and(|n| n > 0));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        let start = p.start_time_seconds.expect("start time");
        assert!(
            start <= now + 1.0 && start > now - 86_400.0 * 365.0,
            "{start} vs {now}"
        );
    }
}
