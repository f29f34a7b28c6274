//! Mahimahi packet-delivery traces.
//!
//! A trace file holds one non-negative integer per line: the millisecond offset of one
//! delivery opportunity of [`OPPORTUNITY_BYTES`] bytes. Values never decrease, repeated
//! values give several opportunities in that millisecond, and the last value (> 0) is the
//! period after which the trace repeats. No blank lines, comments or CR are allowed
//! (Mahimahi rejects them too); a single final newline is accepted.

use std::fmt;
use std::path::{Path, PathBuf};

/// Bytes one opportunity can carry: a 1500-byte packet plus the 4-byte TUN header that
/// Mahimahi counts.
pub const OPPORTUNITY_BYTES: u64 = 1504;

/// Why a trace line was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceErrorKind {
    /// The file holds no opportunity at all.
    Empty,
    /// A blank line (only a single trailing newline is allowed).
    BlankLine,
    /// A carriage return (CRLF line endings are not Mahimahi format).
    CarriageReturn,
    /// The line is not a non-negative decimal integer.
    NotAnInteger(String),
    /// The value is smaller than the one before it.
    Decreasing {
        /// Value on the previous line.
        previous: u64,
        /// Value on this line.
        value: u64,
    },
    /// The last value is 0, so the trace has no period.
    LastIsZero,
}

/// An error reading or parsing a trace file; parse errors carry file name and line.
#[derive(Debug)]
pub enum TraceError {
    /// The file could not be read.
    Io {
        /// File that failed.
        path: PathBuf,
        /// Underlying error.
        error: std::io::Error,
    },
    /// The content is not a valid Mahimahi trace.
    Parse {
        /// File (or name given to [`Trace::parse`]).
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        kind: TraceErrorKind,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, error } => {
                write!(f, "cannot read trace {}: {}", path.display(), error)
            }
            TraceError::Parse { file, line, kind } => {
                write!(f, "{file}:{line}: ")?;
                match kind {
                    TraceErrorKind::Empty => write!(f, "trace is empty"),
                    TraceErrorKind::BlankLine => write!(f, "blank line"),
                    TraceErrorKind::CarriageReturn => {
                        write!(f, "carriage return (CRLF line endings are not allowed)")
                    }
                    TraceErrorKind::NotAnInteger(s) => {
                        write!(f, "not a non-negative integer: {s:?}")
                    }
                    TraceErrorKind::Decreasing { previous, value } => {
                        write!(f, "value {value} is smaller than previous value {previous}")
                    }
                    TraceErrorKind::LastIsZero => {
                        write!(f, "last value must be > 0 (it is the repeat period)")
                    }
                }
            }
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { error, .. } => Some(error),
            TraceError::Parse { .. } => None,
        }
    }
}

/// A parsed trace: opportunity times in milliseconds within one period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    name: String,
    times_ms: Vec<u64>,
}

impl Trace {
    /// Reads and parses a trace file.
    pub fn load(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|error| TraceError::Io { path: path.to_path_buf(), error })?;
        Trace::parse(&path.display().to_string(), &text)
    }

    /// Parses trace text; `name` is used in error messages.
    pub fn parse(name: &str, text: &str) -> Result<Trace, TraceError> {
        let err = |line: usize, kind| TraceError::Parse { file: name.to_string(), line, kind };
        let body = text.strip_suffix('\n').unwrap_or(text);
        if body.is_empty() {
            return Err(err(1, TraceErrorKind::Empty));
        }
        let mut times_ms = Vec::new();
        let mut previous = 0u64;
        for (i, line) in body.split('\n').enumerate() {
            let lineno = i + 1;
            if line.contains('\r') {
                return Err(err(lineno, TraceErrorKind::CarriageReturn));
            }
            if line.is_empty() {
                return Err(err(lineno, TraceErrorKind::BlankLine));
            }
            // `u64::from_str` accepts a leading '+', Mahimahi's format does not.
            if !line.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(lineno, TraceErrorKind::NotAnInteger(line.to_string())));
            }
            let value: u64 =
                line.parse().map_err(|_| err(lineno, TraceErrorKind::NotAnInteger(line.to_string())))?;
            if value < previous {
                return Err(err(lineno, TraceErrorKind::Decreasing { previous, value }));
            }
            previous = value;
            times_ms.push(value);
        }
        if previous == 0 {
            return Err(err(times_ms.len(), TraceErrorKind::LastIsZero));
        }
        Ok(Trace { name: name.to_string(), times_ms })
    }

    /// Builds a trace from opportunity times (validated like a file).
    pub fn from_times(name: &str, times_ms: Vec<u64>) -> Result<Trace, TraceError> {
        let mut text = String::with_capacity(times_ms.len() * 6);
        for t in &times_ms {
            text.push_str(&t.to_string());
            text.push('\n');
        }
        Trace::parse(name, &text)
    }

    /// A constant-rate trace: `per_ms` opportunities every millisecond (12 Mbit/s each).
    pub fn constant(per_ms: usize) -> Trace {
        Trace { name: format!("constant-{per_ms}"), times_ms: vec![1; per_ms.max(1)] }
    }

    /// Name given at parse time (file path for loaded traces).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Opportunity times within one period, in milliseconds.
    pub fn times_ms(&self) -> &[u64] {
        &self.times_ms
    }

    /// Number of opportunities per period.
    pub fn len(&self) -> usize {
        self.times_ms.len()
    }

    /// Always false: a parsed trace has at least one opportunity.
    pub fn is_empty(&self) -> bool {
        self.times_ms.is_empty()
    }

    /// Repeat period in milliseconds (the last value, always > 0).
    pub fn period_ms(&self) -> u64 {
        self.times_ms.last().copied().unwrap_or(1).max(1)
    }

    /// Time (ms from the epoch) of opportunity number `index` counted across repeats.
    pub fn opportunity_ms(&self, index: u64) -> u64 {
        let len = self.times_ms.len().max(1) as u64;
        let cycle = index / len;
        let within = self.times_ms.get((index % len) as usize).copied().unwrap_or(0);
        cycle * self.period_ms() + within
    }

    /// Index of the first opportunity strictly after millisecond `t_ms`.
    pub fn first_index_after(&self, t_ms: u64) -> u64 {
        let period = self.period_ms();
        let len = self.times_ms.len() as u64;
        let cycle = t_ms / period;
        let offset = t_ms - cycle * period;
        let pos = self.times_ms.partition_point(|&t| t <= offset) as u64;
        cycle * len + pos
    }

    /// Mean capacity in bits per second, counting 1500 bytes per opportunity (the
    /// convention of Mahimahi's README and of `mm-throughput-graph`).
    pub fn mean_rate_bps(&self) -> f64 {
        self.times_ms.len() as f64 * 1500.0 * 8.0 * 1000.0 / self.period_ms() as f64
    }

    /// Capacity per bin of `bin_ms` over one period, in bits per second (1500 B/opp.).
    pub fn rate_series_bps(&self, bin_ms: u64) -> Vec<f64> {
        let bin_ms = bin_ms.max(1);
        let bins = self.period_ms().div_ceil(bin_ms) as usize;
        let mut counts = vec![0u64; bins.max(1)];
        for &t in &self.times_ms {
            // An opportunity at the period end belongs to the last bin.
            let b = ((t.saturating_sub(1)) / bin_ms) as usize;
            if let Some(c) = counts.get_mut(b.min(bins.saturating_sub(1))) {
                *c += 1;
            }
        }
        counts.into_iter().map(|c| c as f64 * 1500.0 * 8.0 * 1000.0 / bin_ms as f64).collect()
    }

    /// Serialises to Mahimahi text (one value per line, trailing newline).
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(self.times_ms.len() * 6);
        for t in &self.times_ms {
            s.push_str(&t.to_string());
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> (usize, TraceErrorKind) {
        match Trace::parse("t", text) {
            Err(TraceError::Parse { line, kind, .. }) => (line, kind),
            other => panic!("expected parse error, got {other:?}"),
        }
    }

    #[test]
    fn parses_and_repeats() {
        let t = Trace::parse("t", "0\n3\n3\n10\n").unwrap();
        assert_eq!(t.period_ms(), 10);
        assert_eq!(t.len(), 4);
        let times: Vec<u64> = (0..9).map(|i| t.opportunity_ms(i)).collect();
        assert_eq!(times, vec![0, 3, 3, 10, 10, 13, 13, 20, 20]);
        assert_eq!(t.first_index_after(0), 1);
        assert_eq!(t.first_index_after(3), 3);
        assert_eq!(t.opportunity_ms(t.first_index_after(10)), 13);
        assert_eq!(t.opportunity_ms(t.first_index_after(12)), 13);
        // No trailing newline is fine too.
        assert_eq!(Trace::parse("t", "1").unwrap().period_ms(), 1);
    }

    #[test]
    fn constant_rate_is_12_mbps() {
        let t = Trace::parse("t", "1\n").unwrap();
        assert_eq!(t.mean_rate_bps(), 12e6);
        assert_eq!(t.opportunity_ms(5), 6);
        assert_eq!(t.first_index_after(5), 5);
    }

    #[test]
    fn errors_have_line_numbers() {
        assert_eq!(kind(""), (1, TraceErrorKind::Empty));
        assert_eq!(kind("1\n\n2\n"), (2, TraceErrorKind::BlankLine));
        assert_eq!(kind("1\r\n2\n"), (1, TraceErrorKind::CarriageReturn));
        assert_eq!(kind("1\n2\nx3\n"), (3, TraceErrorKind::NotAnInteger("x3".into())));
        assert_eq!(kind("1\n-2\n"), (2, TraceErrorKind::NotAnInteger("-2".into())));
        assert_eq!(kind("1\n+2\n"), (2, TraceErrorKind::NotAnInteger("+2".into())));
        assert_eq!(kind("5\n4\n"), (2, TraceErrorKind::Decreasing { previous: 5, value: 4 }));
        assert_eq!(kind("0\n0\n"), (2, TraceErrorKind::LastIsZero));
        assert_eq!(kind("# c\n1\n"), (1, TraceErrorKind::NotAnInteger("# c".into())));
        let e = Trace::parse("foo.down", "1\n2\n1\n").unwrap_err();
        assert!(e.to_string().starts_with("foo.down:3: "), "{e}");
        let e = Trace::load("/nonexistent/x.up").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.up"));
    }

    #[test]
    fn rate_series_bins() {
        let t = Trace::parse("t", "1\n1\n2\n1000\n").unwrap();
        let r = t.rate_series_bps(500);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], 3.0 * 1500.0 * 8.0 * 2.0);
        assert_eq!(r[1], 1500.0 * 8.0 * 2.0);
    }
}
