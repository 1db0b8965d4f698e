//! CronJob schedules as kube-apiserver checks them: `cron.ParseStandard` of
//! github.com/robfig/cron/v3 (five fields: minute, hour, day of month, month, day of week;
//! `*`, `?`, lists, ranges, steps, month and weekday names, and the `@hourly`-style
//! descriptors). The error texts are that parser's, which the server puts in its 422.

/// (minimum, maximum, names) of each of the five fields.
const FIELDS: [(u32, u32, &[&str]); 5] = [
    (0, 59, &[]),
    (0, 23, &[]),
    (1, 31, &[]),
    (
        1,
        12,
        &[
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ],
    ),
    (0, 6, &["sun", "mon", "tue", "wed", "thu", "fri", "sat"]),
];

/// The fixed descriptors and the five fields each stands for.
const DESCRIPTORS: &[(&str, &str)] = &[
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// A parsed five-field schedule: bit `v` of a field is set when value `v` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub minutes: u64,
    pub hours: u64,
    pub days: u64,
    pub months: u64,
    pub weekdays: u64,
    /// The day-of-month / day-of-week field held a bare `*` or `?` (no step above 1): then
    /// a day must match both day fields, otherwise either (robfig/cron's `starBit`).
    pub days_star: bool,
    pub weekdays_star: bool,
}

/// What a schedule the real server accepts means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Fields(Fields),
    /// `@every <duration>`: accepted by the parser, the Go duration text as written.
    Every(String),
}

/// `Ok` for a schedule the real server accepts, else the parser's message.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    parse(spec).map(|_| ())
}

/// The schedule's meaning, or the parser's message (the text the server's 422 carries).
pub fn parse(spec: &str) -> Result<Parsed, String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    // A `TZ=`/`CRON_TZ=` prefix is parsed here too (the validation refuses it separately).
    let spec = match spec.split_once(' ') {
        Some((tz, rest)) if tz.starts_with("TZ=") || tz.starts_with("CRON_TZ=") => rest.trim(),
        _ => spec,
    };
    let spec = if spec.starts_with('@') {
        match descriptor(spec)? {
            Descriptor::Every(d) => return Ok(Parsed::Every(d.to_string())),
            Descriptor::Fields(f) => f,
        }
    } else {
        spec
    };
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let mut parsed = [(0u64, false); 5];
    for ((field, (min, max, names)), out) in fields.iter().zip(FIELDS).zip(parsed.iter_mut()) {
        for expr in field.split(',') {
            let (bits, star) = range(expr, min, max, names)?;
            out.0 |= bits;
            out.1 |= star;
        }
    }
    let [m, h, dom, mon, dow] = parsed;
    Ok(Parsed::Fields(Fields {
        minutes: m.0,
        hours: h.0,
        days: dom.0,
        months: mon.0,
        weekdays: dow.0,
        days_star: dom.1,
        weekdays_star: dow.1,
    }))
}

enum Descriptor<'a> {
    Fields(&'static str),
    Every(&'a str),
}

/// The `@` forms: the fixed ones as the five fields they stand for, `@every` as its duration.
fn descriptor(spec: &str) -> Result<Descriptor<'_>, String> {
    if let Some((_, fields)) = DESCRIPTORS.iter().find(|(d, _)| *d == spec) {
        return Ok(Descriptor::Fields(fields));
    }
    if let Some(d) = spec.strip_prefix("@every ") {
        return if go_duration(d) {
            Ok(Descriptor::Every(d))
        } else {
            Err(format!(
                "failed to parse duration {spec}: time: invalid duration \"{d}\""
            ))
        };
    }
    Err(format!("unrecognized descriptor: {spec}"))
}

/// Go's `time.ParseDuration` syntax: one or more `<number><unit>`.
fn go_duration(d: &str) -> bool {
    let mut rest = d;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let Some(unit) = ["ns", "us", "µs", "ms", "s", "m", "h"]
            .iter()
            .find(|u| rest.starts_with(*u))
        else {
            return false;
        };
        rest = &rest[unit.len()..];
    }
    true
}

/// One comma-separated part of a field: its bits, and whether it was a bare star.
fn range(expr: &str, min: u32, max: u32, names: &[&str]) -> Result<(u64, bool), String> {
    let slashes: Vec<&str> = expr.split('/').collect();
    let hyphens: Vec<&str> = slashes[0].split('-').collect();
    let star = matches!(slashes[0], "*" | "?");
    let (start, end);
    if star {
        (start, end) = (min, max);
    } else {
        start = int_or_name(hyphens[0], names)?;
        end = match hyphens.len() {
            1 => start,
            2 => int_or_name(hyphens[1], names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
    }
    let (end, step) = match slashes.len() {
        1 => (end, 1),
        2 => {
            let step = int(slashes[1])?;
            if step == 0 {
                return Err(format!("step of range should be a positive number: {expr}"));
            }
            // `N/step` means from N to the field's maximum.
            if hyphens.len() == 1 && !star {
                (max, step)
            } else {
                (end, step)
            }
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({min}): {expr}"
        ));
    }
    if end > max {
        return Err(format!(
            "end of range ({end}) above maximum ({max}): {expr}"
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    let bits = (start..=end)
        .step_by(step as usize)
        .fold(0u64, |b, v| b | (1 << v));
    Ok((bits, star && step == 1))
}

fn int_or_name(s: &str, names: &[&str]) -> Result<u32, String> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        // Months count from 1, weekdays from 0 (Sunday).
        let first = if names.len() == 12 { 1 } else { 0 };
        return Ok(u32::try_from(i).unwrap_or(0) + first);
    }
    int(s)
}

fn int(s: &str) -> Result<u32, String> {
    match s.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {s}")),
        Ok(n) => u32::try_from(n).map_err(|_| {
            format!(
                "failed to parse int from {s}: strconv.Atoi: parsing \"{s}\": value out of range"
            )
        }),
        Err(_) => Err(format!(
            "failed to parse int from {s}: strconv.Atoi: parsing \"{s}\": invalid syntax"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_standard;

    #[test]
    fn schedules_the_real_server_accepts() {
        for ok in [
            "*/1 * * * *",
            "0 0 * * *",
            "5 4 * * sun",
            "0 22 * * 1-5",
            "0,15,30,45 * 1-31/2 JAN-dec ?",
            "@hourly",
            "@every 1h30m",
            "5/10 * * * *",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn schedules_it_refuses_with_the_parsers_words() {
        assert_eq!(
            parse_standard("foo"),
            Err("expected exactly 5 fields, found 1: [foo]".into())
        );
        assert_eq!(
            parse_standard("61 * * * *"),
            Err("end of range (61) above maximum (59): 61".into())
        );
        assert_eq!(
            parse_standard("* * 0 * *"),
            Err("beginning of range (0) below minimum (1): 0".into())
        );
        assert_eq!(
            parse_standard("x * * * *"),
            Err("failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            parse_standard("@fortnightly"),
            Err("unrecognized descriptor: @fortnightly".into())
        );
        assert_eq!(
            parse_standard("*/0 * * * *"),
            Err("step of range should be a positive number: */0".into())
        );
        assert!(parse_standard("5-2 * * * *").is_err());
    }
}
