//! The per-instance blocks: each instance's utilisation, roofline use, batch and power, and
//! (devices with an optical engine) its engine's figures (`docs/serving-model.md#metrics`, `docs/cost-model.md#energy`).

use serde::Serialize;

use super::ctx::Ctx;
use crate::scenario::Role;

/// One instance's optical-engine figures (`docs/levers.md#fft-mixing`; every instance when any device
/// has an engine).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpticalSummary {
    /// `prefill-0`, ...
    pub name: String,
    /// Share of busy time in optical-bound steps (0 when idle).
    pub optical_bound_frac: f64,
    /// Transform and Fourier-plane FLOPs the engine took.
    pub optical_flops: f64,
    /// Conversion energy, J.
    pub conversion_j: f64,
    /// Engine static energy, `optical_static_w x H`, J.
    pub static_j: f64,
}

/// One instance's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstanceSummary {
    /// `prefill-0`, ...
    pub name: String,
    /// Role.
    pub role: Role,
    /// Device key.
    pub device: String,
    /// Device display name.
    pub device_name: String,
    /// Devices per instance.
    pub devices: u32,
    /// `busy / horizon`.
    pub utilisation: f64,
    /// Model FLOPs utilisation (un-derated peak).
    pub mfu: f64,
    /// Memory bandwidth utilisation (un-derated peak).
    pub mbu: f64,
    /// Sequences per step.
    pub mean_batch: f64,
    /// Steps run.
    pub steps: u64,
    /// Sum of step times, s.
    pub busy_s: f64,
    /// Share of busy time in compute-bound steps.
    pub compute_bound_frac: f64,
    /// Share of busy time in power-bound steps.
    pub power_bound_frac: f64,
    /// `(idle_w*H + compute_j + memory_j) / H`, W.
    pub avg_w: f64,
    /// Highest single-step power, W.
    pub peak_step_w: f64,
    /// Dynamic compute energy, J.
    pub compute_j: f64,
    /// Dynamic memory energy, J.
    pub memory_j: f64,
    /// KV capacity, tokens.
    pub kv_capacity_tokens: u64,
}

/// Every instance's block, instance order.
pub(super) fn instances(c: &Ctx<'_>) -> Vec<InstanceSummary> {
    let (cfg, h) = (c.cfg, c.h);
    let engines = c.engines();
    let mut instances = Vec::with_capacity(c.res.instances.len());
    for i in &c.res.instances {
        let pool = &cfg.pools[i.pool];
        let idle = pool.cost.idle_w();
        let s_j = idle * h;
        let st = &i.stats;
        let os_j = pool.cost.optical_static_w() * h;
        let n = pool.devices as f64;
        instances.push(InstanceSummary {
            name: i.name.clone(),
            role: i.role,
            device: pool.device.key.clone(),
            device_name: pool.device.name.clone(),
            devices: pool.devices,
            utilisation: st.busy_s / h,
            mfu: st.flops / (h * pool.device.peak_flops * n),
            mbu: st.bytes / (h * pool.device.mem_bw * n),
            mean_batch: if st.steps > 0 {
                st.batch_sum as f64 / st.steps as f64
            } else {
                0.0
            },
            steps: st.steps,
            busy_s: st.busy_s,
            compute_bound_frac: if st.busy_s != 0.0 {
                st.compute_bound_s / st.busy_s
            } else {
                0.0
            },
            power_bound_frac: if st.busy_s != 0.0 {
                st.power_bound_s / st.busy_s
            } else {
                0.0
            },
            avg_w: if engines {
                ((((s_j + st.compute_j) + st.memory_j) + os_j) + st.optical_j) / h
            } else {
                (s_j + st.compute_j + st.memory_j) / h
            },
            peak_step_w: st.peak_power_w,
            compute_j: st.compute_j,
            memory_j: st.memory_j,
            kv_capacity_tokens: pool.kv_capacity_tokens,
        });
    }
    instances
}

/// Each instance's optical engine figures (empty unless a device has an engine).
pub(super) fn optical(c: &Ctx<'_>) -> Vec<OpticalSummary> {
    let mut optical = Vec::new();
    if !c.engines() {
        return optical;
    }
    for i in &c.res.instances {
        let pool = &c.cfg.pools[i.pool];
        let st = &i.stats;
        let os_j = pool.cost.optical_static_w() * c.h;
        optical.push(OpticalSummary {
            name: i.name.clone(),
            optical_bound_frac: if st.busy_s != 0.0 {
                st.optical_bound_s / st.busy_s
            } else {
                0.0
            },
            optical_flops: st.optical_flops,
            conversion_j: st.optical_j,
            static_j: os_j,
        });
    }
    optical
}
