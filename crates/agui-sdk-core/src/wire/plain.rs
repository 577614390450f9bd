//! The JSON lexing of the direct readers (`event`'s reader of plain events): strings
//! scanned and unescaped as the exact decoder reads them, and the autoref choosers
//! through which the protocol macros read a field from a string member ([`ReadPlain`],
//! [`NotPlain`]) and hand a recycler its strings ([`GiveString`], [`NoString`]).

use std::marker::PhantomData;

/// A string starting at `at` (its opening quote): the text between its quotes (escapes
/// not read), whether it holds an escape, and the position after the closing quote.
/// `None` at a control character or with no closing quote.
#[inline]
pub(crate) fn raw_string(text: &str, at: usize) -> Option<(&str, bool, usize)> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let mut from = start;
    let mut escaped = false;
    loop {
        let stop = from + special(b.get(from..)?)?;
        match b[stop] {
            // Next to an ASCII quote: a character boundary.
            b'"' => return Some((text.get(start..stop)?, escaped, stop + 1)),
            b'\\' => {
                // The escaped byte is never the closing quote; the escape itself is
                // judged when the value is read.
                escaped = true;
                from = stop + 2;
            }
            _ => return None,
        }
    }
}

/// `raw`, a string's text between its quotes (`escaped`: it holds an escape), with its
/// escapes read, in a string from `blank` sized once; `None` at a bad escape or a lone
/// surrogate.
#[inline]
pub(crate) fn unescaped(
    raw: &str,
    escaped: bool,
    blank: &mut impl FnMut(usize) -> String,
) -> Option<String> {
    // The text with its escapes is at least as long as what they stand for.
    let mut out = blank(raw.len());
    if !escaped {
        out.push_str(raw);
        return Some(out);
    }
    unescape(raw, out)
}

/// `raw` (a string's text between its quotes) with its escapes read, appended to `out`;
/// `None` at a bad escape or a lone surrogate.
pub(crate) fn unescape(raw: &str, mut out: String) -> Option<String> {
    let b = raw.as_bytes();
    let mut from = 0;
    loop {
        let Some(stop) = special(&b[from..]).map(|i| from + i) else {
            out.push_str(raw.get(from..)?);
            return Some(out);
        };
        out.push_str(raw.get(from..stop)?);
        if b[stop] != b'\\' {
            return None;
        }
        let (c, next) = escape(b, stop + 1)?;
        out.push(c);
        from = next;
    }
}

/// One member of an object whose values are all strings: its key (which holds no
/// escape) and its value's text between the quotes, escapes not yet read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Member<'a> {
    /// The key.
    pub(crate) key: &'a str,
    /// The value's text between its quotes.
    pub(crate) raw: &'a str,
    /// Whether it holds an escape.
    pub(crate) escaped: bool,
}

impl Member<'_> {
    /// The value, its escapes read, in a string from `blank`.
    #[inline]
    pub(crate) fn string(&self, blank: &mut impl FnMut(usize) -> String) -> Option<String> {
        unescaped(self.raw, self.escaped, blank)
    }

    /// The value, when it holds no escape.
    #[inline]
    pub(crate) fn plain(&self) -> Option<&str> {
        (!self.escaped).then_some(self.raw)
    }
}

/// A field's type, for choosing where the protocol macros expand (by autoref, as in
/// `wire::direct`) how the field is read from a string member ([`ReadPlain`] for the
/// types read here, [`NotPlain`], never, for every other type) and what a recycler
/// takes back of it ([`GiveString`] for a string, [`NoString`], dropped, for the rest).
pub(crate) struct Plain<T>(PhantomData<T>);

impl<T> Plain<T> {
    /// The chooser for `T`.
    pub(crate) const NEW: Self = Plain(PhantomData);
}

/// Types read from a string member, exactly as the exact decoder reads them from a
/// JSON string.
pub(crate) trait ReadPlain<T> {
    /// The value `m` holds; `None` when the exact decoder must judge it.
    fn read_plain(&self, m: &Member<'_>, blank: &mut impl FnMut(usize) -> String) -> Option<T>;
}

/// Every other type: left to the exact decoder.
pub(crate) trait NotPlain<T> {
    /// Always `None`.
    #[inline]
    fn read_plain(&self, _: &Member<'_>, _: &mut impl FnMut(usize) -> String) -> Option<T> {
        None
    }
}

impl<T> NotPlain<T> for Plain<T> {}

impl ReadPlain<String> for &Plain<String> {
    #[inline]
    fn read_plain(
        &self,
        m: &Member<'_>,
        blank: &mut impl FnMut(usize) -> String,
    ) -> Option<String> {
        m.string(blank)
    }
}

/// A string field: handed to the recycler.
pub(crate) trait GiveString {
    /// Hands `value` to `keep`.
    fn give(&self, value: String, keep: &mut impl FnMut(String));
}

impl GiveString for &Plain<String> {
    #[inline]
    fn give(&self, value: String, keep: &mut impl FnMut(String)) {
        keep(value)
    }
}

/// Any other field: dropped.
pub(crate) trait NoString<T> {
    /// Drops `value`.
    #[inline]
    fn give(&self, value: T, _: &mut impl FnMut(String)) {
        drop(value)
    }
}

impl<T> NoString<T> for Plain<T> {}

/// The first position at or after `at` that is not JSON whitespace.
#[inline]
pub(crate) fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(at) {
        at += 1;
    }
    at
}

/// A string starting at `at` (its opening quote) that holds no escape: the text between
/// the quotes and the position after the closing one.
#[inline]
pub(crate) fn plain_string(text: &str, at: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let end = start + special(&b[start..])?;
    if b[end] != b'"' {
        return None;
    }
    // Both ends stand next to an ASCII quote, so they are character boundaries.
    Some((text.get(start..end)?, end + 1))
}

/// A string starting at `at` (its opening quote), unescaped into a string from
/// `blank`: its value and the position after the closing quote. `None` for what the
/// exact decoder must judge (a control character, a bad escape, a lone surrogate, no
/// closing quote).
pub(crate) fn string(
    text: &str,
    at: usize,
    blank: &mut impl FnMut(usize) -> String,
) -> Option<(String, usize)> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let from = at + 1;
    let stop = from + special(&b[from..])?;
    if b[stop] == b'"' {
        // No escape (nearly always): read in the one scan.
        let mut out = blank(stop - from);
        out.push_str(text.get(from..stop)?);
        return Some((out, stop + 1));
    }
    let (raw, escaped, next) = raw_string(text, at)?;
    Some((unescaped(raw, escaped, blank)?, next))
}

/// The character an escape stands for (`at` is just after the backslash) and the
/// position after it.
#[inline]
pub(crate) fn escape(b: &[u8], at: usize) -> Option<(char, usize)> {
    let c = match *b.get(at)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(b, at + 1)?;
            return match high {
                0xD800..=0xDBFF => {
                    // A pair: the low half must follow as another `\u` escape.
                    if b.get(at + 5..at + 7)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(b, at + 7)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    Some((char::from_u32(code)?, at + 11))
                }
                0xDC00..=0xDFFF => None,
                _ => Some((char::from_u32(high)?, at + 5)),
            };
        }
        _ => return None,
    };
    Some((c, at + 1))
}

/// Four hexadecimal digits at `at`.
#[inline]
pub(crate) fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = v * 16 + (d as char).to_digit(16)?;
    }
    Some(v)
}

/// Where the first byte that ends a run of plain string content stands in `b`: a quote,
/// a backslash or a control character. Eight bytes at a time.
#[inline]
pub(crate) fn special(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut at = 0;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // A byte below 0x20 (control), equal to `"` or to `\`. The bytes at or above
        // 0x80 are masked out of the control test so that UTF-8 does not trip it.
        let control = v.wrapping_sub(ONES * 0x20) & !v & HIGHS;
        let found =
            control | has_zero(v ^ (ONES * b'"' as u64)) | has_zero(v ^ (ONES * b'\\' as u64));
        if found != 0 {
            // The lowest flagged byte is the first such one (the tests above may flag a
            // byte after a true one, never before it).
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| c < 0x20 || c == b'"' || c == b'\\')
        .map(|i| at + i)
}
