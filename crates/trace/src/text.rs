//! Line splitting and field parsing shared by the text importers. Columns are 1-based byte
//! offsets, so an error points at the exact field.

use std::borrow::Cow;

use crate::error::LineError;

/// A field's text as an error message shows it: whole when short, else its start and its length
/// (a 20 MB "field" must not make a 20 MB message).
pub(crate) fn shown(s: &str) -> Cow<'_, str> {
    const KEEP: usize = 64;
    if s.len() <= KEEP + 16 {
        return Cow::Borrowed(s);
    }
    let mut end = KEEP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}… ({} bytes)", &s[..end], s.len()))
}

/// Whitespace-separated fields of one line, with their byte offsets.
pub(crate) struct Fields<'a> {
    line: &'a str,
    pos: usize,
}

/// One field: its text and its 1-based column.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field<'a> {
    pub text: &'a str,
    pub column: usize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(line: &'a str) -> Fields<'a> {
        Fields { line, pos: 0 }
    }

    pub(crate) fn at(line: &'a str, pos: usize) -> Fields<'a> {
        Fields { line, pos }
    }

    fn skip_space(&mut self) {
        let b = self.line.as_bytes();
        while self.pos < b.len() && (b[self.pos] == b' ' || b[self.pos] == b'\t') {
            self.pos += 1;
        }
    }

    pub(crate) fn next_field(&mut self) -> Option<Field<'a>> {
        self.skip_space();
        let b = self.line.as_bytes();
        if self.pos >= b.len() {
            return None;
        }
        let start = self.pos;
        while self.pos < b.len() && b[self.pos] != b' ' && b[self.pos] != b'\t' {
            self.pos += 1;
        }
        Some(Field { text: &self.line[start..self.pos], column: start + 1 })
    }

    /// The next field, or a "missing field" error pointing just past the end of the line.
    pub(crate) fn expect(&mut self, what: &str) -> Result<Field<'a>, LineError> {
        match self.next_field() {
            Some(f) => Ok(f),
            None => Err(LineError::new(self.line.len() + 1, format!("missing field: {what}"))),
        }
    }

    /// The rest of the line after the current position, leading whitespace skipped.
    pub(crate) fn rest(&mut self) -> Field<'a> {
        self.skip_space();
        Field { text: &self.line[self.pos..], column: self.pos + 1 }
    }

    /// Error if anything but whitespace is left.
    pub(crate) fn expect_end(&mut self) -> Result<(), LineError> {
        match self.next_field() {
            None => Ok(()),
            Some(f) => Err(LineError::new(f.column, format!("unexpected field `{}`", shown(f.text)))),
        }
    }

    pub(crate) fn line(&self) -> &'a str {
        self.line
    }
}

impl<'a> Field<'a> {
    pub(crate) fn err(&self, message: impl Into<String>) -> LineError {
        LineError::new(self.column, message)
    }

    pub(crate) fn u64(&self, what: &str) -> Result<u64, LineError> {
        parse_u64(self.text).ok_or_else(|| {
            if all_digits(self.text) {
                self.err(format!("{what}: `{}` is out of range (more than {})", shown(self.text), u64::MAX))
            } else {
                self.err(format!("{what}: expected an unsigned integer, found `{}`", shown(self.text)))
            }
        })
    }

    pub(crate) fn u32(&self, what: &str) -> Result<u32, LineError> {
        self.u64(what)?
            .try_into()
            .map_err(|_| self.err(format!("{what}: `{}` is out of range (more than {})", shown(self.text), u32::MAX)))
    }

    pub(crate) fn i64(&self, what: &str) -> Result<i64, LineError> {
        parse_i64(self.text).ok_or_else(|| {
            if all_digits(self.text.strip_prefix('-').unwrap_or(self.text)) {
                self.err(format!("{what}: `{}` is out of range (a 64-bit signed integer)", shown(self.text)))
            } else {
                self.err(format!("{what}: expected an integer, found `{}`", shown(self.text)))
            }
        })
    }

    pub(crate) fn i32(&self, what: &str) -> Result<i32, LineError> {
        self.i64(what)?.try_into().map_err(|_| {
            self.err(format!(
                "{what}: `{}` is out of range (a 32-bit signed integer: {} to {})",
                shown(self.text),
                i32::MIN,
                i32::MAX
            ))
        })
    }

    /// `seconds.fraction` (any number of fraction digits, up to 9 kept) as nanoseconds.
    pub(crate) fn time_ns(&self, what: &str) -> Result<u64, LineError> {
        parse_secs_ns(self.text).ok_or_else(|| {
            let (sec, frac) = self.text.split_once('.').unwrap_or((self.text, ""));
            if all_digits(sec) && (frac.is_empty() || all_digits(frac)) {
                // Nanoseconds are a u64: 2^64 ns is about 584 years.
                self.err(format!(
                    "{what}: `{}` s is out of range (at most {} s: times are 64-bit nanoseconds)",
                    shown(self.text),
                    u64::MAX / 1_000_000_000
                ))
            } else {
                self.err(format!("{what}: expected seconds like 12.345678, found `{}`", shown(self.text)))
            }
        })
    }
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

pub(crate) fn parse_i64(s: &str) -> Option<i64> {
    if let Some(neg) = s.strip_prefix('-') {
        let v = parse_u64(neg)?;
        if v <= i64::MAX as u64 + 1 {
            Some((v as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(parse_u64(s)?).ok()
    }
}

/// `"12.345"` → 12_345_000_000 ns. Fractions longer than 9 digits are truncated.
pub(crate) fn parse_secs_ns(s: &str) -> Option<u64> {
    let (sec, frac) = match s.split_once('.') {
        Some((a, b)) => (a, b),
        None => (s, ""),
    };
    let sec = parse_u64(sec)?;
    let mut ns: u64 = 0;
    let fb = frac.as_bytes();
    for i in 0..9 {
        ns *= 10;
        if let Some(&c) = fb.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            ns += d as u64;
        }
    }
    if fb.len() > 9 && !fb[9..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    sec.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// The largest request a block trace can hold: `struct blk_io_trace` records a request's size
/// in a 32-bit byte count (blkparse text prints what that holds, in sectors).
pub(crate) const MAX_REQUEST_BYTES: u64 = u32::MAX as u64;

/// `n` sectors as bytes, refused past [`MAX_REQUEST_BYTES`] (a 2^32-sector "request" is 2 TiB).
pub(crate) fn sectors_to_bytes(f: &Field<'_>) -> Result<u64, LineError> {
    let n = f.u64("sector count")?;
    match n.checked_mul(forefront_record::trace::SECTOR_BYTES) {
        Some(b) if b <= MAX_REQUEST_BYTES => Ok(b),
        _ => Err(f.err(format!(
            "sector count {n}: more than a block trace can record for one request ({MAX_REQUEST_BYTES} bytes, a 32-bit count)"
        ))),
    }
}

/// Checks that a request of `bytes` at `sector` ends within a 64-bit byte address space
/// (sectors near 2^64 are corrupt records, not disks).
pub(crate) fn check_extent(sector: u64, bytes: u64) -> Result<(), String> {
    match sector.checked_mul(forefront_record::trace::SECTOR_BYTES).and_then(|b| b.checked_add(bytes)) {
        Some(_) => Ok(()),
        None => Err(format!("sector {sector} (+ {bytes} bytes): ends past byte 2^64, beyond any device (a corrupt record?)")),
    }
}

/// The most one `read`/`write` (or its `p`/`v` variants) transfers on Linux: `MAX_RW_COUNT`,
/// `INT_MAX & PAGE_MASK` (4 KiB pages). A traced call that moved more is corrupt.
pub(crate) const MAX_RW_COUNT: u64 = 0x7fff_f000;

/// The largest file offset (`loff_t` is an `i64`).
pub(crate) const MAX_FILE_OFFSET: u64 = i64::MAX as u64;

/// Checks the bytes one read/write call moved and where they end in the file.
pub(crate) fn check_rw(offset: u64, len: u64) -> Result<(), String> {
    if len > MAX_RW_COUNT {
        return Err(format!("size {len}: more than one read or write transfers on Linux ({MAX_RW_COUNT} bytes, MAX_RW_COUNT)"));
    }
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_OFFSET => Ok(()),
        _ => Err(format!("offset {offset} + size {len}: past the largest file offset ({MAX_FILE_OFFSET}, 2^63 - 1)")),
    }
}

/// `maj,min`.
pub(crate) fn parse_dev(f: &Field<'_>) -> Result<forefront_record::trace::DevId, LineError> {
    let bad = || f.err(format!("device: expected major,minor, found `{}`", shown(f.text)));
    let (a, b) = f.text.split_once(',').ok_or_else(bad)?;
    let major = parse_u64(a).and_then(|v| u32::try_from(v).ok()).ok_or_else(bad)?;
    let minor = parse_u64(b).and_then(|v| u32::try_from(v).ok()).ok_or_else(bad)?;
    Ok(forefront_record::trace::DevId { major, minor })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_times() {
        assert_eq!(parse_u64("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64("18446744073709551616"), None);
        assert_eq!(parse_u64(""), None);
        assert_eq!(parse_u64("1a"), None);
        assert_eq!(parse_i64("-1"), Some(-1));
        assert_eq!(parse_i64("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_secs_ns("0.000000001"), Some(1));
        assert_eq!(parse_secs_ns("269.461225"), Some(269_461_225_000));
        assert_eq!(parse_secs_ns("1.1234567891"), Some(1_123_456_789));
        assert_eq!(parse_secs_ns("1.x"), None);
    }

    #[test]
    fn out_of_range_numbers_and_times_say_so() {
        let f = Field { text: "18446744073709551616", column: 3 };
        let e = f.u64("sector").unwrap_err();
        assert!(e.message.contains("sector: `18446744073709551616` is out of range"), "{}", e.message);
        let e = f.time_ns("time").unwrap_err();
        assert!(e.message.contains("time: `18446744073709551616` s is out of range (at most 18446744073 s"), "{}", e.message);
        let e = Field { text: "18446744074.000000001", column: 1 }.time_ns("time").unwrap_err();
        assert!(e.message.contains("out of range"), "{}", e.message);
        let e = Field { text: "12.x", column: 1 }.time_ns("time").unwrap_err();
        assert!(e.message.contains("expected seconds like 12.345678, found `12.x`"), "{}", e.message);
        let e = Field { text: "-99999999999999999999", column: 1 }.i64("result").unwrap_err();
        assert!(e.message.contains("out of range"), "{}", e.message);
    }

    #[test]
    fn long_fields_are_shown_abridged() {
        let long = "x".repeat(1000);
        let e = Field { text: &long, column: 1 }.u64("tid").unwrap_err();
        assert!(e.message.len() < 200, "{}", e.message);
        assert!(e.message.ends_with("… (1000 bytes)`"), "{}", e.message);
        let utf = "é".repeat(100);
        assert!(shown(&utf).starts_with("éé"));
        assert_eq!(shown("short"), "short");
    }

    #[test]
    fn fields_report_columns() {
        let mut f = Fields::new("  ab\tcd  ");
        let a = f.next_field().unwrap();
        assert_eq!((a.text, a.column), ("ab", 3));
        let c = f.next_field().unwrap();
        assert_eq!((c.text, c.column), ("cd", 6));
        let e = f.expect("x").unwrap_err();
        assert_eq!(e.column, 10);
        assert!(e.message.contains("missing field: x"));
    }
}
