//! Build steps of the scheduling levers (the scheduled instances), with the prefix-aware hand-off.

use disagg_model::{Catalogue, Error, ModelSpec, SendMode};

use crate::levers::{BatchPolicy, DecodeRouter, KvPolicy, Levers, Preemption, Speculative};
use crate::prefix_cache::PrefixEviction;

use super::{
    rename, HandoffOptions, LinkSharing, LinkTopology, Mode, ReserveKvOn, Scenario, HOST_LINK_FLAG,
    KV_WATERMARK, MAX_PREFILL_TOKENS,
};

impl Scenario {
    /// Whether the levers switch the scheduled instances on (`docs/levers.md#scheduled-instances`): a batch
    /// policy other than prefill-priority, a token budget (any value, 8192 included), a KV policy
    /// other than oracle, prefix caching, or speculative decoding. Block size, `max_seq_len`,
    /// preemption mode, host link and the speculative parameters alone are inert.
    pub fn levers_on(&self) -> bool {
        self.batch_policy != BatchPolicy::PrefillPriority
            || self.max_num_batched_tokens.is_some()
            || self.kv_policy != KvPolicy::Oracle
            || self.prefix_caching
            || self.speculative.is_some()
    }

    /// Step 7: the scheduling levers (`docs/levers.md#scheduled-instances`-`docs/levers.md#scheduled-instances`): `None` unless they switch
    /// the scheduled instances on ([`Scenario::levers_on`]). The host link must be a catalogue
    /// link whether or not it is used (the reference's CLI choices). With the levers on, in this
    /// order: a model that is not an attention transformer (FFT-mixing), `--fast` in
    /// disaggregated mode, speculative decoding with hand-off compression
    /// (`compressed`: a KV transit stage was resolved), prefix caching with swap preemption, and
    /// the hand-off options this project adds beyond the reference (not modelled with the levers
    /// yet). The ranges of block size, budget, gamma and alpha are checked with every other range
    /// (step 0). The draft of `--speculative` is kept as a name here: the cost side resolves it
    /// (`disagg_model::Draft::new`: unknown draft, vocabulary, capacity) where the engine is built.
    pub(super) fn resolve_levers(
        &self,
        cat: &Catalogue,
        model: &ModelSpec,
        compressed: bool,
    ) -> Result<Option<Levers>, Error> {
        let host_link = cat
            .link(&self.host_link)
            .map_err(|e| rename(e, HOST_LINK_FLAG))?
            .clone();
        self.check_prefix_handoff()?;
        if !self.levers_on() {
            return Ok(None);
        }
        // (A CED model with the levers is refused by `check_ced`, with its own message.)
        if !model.is_attention() {
            return Err(Error::invalid(
                "--model",
                format!(
                    "{}: the scheduling levers (batch policy, token budget, KV policy, prefix \
                     caching, speculative decoding) are modelled for attention models without \
                     CED only",
                    model.key
                ),
            ));
        }
        let disagg = self.mode == Mode::Disagg;
        if disagg && self.fast {
            return Err(Error::invalid(
                "--fast",
                "the plain decode instance's fast path: not with the scheduling levers",
            ));
        }
        if disagg && compressed && self.speculative.is_some() {
            return Err(Error::invalid(
                "--speculative",
                "speculative decoding with KV hand-off compression (--kv-compress) is not modelled",
            ));
        }
        if self.prefix_caching
            && self.kv_policy == KvPolicy::Paged
            && self.preemption == Preemption::Swap
        {
            return Err(Error::invalid(
                "--prefix-caching",
                "prefix caching with swap preemption is not modelled: use --preemption recompute",
            ));
        }
        if disagg {
            let d = HandoffOptions::default();
            for (flag, given, default) in [
                (
                    <LinkSharing as crate::options::Choice>::FLAG,
                    self.link_sharing.as_str(),
                    d.link_sharing.as_str(),
                ),
                (
                    LinkTopology::WHAT,
                    self.link_topology.as_str(),
                    d.link_topology.as_str(),
                ),
            ] {
                if given != default {
                    return Err(Error::invalid(
                        flag,
                        format!(
                            "'{given}' is not modelled with the scheduling levers yet (use \
                             {flag} {default}, or leave the levers at their defaults)"
                        ),
                    ));
                }
            }
        }
        Ok(Some(Levers {
            batch_policy: self.batch_policy,
            token_budget: self.max_num_batched_tokens.unwrap_or(MAX_PREFILL_TOKENS),
            budget_given: self.max_num_batched_tokens.is_some(),
            kv_policy: self.kv_policy,
            kv_block_size: self.kv_block_size,
            max_seq_len: self.max_seq_len,
            kv_watermark: KV_WATERMARK,
            preemption: self.preemption,
            swap_in: self.swap_in,
            host_link,
            prefix_caching: self.prefix_caching,
            speculative: self.speculative.as_ref().map(|draft| Speculative {
                draft: draft.clone(),
                gamma: self.gamma,
                alpha: self.alpha,
                seed: self.spec_seed,
            }),
            prefix_handoff: self.prefix_handoff,
            decode_router: self.decode_router,
        }))
    }

    /// The prefix-aware hand-off's options (beyond the reference) need what they build on:
    /// `--prefix-handoff` needs `--prefix-caching` in disaggregated mode, `--decode-router
    /// prefix` needs `--prefix-handoff`, and `--prefix-eviction` (other than lru) and
    /// `--prefix-from-trace` need `--prefix-caching`.
    pub(super) fn check_prefix_handoff(&self) -> Result<(), Error> {
        if self.prefix_handoff && (!self.prefix_caching || self.mode != Mode::Disagg) {
            return Err(Error::invalid(
                "--prefix-handoff",
                "needs --prefix-caching and --mode disagg (decode instances cache prefixes)",
            ));
        }
        if self.prefix_handoff
            && (self.send != SendMode::Whole || self.reserve_kv_on != ReserveKvOn::Arrival)
        {
            return Err(Error::invalid(
                "--prefix-handoff",
                "not modelled with --send layerwise or --reserve-kv-on transfer (use --send \
                 whole --reserve-kv-on arrival)",
            ));
        }
        if self.decode_router != DecodeRouter::LeastLoaded && !self.prefix_handoff {
            return Err(Error::invalid(
                "--decode-router",
                format!("'{}' needs --prefix-handoff", self.decode_router.as_str()),
            ));
        }
        if self.prefix_eviction != PrefixEviction::Lru && !self.prefix_caching {
            return Err(Error::invalid(
                "--prefix-eviction",
                format!(
                    "'{}' needs --prefix-caching (it orders the prefix cache's evictions)",
                    self.prefix_eviction.as_str()
                ),
            ));
        }
        if self.prefix_from_trace && !self.prefix_caching {
            return Err(Error::invalid(
                "--prefix-from-trace",
                "needs --prefix-caching (the chains feed the prefix cache)",
            ));
        }
        Ok(())
    }
}
