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

const DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// `Ok` for a schedule the real server accepts, else the parser's message.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    // A `TZ=`/`CRON_TZ=` prefix is parsed here too (the validation refuses it separately).
    let spec = match spec.split_once(' ') {
        Some((tz, rest)) if tz.starts_with("TZ=") || tz.starts_with("CRON_TZ=") => rest.trim(),
        _ => spec,
    };
    if spec.starts_with('@') {
        return descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, (min, max, names)) in fields.iter().zip(FIELDS) {
        for expr in field.split(',') {
            range(expr, min, max, names)?;
        }
    }
    Ok(())
}

fn descriptor(spec: &str) -> Result<(), String> {
    if DESCRIPTORS.contains(&spec) {
        return Ok(());
    }
    if let Some(d) = spec.strip_prefix("@every ") {
        return if go_duration(d) {
            Ok(())
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

fn range(expr: &str, min: u32, max: u32, names: &[&str]) -> Result<(), String> {
    let slashes: Vec<&str> = expr.split('/').collect();
    let hyphens: Vec<&str> = slashes[0].split('-').collect();
    let (start, end);
    if matches!(slashes[0], "*" | "?") {
        (start, end) = (min, max);
    } else {
        start = int_or_name(hyphens[0], names)?;
        end = match hyphens.len() {
            1 => start,
            2 => int_or_name(hyphens[1], names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
    }
    let end = match slashes.len() {
        1 => end,
        2 => {
            let step = int(slashes[1])?;
            if step == 0 {
                return Err(format!("step of range should be a positive number: {expr}"));
            }
            // `N/step` means from N to the field's maximum.
            if hyphens.len() == 1 && !matches!(slashes[0], "*" | "?") {
                max
            } else {
                end
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
    Ok(())
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
