//! The eviction orders of the prefix cache (`--prefix-eviction`): one file each, implementing
//! [`Eviction`], declared with `pub mod` and given one row in the registry below (the option's
//! name and the dispatch).
//!
//! Adding an order: a new file `eviction/<name>.rs` with a unit struct implementing
//! [`Eviction`], its `pub mod` line and its row in `orders!` below.

pub mod order;

pub use order::{Eviction, Usage};

/// The registry: `Variant = "name" in file`, each order's file holding `pub struct Variant`.
macro_rules! orders {
    ($( $(#[$vm:meta])* $v:ident = $name:literal in $file:ident ),+ $(,)?) => {
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

// One file per order, declared here (not inside the macro, so tools that walk the module tree,
// such as cargo-mutants, see them), and one registry row below.
pub mod fifo;
pub mod lfu;
pub mod lru;

orders! {
    /// Least recently used first (the reference).
    #[default]
    Lru = "lru" in lru,
    /// Fewest hits first, ties least recently used.
    Lfu = "lfu" in lfu,
    /// Oldest insertion first.
    Fifo = "fifo" in fifo,
}
