//! Shared by the proptest fuzz targets (crates/disagg-trace/tests/suite/fuzz.rs and the CLI's
//! src/fuzz_tests.rs): the seed corpus in `fuzz/corpus/<target>/` and a byte-level mutator, so
//! every target replays its seeds and explores mutations of them on the stable toolchain.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;

/// `fuzz/corpus/<target>/`.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// The seeds of `target`, sorted by file name (there must be at least one).
pub fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out
}

/// Tokens that tend to reach the parsers' edge cases.
const TOKENS: &[&str] = &[
    ",",
    "\n",
    "\r\n",
    "\"",
    "-",
    ".",
    ":",
    "+",
    "[",
    "]",
    "{",
    "}",
    "=",
    "0",
    "-1",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "18446744073709551616",
    "99999999999999999999999",
    "1.5",
    "\u{feff}",
    "é",
    "\u{10ffff}",
    "null",
    "true",
    "[[",
    "]]",
    "\"a\"",
    "2024-02-29 23:59:59.999999999",
    "+99:99",
    "Z",
    "T",
    "#",
    "'",
    "\\",
    " ",
];

/// One edit of a byte string.
#[derive(Clone, Debug)]
pub enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Token(usize, usize),
    Duplicate(usize, usize, usize),
    Truncate(usize),
}

pub fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<usize>(), 1usize..16).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(i, t)| Edit::Token(i, t)),
        (any::<usize>(), 1usize..64, any::<usize>()).prop_map(|(i, n, j)| Edit::Duplicate(i, n, j)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// `seed` with `edits` applied (positions taken modulo the current length).
pub fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
        match *e {
            Edit::Flip(i, x) if !b.is_empty() => {
                let i = i % b.len();
                b[i] ^= x.max(1);
            }
            Edit::Flip(..) => {}
            Edit::Insert(i, x) => {
                let i = at(i, b.len());
                b.insert(i, x);
            }
            Edit::Delete(i, n) => {
                let i = at(i, b.len()).min(b.len());
                let j = (i + n).min(b.len());
                b.drain(i..j);
            }
            Edit::Token(i, t) => {
                let i = at(i, b.len());
                b.splice(i..i, TOKENS[t].bytes());
            }
            Edit::Duplicate(i, n, j) => {
                let i = at(i, b.len()).min(b.len());
                let end = (i + n).min(b.len());
                let piece = b[i..end].to_vec();
                let j = at(j, b.len());
                b.splice(j..j, piece);
            }
            Edit::Truncate(i) => {
                let i = at(i, b.len());
                b.truncate(i);
            }
        }
    }
    b
}

/// A seed of `target` (by index) and up to 8 edits.
pub fn mutated(target: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let s = seeds(target);
    (0..s.len(), prop::collection::vec(edit(), 0..8))
        .prop_map(move |(i, edits)| mutate(&s[i].1, &edits))
}

/// Arbitrary bytes, mostly printable ASCII with line breaks, sometimes anything.
pub fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        prop::collection::vec(
            prop_oneof![Just(b'\n'), Just(b','), Just(b'"'), 0x20u8..0x7f],
            0..256
        ),
    ]
}
