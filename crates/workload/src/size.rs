//! Byte sizes written as integers or strings with a unit ("4KiB", "1.5MiB", "300MB").

use std::fmt;

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl Bytes {
    pub fn parse(s: &str) -> Result<Bytes, String> {
        let s = s.trim();
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let v: f64 = num.parse().map_err(|_| format!("`{s}` is not a size (e.g. 4096, \"4KiB\", \"2MiB\")"))?;
        let mult: u64 = match unit.trim() {
            "" | "B" => 1,
            "KiB" | "K" => 1 << 10,
            "MiB" | "M" => 1 << 20,
            "GiB" | "G" => 1 << 30,
            "KB" | "kB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            u => return Err(format!("unknown size unit `{u}` in `{s}` (B, KiB, MiB, GiB, KB, MB, GB)")),
        };
        Ok(Bytes((v * mult as f64).round() as u64))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte count or a size string such as \"4KiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
                u64::try_from(v).map(Bytes).map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                Bytes::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_units() {
        assert_eq!(Bytes::parse("4KiB").unwrap().0, 4096);
        assert_eq!(Bytes::parse("1.5MiB").unwrap().0, 1_572_864);
        assert_eq!(Bytes::parse("300MB").unwrap().0, 300_000_000);
        assert!(Bytes::parse("3 parsecs").is_err());
    }
}
