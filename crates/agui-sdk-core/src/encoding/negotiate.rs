//! Choosing the encoding from an HTTP `Accept` header, exactly as the reference
//! `EventEncoder` does (`@ag-ui/encoder`, whose `preferredMediaTypes` is a port of the
//! `negotiator` package). The rules are documented on [`negotiate`].

use super::Encoding;

/// Protobuf, when this build has it; SSE otherwise (the only encoding it can write).
fn protobuf() -> Encoding {
    #[cfg(feature = "proto")]
    return Encoding::Proto;
    #[cfg(not(feature = "proto"))]
    return Encoding::Sse;
}

const PROTO_TYPE: &str = "application";
const PROTO_SUBTYPE: &str = "vnd.ag-ui.event+proto";

/// Picks the encoding for a response from the request's `Accept` header, exactly as
/// the reference `EventEncoder` does.
///
/// The reference asks one question only: *is the protobuf media type acceptable?* If
/// its best-matching `Accept` entry has a quality above zero the answer is protobuf,
/// otherwise SSE. SSE is never weighed against protobuf, which gives results that look
/// surprising but are what every reference server does:
///
/// - **any wildcard selects protobuf**: `*/*`, `application/*`, even
///   `*/vnd.ag-ui.event+proto` (and `*/*;q=0.1`);
/// - `text/event-stream;q=1, application/vnd.ag-ui.event+proto;q=0.1` selects protobuf;
/// - no header, or an empty one, selects SSE;
/// - an entry with a parameter other than `q` (before `q`) matches only when the value
///   is `*` or empty: `application/vnd.ag-ui.event+proto; version=1.0` selects SSE;
/// - the most specific matching entry decides (ties go to the higher quality, then the
///   earlier entry): `*/*, application/vnd.ag-ui.event+proto;q=0` selects SSE;
/// - `q` is read like JavaScript's `parseFloat` (`q=abc` is NaN, not acceptable; `q=2`
///   counts as 2), parameters after `q` are ignored, quoted values are unquoted.
///
/// The reference client itself always sends `Accept: text/event-stream`, so it gets
/// SSE. A server that wants to spare browsers' `*/*` from protobuf can check for an
/// explicit `text/event-stream` before calling this function; this function does not,
/// so that a Rust server answers every client exactly as a reference server would. The
/// reference's verdicts are recorded in `fixtures/reference/cases/accept.jsonl`.
///
/// ```
/// use agui_sdk_core::encoding::{negotiate, Encoding};
/// assert_eq!(negotiate(None), Encoding::Sse);
/// assert_eq!(negotiate(Some("text/event-stream")), Encoding::Sse);
/// assert_eq!(negotiate(Some("application/vnd.ag-ui.event+proto")), Encoding::Proto);
/// assert_eq!(negotiate(Some("*/*")), Encoding::Proto); // as the reference does
/// ```
pub fn negotiate(accept: Option<&str>) -> Encoding {
    match accept {
        Some(a) if !a.is_empty() && proto_quality(a) > 0.0 => protobuf(),
        _ => Encoding::Sse,
    }
}

/// Picks the encoding the way a server should answer clients it does not know: protobuf
/// only for a request that **names** the protobuf media type with a quality above zero
/// (and not below the quality it gives `text/event-stream`; at equal qualities the entry
/// listed first wins), SSE for everything else, wildcards included. So `curl` (`*/*`)
/// and a browser `fetch` get SSE, while the reference client (`text/event-stream`) and
/// protobuf clients get what they ask for. [`negotiate`] is the reference's exact rule.
///
/// ```
/// use agui_sdk_core::encoding::{negotiate_explicit, Encoding};
/// assert_eq!(negotiate_explicit(Some("*/*")), Encoding::Sse);
/// assert_eq!(negotiate_explicit(Some("application/*")), Encoding::Sse);
/// assert_eq!(negotiate_explicit(Some("application/vnd.ag-ui.event+proto")), Encoding::Proto);
/// assert_eq!(negotiate_explicit(Some("application/vnd.ag-ui.event+proto;q=0")), Encoding::Sse);
/// assert_eq!(
///     negotiate_explicit(Some("text/event-stream;q=0.5, application/vnd.ag-ui.event+proto;q=0.9")),
///     Encoding::Proto
/// );
/// assert_eq!(
///     negotiate_explicit(Some("text/event-stream, application/vnd.ag-ui.event+proto;q=0.9")),
///     Encoding::Sse
/// );
/// ```
pub fn negotiate_explicit(accept: Option<&str>) -> Encoding {
    let Some(accept) = accept.filter(|a| !a.is_empty()) else {
        return Encoding::Sse;
    };
    // (quality, position) of the explicit entries for each type.
    let mut proto: Option<(f64, usize)> = None;
    let mut sse: Option<(f64, usize)> = None;
    for (index, raw) in split_outside_quotes(accept, ',').enumerate() {
        let Some(entry) = parse_entry(trim_js(raw), index) else {
            continue;
        };
        let (ty, sub) = (entry.ty, entry.subtype);
        let q = if entry.q.is_nan() { 0.0 } else { entry.q };
        let slot = if lower_is(ty, PROTO_TYPE)
            && lower_is(sub, PROTO_SUBTYPE)
            && specificity(&entry).is_some()
        {
            &mut proto
        } else if lower_is(ty, "text") && lower_is(sub, "event-stream") {
            &mut sse
        } else {
            continue;
        };
        if slot.is_none_or(|(bq, _)| q > bq) {
            *slot = Some((q, index));
        }
    }
    match (proto, sse) {
        (Some((pq, _)), _) if pq <= 0.0 => Encoding::Sse,
        (Some(_), None) => protobuf(),
        (Some((pq, pi)), Some((sq, si))) if pq > sq || (pq == sq && pi < si) => protobuf(),
        _ => Encoding::Sse,
    }
}

/// One parsed `Accept` entry.
#[derive(Debug)]
struct Entry<'a> {
    ty: &'a str,
    subtype: &'a str,
    /// Parameters before `q`, unquoted (keys lower-cased).
    params: Vec<(String, &'a str)>,
    q: f64,
    /// Position in the comma-split header (unparsable entries count).
    index: usize,
}

/// The quality the header gives the protobuf media type (0 when no entry matches).
fn proto_quality(accept: &str) -> f64 {
    // Priority of the best match so far: (specificity, quality, entry index).
    let mut best: (i32, f64, i64) = (0, 0.0, -1);
    for (index, raw) in split_outside_quotes(accept, ',').enumerate() {
        let Some(entry) = parse_entry(trim_js(raw), index) else {
            continue;
        };
        let Some(s) = specificity(&entry) else {
            continue;
        };
        // JavaScript: `(p.s - s.s || p.q - s.q || p.o - s.o) < 0`, where a zero or NaN
        // difference falls through to the next one.
        let ds = best.0 - s;
        let dq = best.1 - entry.q;
        let replace = if ds != 0 {
            ds < 0
        } else if dq != 0.0 && !dq.is_nan() {
            dq < 0.0
        } else {
            best.2 - (entry.index as i64) < 0
        };
        if replace {
            best = (s, entry.q, entry.index as i64);
        }
    }
    best.1
}

/// How specifically `entry` matches the protobuf media type, or `None` when it does not.
fn specificity(entry: &Entry<'_>) -> Option<i32> {
    let mut s = 0;
    if entry.ty.to_lowercase() == PROTO_TYPE {
        s |= 4;
    } else if entry.ty != "*" {
        return None;
    }
    if entry.subtype.to_lowercase() == PROTO_SUBTYPE {
        s |= 2;
    } else if entry.subtype != "*" {
        return None;
    }
    if !entry.params.is_empty() {
        // The offered type has no parameters, so only `*` and empty values match.
        if entry.params.iter().all(|(_, v)| *v == "*" || v.is_empty()) {
            s |= 1;
        } else {
            return None;
        }
    }
    Some(s)
}

/// `^\s*([^\s/;]+)\/([^;\s]+)\s*(?:;(.*))?$` with JavaScript's `\s` and `.`.
fn parse_entry(s: &str, index: usize) -> Option<Entry<'_>> {
    let s = s.trim_start_matches(is_js_space);
    let slash = s.find(|c: char| c == '/' || c == ';' || is_js_space(c))?;
    if slash == 0 || !s[slash..].starts_with('/') {
        return None;
    }
    let ty = &s[..slash];
    let rest = &s[slash + 1..];
    let sub_end = rest
        .find(|c: char| c == ';' || is_js_space(c))
        .unwrap_or(rest.len());
    if sub_end == 0 {
        return None;
    }
    let subtype = &rest[..sub_end];
    let rest = rest[sub_end..].trim_start_matches(is_js_space);
    let params_text = if rest.is_empty() {
        ""
    } else if let Some(p) = rest.strip_prefix(';') {
        // `.` does not match line terminators.
        if p.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
            return None;
        }
        p
    } else {
        return None;
    };
    let mut entry = Entry {
        ty,
        subtype,
        params: Vec::new(),
        q: 1.0,
        index,
    };
    if !params_text.is_empty() {
        for param in split_outside_quotes(params_text, ';') {
            let param = trim_js(param);
            let (key, value) = match param.find('=') {
                Some(i) => (&param[..i], &param[i + 1..]),
                None => (param, ""),
            };
            let key = key.to_lowercase();
            // `"x"` loses its quotes; a lone `"` is both the first and the last one.
            let value = match value.strip_prefix('"') {
                Some(inner) if value.ends_with('"') => inner.strip_suffix('"').unwrap_or(inner),
                _ => value,
            };
            if key == "q" {
                entry.q = parse_float(value);
                break;
            }
            match entry.params.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => entry.params.push((key, value)),
            }
        }
    }
    Some(entry)
}

/// Splits on `sep`, re-joining pieces while the current one has an odd number of `"`
/// (the reference's `splitMediaTypes`/`splitParameters`).
/// Whether `s` lower-cased (as JavaScript's `toLowerCase` does) is `lower`, an ASCII
/// lower-case text; without allocating when `s` is ASCII.
fn lower_is(s: &str, lower: &str) -> bool {
    if s.is_ascii() {
        s.eq_ignore_ascii_case(lower)
    } else {
        // Some non-ASCII letters lower-case to ASCII ones (the Kelvin sign to `k`).
        s.to_lowercase() == lower
    }
}

fn split_outside_quotes(s: &str, sep: char) -> impl Iterator<Item = &str> + '_ {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut from = 0;
        while let Some(i) = text[from..].find(sep).map(|i| i + from) {
            let piece = &text[..i];
            if piece.matches('"').count() % 2 == 0 {
                rest = Some(&text[i + sep.len_utf8()..]);
                return Some(piece);
            }
            from = i + sep.len_utf8();
        }
        rest = None;
        Some(text)
    })
}

/// JavaScript's `\s` (and `String.prototype.trim`'s white space and line terminators).
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0b}' | '\u{0c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn trim_js(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// JavaScript's `parseFloat`: the longest prefix (after white space) that is a decimal
/// literal or `Infinity`, NaN when there is none.
fn parse_float(s: &str) -> f64 {
    let s = s.trim_start_matches(is_js_space);
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if s[i..].starts_with("Infinity") {
        return if b.first() == Some(&b'-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - digits_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        frac_digits = j - i - 1;
        if int_digits > 0 || frac_digits > 0 {
            i = j;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return f64::NAN;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    let text = &s[..i];
    // A trailing `.` ("1.") is accepted by JavaScript but not by Rust's parser.
    let text = text.strip_suffix('.').unwrap_or(text);
    text.parse::<f64>().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_float_is_javascripts() {
        assert_eq!(parse_float("0.5"), 0.5);
        assert_eq!(parse_float(" 1e3x"), 1000.0);
        assert_eq!(parse_float(".5"), 0.5);
        assert_eq!(parse_float("1."), 1.0);
        assert_eq!(parse_float("-1"), -1.0);
        assert_eq!(parse_float("1e"), 1.0);
        assert_eq!(parse_float("-Infinity"), f64::NEG_INFINITY);
        assert!(parse_float("abc").is_nan());
        assert!(parse_float("").is_nan());
        assert!(parse_float(".").is_nan());
        assert!(parse_float("-.e1").is_nan());
    }

    #[test]
    fn quoted_commas_do_not_split() {
        assert_eq!(
            split_outside_quotes(r#"a;x="a,b",c"#, ',').collect::<Vec<_>>(),
            vec![r#"a;x="a,b""#, "c"]
        );
        assert_eq!(
            split_outside_quotes(r#"a,"b,c"d,,"#, ',').collect::<Vec<_>>(),
            vec!["a", r#""b,c"d"#, "", ""]
        );
    }

    #[test]
    #[cfg(feature = "proto")]
    fn empty_parameter_values_match() {
        assert_eq!(negotiate(Some("application/*;foo=")), Encoding::Proto);
        assert_eq!(negotiate(Some("application/*;foo")), Encoding::Proto);
        assert_eq!(negotiate(Some("application/*;foo=bar")), Encoding::Sse);
    }
}
