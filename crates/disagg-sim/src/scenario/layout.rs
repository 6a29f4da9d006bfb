//! Build steps of the parallel layouts and number formats (the cost levers).

use disagg_model::{Error, Formats, ModelSpec, Parallel, QuantFormat};

use super::{Mode, Role, Scenario};

impl Scenario {
    /// The weight, KV and compute formats (`docs/cost-model.md#quantisation`).
    pub fn formats(&self) -> Formats {
        Formats {
            weight: self.weight_format,
            kv: self.kv_format,
            compute: self.compute_format,
        }
    }

    /// A layout from degrees `tp` and `pp` with the global `ep`, micro-batches, imbalance and
    /// scale-up link. Python's `or`: an absent or zero degree (or imbalance) is the default;
    /// zero micro-batches are kept (and refused by the check).
    pub(super) fn layout(&self, tp: Option<u32>, pp: Option<u32>) -> Parallel {
        let or1 = |v: Option<u32>| v.filter(|&x| x != 0).unwrap_or(1);
        Parallel {
            tp: or1(tp),
            pp: or1(pp),
            ep: or1(self.ep),
            microbatches: self.microbatches,
            expert_imbalance: self.expert_imbalance.filter(|&x| x != 0.0).unwrap_or(1.0),
            scale_up_link: self.scale_up_link.clone(),
        }
    }

    /// The global layout (`--tp`, `--pp`, `--ep` or `--microbatches` given; `docs/cost-model.md#parallelism`).
    pub(super) fn global_layout(&self) -> Option<Parallel> {
        let any = self.tp.is_some()
            || self.pp.is_some()
            || self.ep.is_some()
            || self.microbatches.is_some();
        any.then(|| self.layout(self.tp, self.pp))
    }

    /// A pool's own layout (`--<pool>-tp` or `--<pool>-pp` given; no inheritance of `--tp`).
    pub(super) fn pool_layout(&self, tp: Option<u32>, pp: Option<u32>) -> Option<Parallel> {
        (tp.is_some() || pp.is_some()).then(|| self.layout(tp, pp))
    }

    /// `parallel_for(role)`: the pool's own layout, else the global one (colocated: global only).
    pub fn layout_for(&self, role: Role) -> Option<Parallel> {
        let own = match role {
            Role::Prefill => self.pool_layout(self.prefill_tp, self.prefill_pp),
            Role::Decode => self.pool_layout(self.decode_tp, self.decode_pp),
            Role::Colocated => None,
        };
        own.or_else(|| self.global_layout())
    }

    /// Whether a pool of the mode has a layout (which [`Parallel::check`]s when it is built).
    pub(super) fn pools_have_layouts(&self) -> bool {
        let roles: &[Role] = match self.mode {
            Mode::Disagg => &[Role::Prefill, Role::Decode],
            Mode::Colocated => &[Role::Colocated],
        };
        roles.iter().any(|&r| self.layout_for(r).is_some())
    }

    /// Whether any layout is set (global or per pool; pool flags count in colocated mode too).
    pub fn any_layout(&self) -> bool {
        self.global_layout().is_some()
            || self.pool_layout(self.prefill_tp, self.prefill_pp).is_some()
            || self.pool_layout(self.decode_tp, self.decode_pp).is_some()
    }

    /// `check_levers_2` (`docs/levers.md#scheduled-instances`), when a format is not BF16, speculative decoding is
    /// on, the model is MoE or a layout is set: items 2 to 6 in order (item 1, the format names,
    /// is the options' parser's; the draft's name and vocabulary are checked where it is built).
    pub(super) fn check_cost_levers(
        &self,
        model: &ModelSpec,
        kv_transit: bool,
    ) -> Result<(), Error> {
        let formats = self.formats();
        let on = formats.is_quantised()
            || self.speculative.is_some()
            || model.moe.is_some()
            || self.any_layout();
        if !on {
            return Ok(());
        }
        formats.check(model)?;
        if self.kv_format != QuantFormat::Bf16 && kv_transit {
            return Err(Error::invalid(
                "--kv-format",
                "KV hand-off compression assumes a BF16 KV cache: not with kv_format != 'bf16'",
            ));
        }
        if self.fast && self.mode == Mode::Disagg {
            return Err(Error::invalid(
                "--fast",
                "fast_forward is the plain decode instance's fast path: not with parallelism, \
                 quantisation, speculative decoding or mixture-of-experts models",
            ));
        }
        if self.speculative.is_some() {
            let layouts = [
                self.global_layout(),
                self.pool_layout(self.prefill_tp, self.prefill_pp),
                self.pool_layout(self.decode_tp, self.decode_pp),
            ];
            if layouts.iter().flatten().any(|l| l.pp > 1) {
                return Err(Error::invalid(
                    "--speculative",
                    "speculative decoding with pipeline parallelism is not modelled",
                ));
            }
        }
        Ok(())
    }
}
