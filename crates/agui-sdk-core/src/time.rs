//! Times as the protocol writes them: ISO 8601, as JavaScript's `Date` reads and
//! writes it (an interrupt's `expiresAt`, a thread's times), to and from milliseconds
//! since the Unix epoch. No I/O, no clock but the one a caller passes.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch for `now`.
pub(crate) fn millis(now: SystemTime) -> i64 {
    match now.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The date (year, month, day) `days` after 1970-01-01, proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `ms` (milliseconds since the Unix epoch) as ISO 8601 in UTC with milliseconds, as
/// JavaScript's `Date.prototype.toISOString` writes it for years 0 to 9999
/// (`2026-12-06T10:00:00.000Z`); [`parse_iso8601_millis`] reads it back.
pub fn format_iso8601_millis(ms: i64) -> String {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
    } else {
        let sign = if y < 0 { '-' } else { '+' };
        format!(
            "{sign}{:06}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z",
            y.abs()
        )
    }
}

/// Parses the ISO 8601 date-time forms a JavaScript `Date` reads
/// (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`, optionally `THH:mm`, `:ss`, `.fraction`, and `Z`
/// or `±HH:mm` / `±HHmm`; `±YYYYYY` expanded years) into milliseconds since the Unix epoch.
/// A date-time without an offset is read as UTC (JavaScript reads it as local time).
pub fn parse_iso8601_millis(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let mut p = 0usize;
    let num = |p: &mut usize, n: usize| -> Option<i64> {
        let digits = b.get(*p..*p + n)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        *p += n;
        std::str::from_utf8(digits).ok()?.parse().ok()
    };
    let year = match b.first()? {
        b'+' | b'-' => {
            let neg = b[0] == b'-';
            p = 1;
            let y = num(&mut p, 6)?;
            if neg && y == 0 {
                return None;
            }
            if neg {
                -y
            } else {
                y
            }
        }
        _ => num(&mut p, 4)?,
    };
    let (mut month, mut day) = (1, 1);
    if b.get(p) == Some(&b'-') {
        p += 1;
        month = num(&mut p, 2)?;
        if b.get(p) == Some(&b'-') {
            p += 1;
            day = num(&mut p, 2)?;
        }
    }
    // Like JavaScript, any day from 1 to 31 is accepted and rolls over (`02-30` is
    // March 1st or 2nd).
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (mut h, mut mi, mut sec, mut ms) = (0, 0, 0, 0);
    let mut offset_min = 0i64;
    if matches!(b.get(p), Some(b'T') | Some(b't')) {
        p += 1;
        h = num(&mut p, 2)?;
        if b.get(p) != Some(&b':') {
            return None;
        }
        p += 1;
        mi = num(&mut p, 2)?;
        if b.get(p) == Some(&b':') {
            p += 1;
            sec = num(&mut p, 2)?;
            if b.get(p) == Some(&b'.') {
                p += 1;
                let start = p;
                while b.get(p).is_some_and(u8::is_ascii_digit) {
                    p += 1;
                }
                if p == start {
                    return None;
                }
                let frac = &s[start..p];
                let first3: String = frac.chars().chain("00".chars()).take(3).collect();
                ms = first3.parse().ok()?;
            }
        }
        match b.get(p) {
            Some(b'Z') | Some(b'z') => p += 1,
            Some(&c @ (b'+' | b'-')) => {
                p += 1;
                let oh = num(&mut p, 2)?;
                if b.get(p) == Some(&b':') {
                    p += 1;
                }
                let om = num(&mut p, 2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                offset_min = (oh * 60 + om) * if c == b'+' { 1 } else { -1 };
            }
            _ => {}
        }
        if h > 24 || mi > 59 || sec > 59 || (h == 24 && (mi != 0 || sec != 0 || ms != 0)) {
            return None;
        }
    }
    if p != b.len() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let t = days * 86_400_000 + h * 3_600_000 + mi * 60_000 + sec * 1000 + ms - offset_min * 60_000;
    // JavaScript dates span ±8.64e15 ms.
    (t.abs() <= 8_640_000_000_000_000).then_some(t)
}
