//! The KV link models: the only place that knows how bytes flow. The serving model submits a
//! transfer ([`XferSpec`]: its latency, its stream time at one channel's full rate, its wire bytes
//! and, when the cache leaves layer by layer, the timing of the prefill step that produces it), and
//! hears back twice through [`Note`]s: when the transfer starts (`kv_start`) and when its last byte
//! has landed on the decode side (`kv_ready`). In between, the link model schedules its own events
//! ([`LinkEv`]) on the engine's queue.
//!
//! # FIFO channels (`fifo`, the reference)
//!
//! C independent channels and one FIFO queue (`docs/serving-model.md#kv-link`). A transfer waits for a free
//! channel, is granted it (`kv_start` = grant time `g`), holds it until its KV has landed, then
//! releases it; the next waiting transfer is granted at the release time. A whole-cache transfer
//! holds its channel for `fixed_s + stream_s` (the reference's `t = latency + bytes / bandwidth`).
//! Channel busy time is the holding time. Events per transfer: grant, end, release (O(1)).
//!
//! # Fair sharing (`fair`, processor sharing)
//!
//! All transfers with bytes ready to send share the link's bandwidth equally: with `n` of them on a
//! link of C channels each runs at `min(1, C / n)` of one channel's bandwidth, so the link's total
//! rate `min(n, C)` channel-rates never exceeds its capacity of C channels. A transfer's work is
//! its `stream_s` (seconds at one channel's full rate); rates are recomputed at every start, finish
//! and (layer-wise) slice arrival. Its `fixed_s` latency is a pipeline delay added once, after its
//! last byte is through, and uses no bandwidth: `kv_ready = last byte + fixed_s`. `kv_start` is the
//! time it joins the link (there is no channel to wait for). Busy time is channel-seconds of
//! bandwidth used, i.e. the transfers' summed `stream_s`, so utilisation = busy / (C x horizon) is
//! the fraction of capacity used. Implementation: a virtual clock `V` with `dV/dt = min(1, C/n)`;
//! a transfer with `b` work left finishes when `V` reaches `V(now) + b` (a heap of those virtual
//! finish times).
//!
//! A transfer that arrives on an empty link runs alone ("solo") and is timed in closed form (the
//! FIFO formulas below); if another transfer joins before it is through, its progress so far is
//! worked out exactly and it joins the sharing set. On an uncongested link this costs O(1) events
//! per transfer; once transfers overlap, a layer-wise transfer costs O(layers) events (one per
//! slice arrival, one per time its ready bytes run out).
//!
//! # Layer-wise streaming
//!
//! The prefill step of duration `T` (overhead and any GPU compression pass included) runs its `L`
//! layers in equal shares: layer `l`'s slice of every prompt in the batch (`stream_s / L` of work) is
//! ready at `start + (l * T) / L` (`l < L`) and the last at the step's end. A layer-wise transfer
//! starts (asks for the link) when its first slice is ready, and can only send bytes that are
//! ready: under FIFO it holds its granted channel through gaps in production; under fair sharing it
//! is in the sharing set only while it has ready bytes (it leaves when they run out and rejoins at
//! the next slice's arrival).
//!
//! A transfer alone on its channel (FIFO) or link (solo) granted at `g` (at least the first
//! slice's ready time `r1`) sends its last byte at `max(g + stream, end + stream / L)` (slices are
//! sent back to back, so the maximum over slices is reached at the first or the last), so with
//! `d = g - r1`
//!
//! ```text
//! kv_ready = end + (fixed + max(stream / L, (stream + d) - (T * (L - 1)) / L))
//! ```
//!
//! With `d = 0` (an idle link) the bracket is the chapter's closed form
//! [`crate::layerwise_exposed`] evaluated with its own operation order, so
//! `kv_ready == first_token + layerwise_exposed(fixed, stream, T, L)` bit for bit.
//!
//! The disciplines (`--link-sharing`) are one file each ([`fifo`], [`fair`]), implementing
//! [`Discipline`]: the event-driven model the simulator runs and the closed form the hand-off
//! calculator uses for concurrent transfers ([`Discipline::shared`]). The registry below maps each
//! [`Sharing`] name to its file; it generates the [`Sharing`] enum and both dispatches. The link
//! schedules its events on any queue implementing [`Schedule`] (the simulator's engine queue).
//!
//! # Adding a discipline
//!
//! A new file `crates/disagg-model/src/link/<name>.rs` with a type implementing [`Discipline`]
//! (its event-driven part and its closed form), and in this file its `mod` line and its registry
//! row (`/// doc` then `Variant = "name" => <name>::Type`). The name then parses everywhere
//! (`--link-sharing`, the calculator, the page, Python) and lists in every error.

mod common;
#[doc(hidden)]
pub mod testing;

pub use self::common::{
    layerwise_tail, Discipline, LayerPlan, LinkEv, LinkTotals, Note, Schedule, SharedCase,
    SharedTimes, Tagged, XferSpec,
};

/// The registry: `Variant = "name" => file::Type`, each a [`Sharing`] name (with its doc comment)
/// and the file of its [`Discipline`]. It generates the [`Sharing`] enum (the calculator's and the
/// simulator's `--link-sharing`), dispatches [`LinkModel`]'s calls to the files (declared by `mod`
/// below) and [`Sharing::shared`] to their closed forms.
macro_rules! disciplines {
    ($($(#[$m:meta])* $v:ident = $name:literal => $file:ident :: $t:ident),+ $(,)?) => {
        crate::named_enum! {
            /// How concurrent hand-offs share a link in the calculator (the simulator's `--link-sharing`).
            pub enum Sharing: "link sharing" {
                $($(#[$m])* $v = $name),+
            }
        }

        impl Sharing {
            /// The calculator's closed form for `case` under this discipline
            /// ([`Discipline::shared`]).
            pub fn shared(self, case: &SharedCase, tail: impl Fn(f64, f64) -> f64) -> SharedTimes {
                match self {
                    $(Sharing::$v => <$file::$t as Discipline>::shared(case, tail)),+
                }
            }
        }

        /// A link's discipline and its state.
        #[derive(Clone, Debug)]
        enum Kind {
            $($v($file::$t)),+
        }

        impl Kind {
            fn new(sharing: Sharing, channels: u32) -> Self {
                match sharing {
                    $(Sharing::$v => Kind::$v(<$file::$t as Discipline>::new(channels))),+
                }
            }
            fn waiting(&self) -> usize {
                match self { $(Kind::$v(d) => d.waiting()),+ }
            }
            fn in_flight(&self) -> u32 {
                match self { $(Kind::$v(d) => d.in_flight()),+ }
            }
            fn total_rate(&self) -> f64 {
                match self { $(Kind::$v(d) => d.total_rate()),+ }
            }
            fn bytes_in_flight(&self, now: f64) -> f64 {
                match self { $(Kind::$v(d) => d.bytes_in_flight(now)),+ }
            }
            #[inline]
            fn submit<E: From<Tagged>, Q: Schedule<E>>(
                &mut self,
                l: u32,
                spec: XferSpec,
                q: &mut Q,
                notes: &mut Vec<Note>,
            ) {
                match self { $(Kind::$v(d) => d.submit(l, spec, q, notes)),+ }
            }
            fn submit_open<E: From<Tagged>, Q: Schedule<E>>(
                &mut self,
                l: u32,
                spec: XferSpec,
                q: &mut Q,
            ) -> u32 {
                match self { $(Kind::$v(d) => d.submit_open(l, spec, q)),+ }
            }
            fn close<E: From<Tagged>, Q: Schedule<E>>(&mut self, l: u32, slot: u32, at: f64, q: &mut Q) {
                match self { $(Kind::$v(d) => d.close(l, slot, at, q)),+ }
            }
            #[inline]
            fn on_event<E: From<Tagged>, Q: Schedule<E>>(
                &mut self,
                l: u32,
                ev: LinkEv,
                q: &mut Q,
                notes: &mut Vec<Note>,
                totals: &mut LinkTotals,
            ) {
                match self { $(Kind::$v(d) => d.on_event(l, ev, q, notes, totals)),+ }
            }
        }
    };
}

// One file per discipline, declared here (not inside the macro, so tools that walk the module
// tree, such as cargo-mutants, see them), and one registry row below.
mod fair;
mod fifo;

disciplines! {
    /// Independent FIFO channels, first come first served (the reference).
    #[default]
    Fifo = "fifo" => fifo::Fifo,
    /// Processor sharing: the active transfers split the bandwidth equally.
    Fair = "fair" => fair::Fair,
}

/// One link: C channels of one catalogue link, shared as its [`Sharing`] discipline says.
#[derive(Clone, Debug)]
pub struct LinkModel {
    kind: Kind,
    totals: LinkTotals,
}

impl LinkModel {
    /// A link of `channels` channels.
    pub fn new(sharing: Sharing, channels: u32) -> Self {
        LinkModel {
            kind: Kind::new(sharing, channels),
            totals: LinkTotals::default(),
        }
    }

    /// Totals so far.
    pub fn totals(&self) -> &LinkTotals {
        &self.totals
    }

    /// Transfers waiting for a channel (fair: 0).
    pub fn waiting(&self) -> usize {
        self.kind.waiting()
    }

    /// Transfers moving bytes now (FIFO: channels in use; fair: transfers with ready bytes).
    pub fn in_flight(&self) -> u32 {
        self.kind.in_flight()
    }

    /// Total rate now, in channel rates (never above the channel count).
    pub fn total_rate(&self) -> f64 {
        self.kind.total_rate()
    }

    /// Wire bytes of started transfers not yet through the link at `now` (FIFO: the whole of every
    /// transfer holding a channel; fair: what each has left to send).
    pub fn bytes_in_flight(&self, now: f64) -> f64 {
        self.kind.bytes_in_flight(now)
    }

    /// Submits a transfer now (`q.now()`); `l` is this link's index (echoed in its events).
    pub fn submit<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut Q,
        notes: &mut Vec<Note>,
    ) {
        self.kind.submit(l, spec, q, notes)
    }

    /// FIFO only: submits a transfer whose bytes are produced over steps not all known yet
    /// (chunk-wise streaming of the scheduled pools). It waits for a channel like any other
    /// (`Started` at the grant) and then holds it until the caller [`close`](Self::close)s it with
    /// its landing time. Returns its slot, for `close`. `spec.plan` is ignored.
    pub fn submit_open<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        spec: XferSpec,
        q: &mut Q,
    ) -> u32 {
        self.kind.submit_open(l, spec, q)
    }

    /// FIFO only: the open transfer in `slot` (granted already) lands at `at` (not before now):
    /// its channel is busy from the grant to `at`.
    pub fn close<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        slot: u32,
        at: f64,
        q: &mut Q,
    ) {
        self.kind.close(l, slot, at, q)
    }

    /// Handles one of this link's events.
    pub fn on_event<E: From<Tagged>, Q: Schedule<E>>(
        &mut self,
        l: u32,
        ev: LinkEv,
        q: &mut Q,
        notes: &mut Vec<Note>,
    ) {
        self.kind.on_event(l, ev, q, notes, &mut self.totals)
    }
}

#[cfg(test)]
mod tests;
