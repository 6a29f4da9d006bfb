//! What an eviction order sees of a cached segment, and the trait each order implements.

/// A cached segment as an eviction order sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Usage {
    /// The last time a request pinned or unpinned it (its insertion time at first), s.
    pub last_s: f64,
    /// How many times a request pinned it after its insertion (admissions that hit it).
    pub hits: u64,
}

impl Usage {
    /// `last_s` as bits that order as the times do: times are non-negative, and `+ 0.0` makes a
    /// -0.0 the same time as 0.0 (as in Python).
    #[inline]
    pub fn last_bits(&self) -> u64 {
        debug_assert!(self.last_s >= 0.0, "negative cache time {}", self.last_s);
        (self.last_s + 0.0).to_bits()
    }
}

/// An eviction order of the prefix cache: which unpinned leaf goes first. The cache evicts the
/// candidate with the smallest `(key, seq)`, where `seq` is the segment's insertion counter, so
/// equal keys go oldest insertion first.
pub trait Eviction {
    /// The segment's place in the order (smaller goes first), from what the order looks at.
    fn key(u: &Usage) -> (u64, u64);
}
