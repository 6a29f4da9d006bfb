//! [`Scenario::build`]: the build steps in order, each in the file of its subject.

use disagg_model::{Catalogue, CostModel, CostOptions, Error};

use super::pools::attach_draft;
use super::{
    rename, Mode, Scenario, SimConfig, HOST_LINK_FLAG, MAX_PREFILL_TOKENS, SCALE_UP_LINK_FLAG,
};

impl Scenario {
    /// Validates everything and resolves names, pools and cost models. Errors are one line naming
    /// the option with its CLI spelling. The steps, in order (the first error wins):
    /// numeric ranges, [model](Scenario::resolve_model), [devices](Scenario::resolve_devices),
    /// [link](Scenario::resolve_link), [instance counts](Scenario::check_instances),
    /// [KV transit](Scenario::kv_transit), [hand-off options](Scenario::resolve_handoff),
    /// [scheduling levers](Scenario::resolve_levers), [pools](Scenario::pools), then the
    /// [workload source](Scenario::source) (which reads any trace file).
    pub fn build(&self, cat: &Catalogue) -> Result<SimConfig, Error> {
        self.check_ranges()?;
        let mode = self.mode;
        let model = self.resolve_model(cat)?;
        let devices = self.resolve_devices(cat)?;
        let link = self.resolve_link(cat)?;
        self.check_instances()?;
        let kv_transit = self.kv_transit(cat, &model)?;
        // The reference's CLI refuses an unknown host link (a choice) before any validation.
        cat.link(&self.host_link)
            .map_err(|e| rename(e, HOST_LINK_FLAG))?;
        // Every name is checked whether or not it is used: a pool's layout checks the scale-up
        // link (in the reference's order and words, step 8); without a layout, here.
        if let Some(k) = self
            .scale_up_link
            .as_ref()
            .filter(|_| !self.pools_have_layouts())
        {
            cat.link(k).map_err(|e| rename(e, SCALE_UP_LINK_FLAG))?;
        }
        self.check_cost_levers(&model, kv_transit.is_some())?;
        let handoff = self.resolve_handoff()?;
        let levers = self.resolve_levers(cat, &model, kv_transit.is_some())?;
        self.check_ced(&model, levers.is_some())?;
        self.check_layer_kinds(&model)?;
        // The analytic bounds keep the model as given (`docs/levers.md#quirks` item 5); everything
        // else sees the quantised copy (`docs/cost-model.md#parallelism` step 2).
        let plain_model = model;
        let model = self.formats().apply(&plain_model);
        let mut pools = self.pools(&model, &devices, cat)?;
        if let Some(spec) = levers.as_ref().and_then(|l| l.speculative.as_ref()) {
            attach_draft(&mut pools, &model, &spec.draft, cat)?;
        }
        let base_cost = CostModel::new(
            &plain_model,
            &devices.all,
            self.devices_per_instance,
            CostOptions {
                power_cap_w: self.power_cap,
                ..CostOptions::default()
            },
        )
        .ok()
        .filter(|c| c.kv_capacity_tokens().is_ok());
        let rank_ports = self.resolve_rank_ports(&model, &link, &pools, cat)?;
        let (source, workload) = self.source(&model)?;
        let (ttft_slo_s, tpot_slo_s) = self.slos();
        Ok(SimConfig {
            mode,
            model,
            link,
            kv_transit,
            pools,
            max_prefill_tokens: MAX_PREFILL_TOKENS,
            max_decode_batch: self.max_decode_batch as usize,
            step_overhead_s: CostOptions::default().step_overhead_s,
            warmup_frac: 0.1,
            sample_dt_s: 0.05,
            ttft_slo_s,
            tpot_slo_s,
            fast_forward: self.fast,
            dvfs: self.dvfs,
            heterogeneous: self.is_heterogeneous(),
            pool_labels: self.pool_labels(&devices),
            power_cap_w: self.power_cap,
            workload,
            source,
            base_cost,
            handoff,
            levers,
            scenario: self.clone(),
            rank_ports,
        })
    }

    /// Step 4: the mode has the instances it needs.
    pub(super) fn check_instances(&self) -> Result<(), Error> {
        match self.mode {
            Mode::Disagg if self.prefill == 0 => Err(Error::invalid(
                "--prefill",
                "disaggregated mode needs at least one prefill instance",
            )),
            Mode::Disagg if self.decode == 0 => Err(Error::invalid(
                "--decode",
                "disaggregated mode needs at least one decode instance",
            )),
            Mode::Colocated if self.prefill + self.decode == 0 => Err(Error::invalid(
                "--prefill",
                "colocated mode needs at least one instance (--prefill + --decode)",
            )),
            _ => Ok(()),
        }
    }
}
