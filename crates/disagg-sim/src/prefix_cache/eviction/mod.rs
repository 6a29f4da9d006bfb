//! The eviction orders of the prefix cache (`--prefix-eviction`): one file each, implementing
//! [`Eviction`], and one row each in the registry below, which declares the file, the option's
//! name and the dispatch.
//!
//! Adding an order: a new file `eviction/<name>.rs` with a unit struct implementing
//! [`Eviction`], and its row in `orders!` below.

pub mod order;

pub use order::{Eviction, Usage};

/// The registry: `Variant = "name" in file`, each order's file holding `pub struct Variant`.
macro_rules! orders {
    ($( $(#[$vm:meta])* $v:ident = $name:literal in $file:ident ),+ $(,)?) => {
        $(pub mod $file;)+

        disagg_model::named_enum! {
            /// The eviction order of the prefix cache (`--prefix-eviction`).
            pub enum PrefixEviction: "--prefix-eviction" {
                $($(#[$vm])* $v = $name),+
            }
        }

        impl PrefixEviction {
            /// The place in this order of a segment used as `u` (smaller goes first; the cache
            /// breaks ties by insertion).
            #[inline]
            pub fn key(self, u: &Usage) -> (u64, u64) {
                match self {
                    $(PrefixEviction::$v => <$file::$v as Eviction>::key(u),)+
                }
            }
        }
    };
}

orders! {
    /// Least recently used first (the reference).
    #[default]
    Lru = "lru" in lru,
    /// Fewest hits first, ties least recently used.
    Lfu = "lfu" in lfu,
    /// Oldest insertion first.
    Fifo = "fifo" in fifo,
}
