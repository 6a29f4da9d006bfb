//! What to simulate: [`Scenario`] (the reference CLI's flags as a serde struct) and its validated,
//! resolved form [`SimConfig`] (`docs/serving-model.md#outputs`, `docs/cost-model.md#pools`).
//!
//! The rooms: [`spec`] (the struct and its defaults), [`choices`] (its named choices), [`echo`]
//! (flags in, the echo out, the range checks), [`source`] (where the requests come from),
//! [`config`] (the resolved [`SimConfig`]), and the build steps: [`build`] (the order), [`model`],
//! [`pools`], [`handoff`], [`layout`], [`levers`].

use disagg_model::Error;

pub mod build;
pub mod choices;
pub mod config;
pub mod echo;
pub mod handoff;
pub mod layout;
pub mod levers;
pub mod model;
pub mod pools;
pub mod source;
pub mod spec;

pub use crate::workload::WorkloadSpec;
pub use choices::{FirstToken, HandoffOptions, LinkSharing, LinkTopology, Mode, ReserveKvOn, Role};
pub use config::{Pool, SimConfig};
pub use echo::quiet_defaults;
pub use spec::Scenario;

/// Largest number of requests a generated workload may have.
pub const MAX_REQUESTS: u64 = 50_000_000;
/// Largest number of instances in one pool.
pub const MAX_INSTANCES: u32 = 1024;
/// Largest number of link channels.
pub const MAX_CHANNELS: u32 = 4096;
/// Largest number of devices per instance.
pub const MAX_DEVICES: u32 = 1024;
/// TTFT SLO when neither `--ttft-slo` nor a named workload gives one, s.
pub const DEFAULT_TTFT_SLO_S: f64 = 1.0;
/// TPOT SLO when neither `--tpot-slo` nor a named workload gives one, s per token.
pub const DEFAULT_TPOT_SLO_S: f64 = 0.025;
/// Most sequences in a decode batch unless `--max-decode-batch` says otherwise (the reference's
/// `SimConfig.max_decode_batch`).
pub const DEFAULT_MAX_DECODE_BATCH: u32 = 256;
/// Largest number of KV links (`--link-topology per-pair`: prefill x decode instances).
pub const MAX_LINKS: u32 = 65_536;

pub(crate) fn rename(e: Error, flag: &'static str) -> Error {
    match e {
        Error::UnknownName { name, valid, .. } => Error::UnknownName {
            kind: flag,
            name,
            valid,
        },
        Error::Invalid { why, .. } => Error::Invalid {
            what: flag.to_string(),
            why,
        },
        Error::Cancelled => Error::Cancelled,
    }
}

/// `--host-link`, as an unknown link's error names it.
pub(crate) const HOST_LINK_FLAG: &str = "--host-link";
/// `--scale-up-link`, as an unknown link's error names it.
pub(crate) const SCALE_UP_LINK_FLAG: &str = "--scale-up-link";
/// Token budget of one prefill step, and of a scheduled step without `--max-num-batched-tokens`.
pub const MAX_PREFILL_TOKENS: u64 = 8192;
/// Fraction of a paged instance's blocks kept free when admitting (not a flag in the reference).
pub const KV_WATERMARK: f64 = 0.01;
/// `--send`, as colocated-mode errors name it.
pub(crate) const SEND_FLAG: &str = "--send";
/// The global power cap's flag.
pub(crate) const POWER_CAP_FLAG: &str = "--power-cap";

#[cfg(test)]
mod tests {
    use super::*;
    use disagg_model::Catalogue;

    /// Every name is checked whether or not it is used: an unknown scale-up link is an error
    /// without a layout too (only a pool's layout checked it), naming the flag and the valid
    /// links; with a layout, the layout's check words it as the reference does.
    #[test]
    fn an_unknown_scale_up_link_is_refused_with_or_without_a_layout() {
        let cat = Catalogue::builtin();
        for bad in ["bogus", "", "../../etc/passwd"] {
            for mode in [Mode::Disagg, Mode::Colocated] {
                let s = Scenario {
                    scale_up_link: Some(bad.into()),
                    mode,
                    ..Scenario::default()
                };
                let e = s.build(&cat).unwrap_err().to_string();
                assert!(
                    e.starts_with(&format!("unknown --scale-up-link '{bad}'; valid: "))
                        && e.contains("nvlink4"),
                    "{bad:?} {mode:?}: {e}"
                );
            }
            // Colocated mode has no pool of its own layout: a prefill layout checks nothing.
            let s = Scenario {
                scale_up_link: Some(bad.into()),
                mode: Mode::Colocated,
                prefill_tp: Some(2),
                ..Scenario::default()
            };
            let e = s.build(&cat).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
            for tp in [1, 2] {
                let s = Scenario {
                    scale_up_link: Some(bad.into()),
                    tp: Some(tp),
                    devices_per_instance: tp,
                    ..Scenario::default()
                };
                let e = s.build(&cat).unwrap_err().to_string();
                assert_eq!(e, format!("prefill pool: unknown scale-up link '{bad}'"));
            }
        }
        let s = Scenario {
            scale_up_link: Some("nvlink5".into()),
            requests: 5,
            ..Scenario::default()
        };
        assert!(s.build(&cat).is_ok());
    }
}
