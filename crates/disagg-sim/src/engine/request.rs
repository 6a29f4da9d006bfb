//! A request inside the engine: its stamps, its sizes, and what it reserves on a decode-side
//! instance. Requests live in one `Vec` indexed by rid; events and instances carry indices.

use crate::pyrand::GenRequest;
use crate::scenario::FirstToken;

/// "Not stamped" (Python `None`) inside the engine.
pub(crate) const UNSET: f64 = f64::NAN;
/// "No instance" for an instance index.
pub(crate) const NO_INST: u32 = u32::MAX;

/// One request's stamps (seconds; NaN = not reached).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub arrival: f64,
    pub prefill_start: f64,
    pub first_token: f64,
    pub kv_start: f64,
    pub kv_ready: f64,
    pub decode_start: f64,
    pub finish: f64,
    /// The hand-off started: it asked for decode memory or the link (first token; layer-wise: the
    /// first slice ready).
    pub kv_req: f64,
    /// Decode memory reserved (`--reserve-kv-on transfer` only).
    pub kv_mem: f64,
    /// CED with the replay on decode: the encoder-only prefill step ended (the first token comes
    /// later, from the decode instance); NaN otherwise (the prefill ends at the first token).
    pub prefill_done: f64,
    /// Index of the first decode step it takes part in, in its decode-side instance's step list.
    pub adm: u64,
    pub prompt: u32,
    pub output: u32,
    /// Decode-side instance (decode pool index, or colocated index) whose steps it took part in.
    pub dinst: u32,
    /// Decode instance chosen when the hand-off started (per-pair links, or reservation at
    /// transfer), else `NO_INST`.
    pub dtarget: u32,
    /// Cache units it reserves on a decode-side instance when they are not `prompt + output`
    /// ([`Need::Units`]: a model with windowed layers or a linear state); 0 otherwise.
    pub units: u32,
}

/// What a request reserves on a decode-side instance, in cache units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// `prompt + output` tokens (the reference).
    Tokens,
    /// One sequence (a distilled Hyena model: its capacity counts sequences).
    One,
    /// The request's own `units` (a layer-kind model with windowed layers or a linear state:
    /// [`disagg_model::ModelSpec::kv_units`]).
    Units,
}

impl Need {
    /// The units `r` reserves.
    #[inline]
    pub(crate) fn of(self, r: &Req) -> u64 {
        match self {
            Need::Tokens => r.prompt as u64 + r.output as u64,
            Need::One => 1,
            Need::Units => r.units as u64,
        }
    }
}

impl Req {
    /// A request of the workload, nothing stamped but its arrival.
    pub(crate) fn new(w: &GenRequest) -> Self {
        Req {
            arrival: w.arrival_s,
            prefill_start: UNSET,
            first_token: UNSET,
            kv_start: UNSET,
            kv_ready: UNSET,
            decode_start: UNSET,
            finish: UNSET,
            kv_req: UNSET,
            kv_mem: UNSET,
            prefill_done: UNSET,
            adm: 0,
            prompt: w.prompt_len,
            output: w.output_len,
            dinst: NO_INST,
            dtarget: NO_INST,
            units: 0,
        }
    }

    /// The end of its prefill step: `prefill_done` when a CED decode instance emits the first
    /// token, else the first token.
    #[inline]
    pub(crate) fn prefill_end(&self) -> f64 {
        if self.prefill_done.is_nan() {
            self.first_token
        } else {
            self.prefill_done
        }
    }

    /// The first token as TTFT and TPOT count it: the end of prefill, or (`--first-token decode`)
    /// the decode admission of a request that was handed off.
    #[inline]
    pub(crate) fn emitted(&self, conv: FirstToken) -> f64 {
        match conv {
            FirstToken::Decode if !self.kv_ready.is_nan() && !self.decode_start.is_nan() => {
                self.decode_start
            }
            _ => self.first_token,
        }
    }
}
