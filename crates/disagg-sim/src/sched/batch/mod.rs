//! Batch policies: how a scheduled instance forms its steps (`docs/levers.md#batch-policies`).
//! A policy is a [`BatchScheduler`], one file each, listed once in the registry below
//! ([`batch_policies!`]), which makes the `--batch-policy` option's names, parsing, help and
//! echo ([`BatchPolicy`]):
//!
//! * [`prefill_priority`]: a batch of whole prompts whenever the head of the queue can be
//!   admitted, else a decode step (`docs/levers.md#batch-policies`);
//! * [`decode_priority`]: decode while anything runs; prompts only when the batch has drained;
//! * [`chunked`]: every step carries the decode rows plus prompt chunks up to the token budget
//!   (`docs/levers.md#batch-policies`).
//!
//! Adding a policy: a new file here with a type implementing [`BatchScheduler`] (forming its
//! steps from the [`StepForm`] building blocks), and one row in the registry below.

use disagg_model::Error;
use serde::{Deserialize, Serialize};

mod chunked;
mod decode_priority;
mod prefill_priority;
mod scheduler;

pub(crate) use scheduler::{BatchScheduler, Formed, StepForm};

/// Joins `name (help)` pairs as a sentence: `a (x), b (y) or c (z)`.
macro_rules! join_policies {
    ($n:literal, $h:literal) => { concat!($n, " (", $h, ")") };
    ($n1:literal, $h1:literal; $n2:literal, $h2:literal) => {
        concat!($n1, " (", $h1, ") or ", $n2, " (", $h2, ")")
    };
    ($n:literal, $h:literal; $($rest:tt)+) => {
        concat!($n, " (", $h, "), ", join_policies!($($rest)+))
    };
}

/// The registry of batch policies: one row per policy (its variant of [`BatchPolicy`], its
/// `--batch-policy` name, its [`BatchScheduler`], and its help), in the order the names are
/// listed; the first row is the default.
macro_rules! batch_policies {
    ($(#[$doc:meta])* $first:ident = $fname:literal => $fty:ty, $fhelp:literal;
     $($(#[$rdoc:meta])* $var:ident = $name:literal => $ty:ty, $help:literal;)*) => {
        /// How a scheduled instance forms its steps (`--batch-policy`).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub enum BatchPolicy {
            $(#[$doc])*
            #[default]
            #[serde(rename = $fname)]
            $first,
            $($(#[$rdoc])* #[serde(rename = $name)] $var,)*
        }

        impl BatchPolicy {
            /// The names, in the reference's order.
            pub const NAMES: [&'static str; 1 $(+ { let _ = $name; 1 })*] = [$fname, $($name),*];

            /// The help of `--batch-policy`.
            pub const HELP: &'static str = concat!(
                "How a step is formed: ",
                join_policies!($fname, $fhelp; $($name, $help);*)
            );

            /// The policy named `s`.
            pub fn parse(s: &str) -> Result<Self, Error> {
                match s {
                    $fname => Ok(BatchPolicy::$first),
                    $($name => Ok(BatchPolicy::$var),)*
                    other => Err(Error::unknown("--batch-policy", other, Self::NAMES)),
                }
            }

            /// Its name.
            pub fn as_str(self) -> &'static str {
                Self::NAMES[self as usize]
            }

            /// Forms instance `i`'s next step with this policy's scheduler (`prefill_instance`:
            /// `i` is a prefill instance of a disaggregated run).
            #[inline]
            pub(crate) fn form_step<S: StepForm>(
                self,
                sim: &mut S,
                i: usize,
                prefill_instance: bool,
            ) -> Formed {
                match (self, prefill_instance) {
                    (BatchPolicy::$first, false) => <$fty as BatchScheduler>::form_step(sim, i),
                    (BatchPolicy::$first, true) => {
                        <$fty as BatchScheduler>::form_prefill_instance_step(sim, i)
                    }
                    $((BatchPolicy::$var, false) => <$ty as BatchScheduler>::form_step(sim, i),
                    (BatchPolicy::$var, true) => {
                        <$ty as BatchScheduler>::form_prefill_instance_step(sim, i)
                    })*
                }
            }
        }
    };
}

batch_policies! {
    /// Whole prompts whenever one can be admitted, decode otherwise (vLLM v0; the reference's
    /// default).
    PrefillPriority = "prefill-priority" => prefill_priority::PrefillPriority,
        "whole prompts first, the reference";
    /// Admit prompts only when the running batch has drained (request-level batching).
    DecodePriority = "decode-priority" => decode_priority::DecodePriority,
        "prompts only when the running batch has drained";
    /// Sarathi-Serve stall-free batching: decode rows plus prompt chunks up to the token budget.
    Chunked = "chunked" => chunked::Chunked,
        "decode rows plus prompt chunks up to the token budget, Sarathi-Serve";
}

#[cfg(test)]
mod tests {
    use super::BatchPolicy;

    #[test]
    fn the_registry_makes_the_names_help_and_echo() {
        assert_eq!(
            BatchPolicy::NAMES,
            ["prefill-priority", "decode-priority", "chunked"]
        );
        assert_eq!(
            BatchPolicy::HELP,
            "How a step is formed: prefill-priority (whole prompts first, the reference), \
             decode-priority (prompts only when the running batch has drained) or chunked (decode \
             rows plus prompt chunks up to the token budget, Sarathi-Serve)"
        );
        for (k, n) in BatchPolicy::NAMES.iter().enumerate() {
            let p = BatchPolicy::parse(n).unwrap();
            assert_eq!((p as usize, p.as_str()), (k, *n));
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{n}\""));
        }
        assert_eq!(BatchPolicy::default(), BatchPolicy::PrefillPriority);
        let e = BatchPolicy::parse("fifo").unwrap_err().to_string();
        assert!(e.contains("--batch-policy") && e.contains("fifo") && e.contains("chunked"));
    }
}
