//! JSON text as JavaScript's `JSON.stringify` writes it, for the SSE encoder: serde_json
//! already writes strings and integers as JavaScript does; floating-point numbers are
//! written here with ECMAScript's `Number::toString` rules (`1e+21`, `10000000000000000`,
//! `1.5e-7`, `0` for negative zero) instead of serde_json's (`1e21`, `1e16`, `-0.0`).

use std::fmt::Write as _;
use std::io;

/// A serde_json formatter that writes doubles as JavaScript does.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JsFormatter;

impl serde_json::ser::Formatter for JsFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        let mut buf = Small::default();
        write_js_number(&mut buf, value);
        writer.write_all(buf.as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }
}

/// Appends ECMAScript's spelling of the finite double `value` to `out`.
pub(crate) fn write_finite(out: &mut Vec<u8>, value: f64) {
    let mut buf = Small::default();
    write_js_number(&mut buf, value);
    out.extend_from_slice(buf.as_bytes());
}

/// A stack buffer big enough for any double in any notation (at most 17 significant
/// digits, 21 digits before the point or 6 zeros after it, a sign and an exponent).
struct Small {
    bytes: [u8; 48],
    len: usize,
}

impl Default for Small {
    fn default() -> Self {
        Small {
            bytes: [0; 48],
            len: 0,
        }
    }
}

impl Small {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn push(&mut self, b: u8) {
        if self.len < self.bytes.len() {
            self.bytes[self.len] = b;
            self.len += 1;
        }
    }

    fn push_all(&mut self, s: &[u8]) {
        for &b in s {
            self.push(b);
        }
    }
}

impl std::fmt::Write for Small {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_all(s.as_bytes());
        Ok(())
    }
}

/// ECMAScript `Number::toString(10)` of a finite double.
fn write_js_number(out: &mut Small, value: f64) {
    if value == 0.0 || !value.is_finite() {
        // Negative zero prints as "0"; non-finite values never reach a formatter
        // (serde_json writes them as null).
        out.push(b'0');
        return;
    }
    if value < 0.0 {
        out.push(b'-');
    }
    // Rust's `{:e}` is the shortest representation that reads back exactly, as
    // ECMAScript requires: "d.ddde-7", "de21".
    let mut sci = Small::default();
    let _ = write!(sci, "{:e}", value.abs());
    let text = sci.as_bytes();
    let e_at = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let (mantissa, exp) = text.split_at(e_at);
    let exp: i32 = std::str::from_utf8(exp.get(1..).unwrap_or(b"0"))
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut digits = [0u8; 24];
    let mut k = 0;
    for &b in mantissa {
        if b.is_ascii_digit() && k < digits.len() {
            digits[k] = b;
            k += 1;
        }
    }
    let digits = &digits[..k];
    let k = k as i32;
    // value = 0.digits × 10^n
    let n = exp + 1;
    if k <= n && n <= 21 {
        out.push_all(digits);
        for _ in 0..(n - k) {
            out.push(b'0');
        }
    } else if 0 < n && n <= 21 {
        out.push_all(&digits[..n as usize]);
        out.push(b'.');
        out.push_all(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_all(b"0.");
        for _ in 0..(-n) {
            out.push(b'0');
        }
        out.push_all(digits);
    } else {
        out.push(digits[0]);
        if k > 1 {
            out.push(b'.');
            out.push_all(&digits[1..]);
        }
        out.push(b'e');
        let e = n - 1;
        out.push(if e < 0 { b'-' } else { b'+' });
        let _ = write!(out, "{}", e.unsigned_abs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(v: f64) -> String {
        let mut b = Small::default();
        write_js_number(&mut b, v);
        String::from_utf8(b.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn matches_ecmascript() {
        // Values checked against node's String(x).
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-3e-7, "-3e-7"),
            (0.2, "0.2"),
            (2.5, "2.5"),
            (1e16, "10000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (123456789012345680000.0, "123456789012345680000"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.2345e-7, "1.2345e-7"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.1 + 0.2, "0.30000000000000004"),
            (123.456, "123.456"),
            (-1e-6, "-0.000001"),
            (18446744073709552000.0, "18446744073709552000"),
        ];
        for (v, want) in cases {
            assert_eq!(js(v), want, "{v:e}");
        }
    }
}
