//! `lfu` (beyond the reference): least frequently used first: the fewest hits, ties least
//! recently used, then by insertion.

use super::order::{Eviction, Usage};

/// Fewest hits first, ties by the LRU order.
pub struct Lfu;

impl Eviction for Lfu {
    #[inline]
    fn key(u: &Usage) -> (u64, u64) {
        (u.hits, u.last_bits())
    }
}
