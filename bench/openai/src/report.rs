//! The driver's tables: percentiles, microsecond figures and the report it prints and
//! writes.

/// Nearest-rank percentile of sorted values.
pub(crate) fn pct(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub(crate) fn us(ns: u64) -> String {
    let v = ns as f64 / 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

pub(crate) fn signed_us(ns: i64) -> String {
    let s = us(ns.unsigned_abs());
    if ns < 0 {
        format!("−{s}")
    } else {
        format!("+{s}")
    }
}

pub(crate) struct Report {
    pub(crate) text: String,
}

impl Report {
    pub(crate) fn line(&mut self, s: impl AsRef<str>) {
        println!("{}", s.as_ref());
        self.text.push_str(s.as_ref());
        self.text.push('\n');
    }
}
