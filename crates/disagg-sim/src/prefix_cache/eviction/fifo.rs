//! `fifo` (beyond the reference): first in, first out: the oldest insertion first, whatever its
//! use since.

use super::order::{Eviction, Usage};

/// Oldest insertion first.
pub struct Fifo;

impl Eviction for Fifo {
    #[inline]
    fn key(_: &Usage) -> (u64, u64) {
        (0, 0)
    }
}
