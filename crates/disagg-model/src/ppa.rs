//! `--ppa`: die area, silicon cost and performance per W / mm² / $ (`docs/levers.md#ppa`).
//!
//! Pure functions of plain inputs: the area never feeds back into time or energy. Areas are keyed
//! by the device's display **name** (the reference's `DIE_MM2`); devices not listed have no area
//! and make every total unknown (`null`).

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::catalogue::Device;

/// Die areas by device name, mm² (`DIE_MM2`).
pub const DIE_MM2: [(&str, f64); 4] = [
    ("H100-SXM", 814.0),
    ("A100-SXM", 826.0),
    ("Optical-FFT + H100-class", 814.0),
    ("Optical-FFT + A100-class", 826.0),
];

/// Samples per second of one converter channel, GS/s.
pub const CONVERTER_GSPS: f64 = 50.0;
/// Area of one DAC, mm².
pub const DAC_MM2: f64 = 0.05;
/// Area of one ADC, mm².
pub const ADC_MM2: f64 = 0.10;
/// Area of the photonic die beside an engine's host, mm².
pub const PHOTONIC_MM2: f64 = 100.0;
/// Defect density, per cm².
pub const D0_PER_CM2: f64 = 0.1;
/// Wafer diameter, mm.
pub const WAFER_MM: f64 = 300.0;
/// Cost of one wafer, $.
pub const WAFER_USD: f64 = 10_000.0;
/// Largest die a reticle exposes, mm².
pub const RETICLE_MM2: f64 = 858.0;

/// Gross dies per wafer: `max(0, floor(((pi*r)*r)/A - (pi*300.0)/sqrt(2.0*A)))`, `r = 300.0/2.0`.
pub fn dies_per_wafer(area_mm2: f64) -> i64 {
    let r = WAFER_MM / 2.0;
    let pi = std::f64::consts::PI;
    let x = ((pi * r) * r) / area_mm2 - (pi * WAFER_MM) / (2.0 * area_mm2).sqrt();
    (x.floor() as i64).max(0)
}

/// Murphy's yield model: `x = (A/100.0)*D0`; 1.0 if `x == 0`, else `t*t` with
/// `t = (-expm1(-x))/x` (`expm1` of the C library: Rust's `f64::exp_m1` calls it).
pub fn murphy_yield(area_mm2: f64) -> f64 {
    let x = (area_mm2 / 100.0) * D0_PER_CM2;
    if x == 0.0 {
        return 1.0;
    }
    // `(-expm1(-x))/x` written as `expm1(-x)/(-x)`: negating both operands of a division gives
    // the same double, and with one negation a sign-flip of `t` (which `t*t` hides) cannot be
    // planted.
    let nx = -x;
    let t = nx.exp_m1() / nx;
    t * t
}

/// The silicon cost of one die (`die_cost`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DieCost {
    /// Die area, mm².
    pub area_mm2: f64,
    /// Gross dies per wafer.
    pub dies_per_wafer: i64,
    /// Murphy yield.
    #[serde(rename = "yield")]
    pub yield_frac: f64,
    /// Good dies per wafer: `fl(dpw) * yield`.
    pub good_dies: f64,
    /// `10000.0 / good_dies` ($; infinite when no die is good).
    pub usd_per_good_die: f64,
    /// Whether the die fits the reticle (`A <= 858.0`).
    pub fits_reticle: bool,
}

/// Dies per wafer, yield and dollars per good die of a die of `area_mm2`.
pub fn die_cost(area_mm2: f64) -> DieCost {
    let dpw = dies_per_wafer(area_mm2);
    let y = murphy_yield(area_mm2);
    let good = dpw as f64 * y;
    DieCost {
        area_mm2,
        dies_per_wafer: dpw,
        yield_frac: y,
        good_dies: good,
        usd_per_good_die: if good <= 0.0 {
            f64::INFINITY
        } else {
            WAFER_USD / good
        },
        fits_reticle: area_mm2 <= RETICLE_MM2,
    }
}

/// The area and silicon cost of one device (`device_area`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DeviceArea {
    /// Host die, with the engine's converters, mm².
    pub die_mm2: f64,
    /// Photonic die (0.0 without an engine), mm².
    pub photonic_mm2: f64,
    /// `die_mm2 + photonic_mm2`.
    pub total_mm2: f64,
    /// Dollars per good die, plus a good photonic die with an engine.
    pub usd: f64,
}

/// The area of `dev`: `None` if its name has no `DIE_MM2` entry. An engine adds
/// `ceil(samples_per_s / (50.0*1e9))` converter channels of one DAC and one ADC each to the host
/// die, and a 100 mm² photonic die.
pub fn device_area(dev: &Device) -> Option<DeviceArea> {
    let mut die = DIE_MM2.iter().find(|(n, _)| *n == dev.name)?.1;
    let mut photonic = 0.0;
    if let Some(e) = &dev.engine {
        let ch = (e.samples_per_s / (CONVERTER_GSPS * 1e9)).ceil();
        die += ch * (DAC_MM2 + ADC_MM2);
        photonic = PHOTONIC_MM2;
    }
    let mut usd = die_cost(die).usd_per_good_die;
    if photonic != 0.0 {
        usd += die_cost(photonic).usd_per_good_die;
    }
    Some(DeviceArea {
        die_mm2: die,
        photonic_mm2: photonic,
        total_mm2: die + photonic,
        usd,
    })
}

/// One role of a run as `ppa_report` sees it: its device and how many of it.
#[derive(Clone, Copy, Debug)]
pub struct PpaRole<'a> {
    /// `prefill`, `decode` or `colocated`.
    pub role: &'a str,
    /// The role's device.
    pub device: &'a Device,
    /// Instances of the role.
    pub instances: u64,
    /// Devices per instance.
    pub devices_per_instance: u32,
}

/// One role's line of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolPpa {
    /// Device name.
    pub device: String,
    /// Instances.
    pub instances: u64,
    /// Devices per instance.
    pub devices_per_instance: u32,
    /// `fl(n) * total_mm2` (null if the area is unknown).
    pub mm2_per_instance: Option<f64>,
    /// `fl(n) * usd` (null if the area is unknown).
    pub usd_per_instance: Option<f64>,
}

/// The roles of a report, serialised as a JSON object in role order.
#[derive(Clone, Debug, PartialEq)]
pub struct PpaPools(pub Vec<(String, PoolPpa)>);

impl Serialize for PpaPools {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The summary's `ppa` object, keys in the reference's order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PpaReport {
    /// Per role.
    pub pools: PpaPools,
    /// Silicon area of the whole run, mm² (null if any role's area is unknown).
    pub total_mm2: Option<f64>,
    /// Silicon cost, $ (null likewise).
    pub total_usd: Option<f64>,
    /// The summary's `output_tokens_per_J` (never null).
    #[serde(rename = "perf_per_W")]
    pub perf_per_w: f64,
    /// `output_tok_per_s / total_mm2`.
    pub perf_per_mm2: Option<f64>,
    /// `(1e3 * output_tok_per_s) / total_usd`.
    pub perf_per_kusd: Option<f64>,
}

/// The `ppa` summary block (`ppa_report`) for `roles` (in order: prefill, decode; or colocated)
/// and the run's `output_tokens_per_J` and `output_tok_per_s`. Totals accumulate from 0.0 in
/// role order: `mm2 = mm2 + fl(count*n)*total_mm2`, `usd = usd + fl(count*n)*usd`.
pub fn ppa_report(
    roles: &[PpaRole<'_>],
    output_tokens_per_j: f64,
    output_tok_per_s: f64,
) -> PpaReport {
    let mut pools = Vec::with_capacity(roles.len());
    let mut mm2 = Some(0.0);
    let mut usd = Some(0.0);
    for r in roles {
        let area = device_area(r.device);
        let n = r.devices_per_instance as f64;
        let units = (r.instances as u128 * r.devices_per_instance as u128) as f64;
        match area {
            Some(a) => {
                mm2 = mm2.map(|x| x + units * a.total_mm2);
                usd = usd.map(|x| x + units * a.usd);
            }
            None => {
                mm2 = None;
                usd = None;
            }
        }
        pools.push((
            r.role.to_string(),
            PoolPpa {
                device: r.device.name.clone(),
                instances: r.instances,
                devices_per_instance: r.devices_per_instance,
                mm2_per_instance: area.map(|a| n * a.total_mm2),
                usd_per_instance: area.map(|a| n * a.usd),
            },
        ));
    }
    PpaReport {
        pools: PpaPools(pools),
        total_mm2: mm2,
        total_usd: usd,
        perf_per_w: output_tokens_per_j,
        perf_per_mm2: mm2.map(|m| output_tok_per_s / m),
        perf_per_kusd: usd.map(|u| (1e3 * output_tok_per_s) / u),
    }
}
