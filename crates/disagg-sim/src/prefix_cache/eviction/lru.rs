//! `lru`: least recently used first (the reference's order, `docs/levers.md#prefix-caching`): by the
//! last pin or unpin time, then by insertion.

use super::order::{Eviction, Usage};

/// Least recently used first.
pub struct Lru;

impl Eviction for Lru {
    #[inline]
    fn key(u: &Usage) -> (u64, u64) {
        (u.last_bits(), 0)
    }
}
