//! Build steps of the pools: their devices (with custom overrides), counts, power caps, cost
//! models and speculative drafts.

use disagg_model::custom::{CustomDevice, Overlay};
use disagg_model::{Catalogue, CostModel, CostOptions, Device, Error, ModelSpec};

use super::{rename, Mode, Pool, Role, Scenario, POWER_CAP_FLAG};

/// The devices of a scenario's pools, resolved.
pub(super) struct PoolDevices {
    /// `device`: every pool's, unless overridden.
    pub(super) all: Device,
    /// `prefill_device`, if given.
    pub(super) prefill: Option<Device>,
    /// `decode_device`, if given.
    pub(super) decode: Option<Device>,
}

impl PoolDevices {
    fn prefill(&self) -> &Device {
        self.prefill.as_ref().unwrap_or(&self.all)
    }
    fn decode(&self) -> &Device {
        self.decode.as_ref().unwrap_or(&self.all)
    }
}

/// Speculative decoding: each pool's draft (`docs/levers.md#speculative`) — its cost model on the
/// pool's devices, its KV bytes per token — and the pool's KV capacity with the draft resident.
/// Errors name the draft (unknown, another vocabulary) or the pool it does not fit.
pub(super) fn attach_draft(
    pools: &mut [Pool],
    model: &ModelSpec,
    draft: &str,
    cat: &Catalogue,
) -> Result<(), Error> {
    let d = disagg_model::Draft::new(model, draft, cat)?;
    for pool in pools.iter_mut() {
        let cm = d.cost_model(&pool.device, pool.devices, &pool.cost.opts)?;
        let cap = pool.cost.kv_capacity_tokens_with_draft(&d).map_err(|e| {
            Error::invalid("--speculative", format!("{} pool: {e}", pool.role.as_str()))
        })?;
        pool.kv_capacity_tokens = cap;
        pool.draft = Some((cm, d.kv_bytes_per_token()));
    }
    Ok(())
}

impl Scenario {
    /// Step 2: the devices of every pool, each with the `device_*` overrides applied (errors
    /// name the flag that chose the device).
    pub(super) fn resolve_devices(&self, cat: &Catalogue) -> Result<PoolDevices, Error> {
        let one = |key: &str, flag: &'static str| {
            self.custom_device(key)
                .overlay(cat)
                .map(|d| self.engine_overrides(d))
                .map_err(|e| rename(e, flag))
        };
        let all = one(&self.device, "--device")?;
        let prefill = match &self.prefill_device {
            Some(k) => Some(one(k, "--prefill-device")?),
            None => None,
        };
        let decode = match &self.decode_device {
            Some(k) => Some(one(k, "--decode-device")?),
            None => None,
        };
        Ok(PoolDevices {
            all,
            prefill,
            decode,
        })
    }

    /// `--fft-efficiency` and the `--ft-*` engine overrides applied to a device given on the
    /// command line (`docs/levers.md#fft-mixing`); the `--ft-*` ones only to a device with an
    /// engine.
    pub(super) fn engine_overrides(&self, mut d: Device) -> Device {
        if let Some(x) = self.fft_efficiency {
            d.fft_efficiency = x;
        }
        if let Some(e) = d.engine.as_mut() {
            if let Some(x) = self.ft_samples_per_s {
                e.samples_per_s = x;
            }
            if let Some(x) = self.ft_enob {
                e.enob = x;
            }
            if let Some(w) = self.ft_static_w {
                e.laser_w = w / 2.0;
                e.tuning_w = w / 2.0;
            }
            if let Some(x) = self.ft_mask_rate {
                e.mask_rate_hz = x;
            }
            if let Some(x) = self.ft_detection {
                e.detection = x;
            }
            if self.ft_overlap {
                e.overlap = true;
            }
        }
        d
    }

    /// The custom device the scenario's `device_*` keys describe on top of device `key` (every
    /// pool's device gets the same overrides).
    pub fn custom_device(&self, key: &str) -> CustomDevice {
        CustomDevice {
            base: Some(key.to_string()),
            peak_tflops: self.device_peak_tflops,
            mem_bw_tb_s: self.device_mem_bw_tb_s,
            mem_gb: self.device_mem_gb,
            tdp_w: self.device_tdp_w,
            idle_w: self.device_idle_w,
            ..Default::default()
        }
    }

    /// Step 8: the pools with their cost models and KV capacities: `[prefill, decode]` (each
    /// with its own device, device count and power cap where given) or `[colocated]`.
    pub(super) fn pools(
        &self,
        model: &ModelSpec,
        devices: &PoolDevices,
        cat: &Catalogue,
    ) -> Result<Vec<Pool>, Error> {
        let pool = |role, instances: u32, dev: &Device, n, cap, cap_flag| {
            let n = match self.layout_for(role).filter(|_| self.devices_from_layout) {
                Some(l) => l.tp.saturating_mul(l.pp),
                None => n,
            };
            self.pool(model, role, instances as usize, dev, n, cap, cap_flag, cat)
        };
        Ok(match self.mode {
            Mode::Disagg => {
                let cap = |own: Option<f64>, flag| match own {
                    Some(c) => (Some(c), flag),
                    None => (self.power_cap, POWER_CAP_FLAG),
                };
                let (pcap, pflag) = cap(self.prefill_power_cap, "--prefill-power-cap");
                let (dcap, dflag) = cap(self.decode_power_cap, "--decode-power-cap");
                let p = pool(
                    Role::Prefill,
                    self.prefill,
                    devices.prefill(),
                    self.prefill_devices(),
                    pcap,
                    pflag,
                )?;
                let d = pool(
                    Role::Decode,
                    self.decode,
                    devices.decode(),
                    self.decode_devices(),
                    dcap,
                    dflag,
                )?;
                vec![p, d]
            }
            Mode::Colocated => vec![pool(
                Role::Colocated,
                self.prefill + self.decode,
                &devices.all,
                self.devices_per_instance,
                self.power_cap,
                POWER_CAP_FLAG,
            )?],
        })
    }

    /// One pool: `instances` x `n` devices `dev` under `cap` (errors about the cap name
    /// `cap_flag`; a model that leaves no room for KV cache names `--model`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pool(
        &self,
        model: &ModelSpec,
        role: Role,
        instances: usize,
        dev: &Device,
        n: u32,
        cap: Option<f64>,
        cap_flag: &'static str,
        cat: &Catalogue,
    ) -> Result<Pool, Error> {
        let formats = self.formats();
        let opts = CostOptions {
            power_cap_w: cap,
            dvfs: self.dvfs,
            compute_speedup: formats.compute_speedup(dev, role.as_str())?,
            prefill_only: role == Role::Prefill,
            ..CostOptions::default()
        };
        let mut cost = CostModel::new(model, dev, n, opts).map_err(|e| match e {
            Error::Invalid { what, why } if what.contains("power cap") => Error::Invalid {
                what: cap_flag.to_string(),
                why,
            },
            other => other,
        })?;
        if let Some(layout) = self.layout_for(role) {
            layout.check(model, n, role.as_str(), cat)?;
            cost = cost.with_layout(layout, cat)?;
        }
        let kv = cost.kv_capacity_tokens().map_err(|e| match e {
            Error::Invalid { why, .. } => Error::Invalid {
                what: "--model".into(),
                why: format!("{why} ({} pool)", role.as_str()),
            },
            other => other,
        })?;
        if kv == 0 {
            return Err(Error::invalid(
                "--model",
                format!(
                    "{} leaves no room for KV cache on {n}x {} ({} pool)",
                    model.name,
                    dev.name,
                    role.as_str()
                ),
            ));
        }
        Ok(Pool {
            role,
            instances,
            device: dev.clone(),
            devices: n,
            power_cap_w: cap,
            cost,
            kv_capacity_tokens: kv,
            draft: None,
        })
    }

    /// Devices per prefill instance.
    pub(super) fn prefill_devices(&self) -> u32 {
        self.prefill_devices_per_instance
            .unwrap_or(self.devices_per_instance)
    }

    /// Devices per decode instance.
    pub(super) fn decode_devices(&self) -> u32 {
        self.decode_devices_per_instance
            .unwrap_or(self.devices_per_instance)
    }

    /// Whether a per-pool device or device count was given.
    pub(super) fn is_heterogeneous(&self) -> bool {
        self.prefill_device.is_some()
            || self.decode_device.is_some()
            || self.prefill_devices_per_instance.is_some()
            || self.decode_devices_per_instance.is_some()
    }

    /// `"<n>x <device name>"` of the prefill and decode pools as configured.
    pub(super) fn pool_labels(&self, devices: &PoolDevices) -> [String; 2] {
        [
            format!("{}x {}", self.prefill_devices(), devices.prefill().name),
            format!("{}x {}", self.decode_devices(), devices.decode().name),
        ]
    }
}
