//! Text from the network made safe to print to a terminal or a log line.
//!
//! A peer's strings (a thread id, an agent's error message, a tool name) can hold
//! escape sequences that retitle or clear the reader's terminal, newlines that forge
//! whole log lines or report lines, and bidirectional overrides that show text in
//! another order than it is. [`Escaped`] writes such a string with each of those
//! characters spelled out, and everything else as it is.

use std::fmt;

/// Writes a string with the characters a terminal or a line-based log would act on
/// spelled out: the C0 controls (`\n`, `\r`, `\t`, else `\u{1b}`), DEL (`\u{7f}`), the
/// C1 controls (`\u{9b}`), and the bidirectional embeddings, overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069, as `\u{202e}`). Every other character is written as
/// it is, so that a string without those is written unchanged.
///
/// ```
/// use agui_sdk_core::Escaped;
///
/// let thread = "t1\u{1b}]0;pwned\u{7}\nFORGED";
/// assert_eq!(Escaped(thread).to_string(), r"t1\u{1b}]0;pwned\u{7}\nFORGED");
/// assert_eq!(Escaped("plain é").to_string(), "plain é");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape_into(f, self.0)
    }
}

/// As [`Escaped`], except that newlines and tabs are written as they are: for text
/// meant to span lines (a message's body), where a line break is the text's own. A
/// carriage return, which would let a line overwrite what came before it, is still
/// spelled out.
///
/// ```
/// use agui_sdk_core::EscapedLines;
///
/// assert_eq!(EscapedLines("a\n\tb\r\u{1b}[2J").to_string(), "a\n\tb\\r\\u{1b}[2J");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct EscapedLines<'a>(pub &'a str);

impl fmt::Display for EscapedLines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape(f, self.0, true)
    }
}

/// Whether `c` is written escaped by [`Escaped`].
pub fn needs_escape(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Writes `s` into `w` as [`Escaped`] displays it.
pub fn escape_into<W: fmt::Write + ?Sized>(w: &mut W, s: &str) -> fmt::Result {
    escape(w, s, false)
}

/// Writes `s` escaped; newlines and tabs as they are when `keep_lines`.
fn escape<W: fmt::Write + ?Sized>(w: &mut W, s: &str, keep_lines: bool) -> fmt::Result {
    let bytes = s.as_bytes();
    let mut clean = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        // Only these bytes can begin a character to escape: C0 and DEL, 0xC2 (U+0080
        // to U+00BF), 0xE2 (U+2000 to U+2FFF). Anything else is skipped at a byte.
        if b >= 0x20 && b != 0x7f && b != 0xc2 && b != 0xe2 {
            i += 1;
            continue;
        }
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        let len = c.len_utf8();
        if needs_escape(c) && !(keep_lines && matches!(c, '\n' | '\t')) {
            w.write_str(&s[clean..i])?;
            match c {
                '\n' => w.write_str("\\n")?,
                '\r' => w.write_str("\\r")?,
                '\t' => w.write_str("\\t")?,
                c => write!(w, "\\u{{{:x}}}", c as u32)?,
            }
            clean = i + len;
        }
        i += len;
    }
    w.write_str(&s[clean..])
}

/// A writer that passes everything written through it to `inner` as [`escape_into`]
/// writes it (for a formatter of your own: wrap its output).
#[derive(Debug)]
pub struct EscapingWriter<W>(pub W);

impl<W: fmt::Write> fmt::Write for EscapingWriter<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape_into(&mut self.0, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_newlines_and_bidi_overrides_are_spelled_out() {
        let cases = [
            (
                "\u{1b}]0;pwned\u{7}\u{1b}[2J",
                r"\u{1b}]0;pwned\u{7}\u{1b}[2J",
            ),
            ("a\nFORGED b\r\tc", r"a\nFORGED b\r\tc"),
            (
                "\u{0}\u{7f}\u{80}\u{9b}\u{9f}\u{a0}",
                "\\u{0}\\u{7f}\\u{80}\\u{9b}\\u{9f}\u{a0}",
            ),
            (
                "x\u{202a}\u{202e}\u{2066}\u{2069}\u{2029}y",
                "x\\u{202a}\\u{202e}\\u{2066}\\u{2069}\u{2029}y",
            ),
            (
                "unchanged: é ß € 🦀 \"q\" \\",
                "unchanged: é ß € 🦀 \"q\" \\",
            ),
            ("", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(Escaped(input).to_string(), expected, "{input:?}");
        }
    }

    #[test]
    fn no_escaped_character_survives_in_any_string() {
        // Every character in the ranges that matter, alone and between text.
        for c in ('\0'..='\u{2fff}').filter(|c| needs_escape(*c)) {
            let out = Escaped(&format!("a{c}b")).to_string();
            assert!(!out.contains(c), "{c:?} → {out:?}");
            assert!(out.starts_with('a') && out.ends_with('b'), "{out:?}");
        }
        assert_eq!(
            EscapedLines("l1\n\tl2\r\u{9b}\u{2067}").to_string(),
            "l1\n\tl2\\r\\u{9b}\\u{2067}"
        );
        let mut w = EscapingWriter(String::new());
        fmt::Write::write_str(&mut w, "1\n2").unwrap();
        assert_eq!(w.0, r"1\n2");
    }
}
