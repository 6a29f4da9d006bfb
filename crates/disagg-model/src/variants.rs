//! Model variants beyond the dense transformer (`docs/cost-model.md#catalogue`): FFT-mixing models (Hyena,
//! hybrid, block-circulant; `docs/levers.md#fft-mixing`) and the causal encoder-decoder (CED; `docs/levers.md#ced`). Mixture of experts is
//! [`crate::Moe`]. Each is an optional part of a [`crate::ModelSpec`]; a model with none of them
//! is the dense transformer of `docs/cost-model.md`, unchanged.

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A choice among fixed names, as every named enum of the workspace declares it
/// ([`named_enum!`](crate::named_enum)): its names, its parser and its name.
pub trait Named: Sized + Copy + 'static {
    /// What the parser's error calls the value (`--mode`, `format`).
    const WHAT: &'static str;
    /// The names an error lists as valid: each variant's canonical name, then its listed aliases.
    const NAMES: &'static [&'static str];
    /// The canonical names, one per variant, in order (what a menu offers).
    const CANONICAL: &'static [&'static str];
    /// The variant named `s` (a canonical name or an alias); the error is the one-line
    /// `unknown <WHAT> '<s>'; valid: <NAMES>`.
    fn parse(s: &str) -> Result<Self, Error>;
    /// The canonical name.
    fn as_str(self) -> &'static str;
}

/// Declares a named choice: an enum whose variants each have a canonical name (what it prints
/// and serialises as), optional listed aliases (`| "alias"`: accepted and listed in errors) and
/// optional quiet aliases (`(also "alias", "another")`: accepted, not listed). It derives `Clone`,
/// `Copy`, `Debug`, `Default` (mark one variant `#[default]`), `PartialEq`, `Eq`, `Hash` and serde
/// by canonical name, and implements [`Named`] (also as inherent `NAMES`, `WHAT`, `parse`,
/// `as_str`, `CANONICAL`), with an inherent `ALL` (every variant, in order).
///
/// ```
/// disagg_model::named_enum! {
///     /// How a thing is done.
///     pub enum Style: "--style" {
///         /// The usual way.
///         #[default]
///         Plain = "plain",
///         /// The other way.
///         Fancy = "fancy" | "posh" (also "fancy-pants"),
///     }
/// }
/// assert_eq!(Style::parse("fancy-pants").unwrap(), Style::Fancy);
/// assert_eq!(Style::Fancy.as_str(), "fancy");
/// assert_eq!(
///     Style::parse("odd").unwrap_err().to_string(),
///     "unknown --style 'odd'; valid: plain, fancy, posh"
/// );
/// ```
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$m:meta])*
        $vis:vis enum $name:ident : $what:literal {
            $(
                $(#[$vm:meta])*
                $v:ident = $s:literal $(| $la:literal)* $((also $($qa:literal),+))?
            ),+ $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(
            Clone, Copy, Debug, Default, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize,
        )]
        $vis enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $v),+
        }

        impl $name {
            /// What the parser's error calls the value.
            pub const WHAT: &'static str = $what;
            /// The names an error lists: each canonical name, then its listed aliases.
            pub const NAMES: [&'static str; [$($s $(, $la)*),+].len()] = [$($s $(, $la)*),+];
            /// The canonical names, one per variant, in order.
            pub const CANONICAL: [&'static str; [$($s),+].len()] = [$($s),+];
            /// Every variant, in order.
            pub const ALL: &'static [Self] = &[$($name::$v),+];

            /// The variant named `s` (a canonical name or an alias).
            pub fn parse(s: &str) -> Result<Self, $crate::Error> {
                match s {
                    $($s $(| $la)* $($(| $qa)+)? => Ok($name::$v),)+
                    other => Err($crate::Error::unknown($what, other, Self::NAMES.iter().copied())),
                }
            }

            /// The canonical name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s),+
                }
            }
        }

        impl $crate::variants::Named for $name {
            const WHAT: &'static str = $what;
            const NAMES: &'static [&'static str] = &$name::NAMES;
            const CANONICAL: &'static [&'static str] = &$name::CANONICAL;
            fn parse(s: &str) -> Result<Self, $crate::Error> {
                $name::parse(s)
            }
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }
    };
}

named_enum! {
    /// The sequence mixer of an FFT-mixing model (`mixer`; `attention` is a model without
    /// [`FftMixing`]).
    pub enum Mixer: "mixer" {
        /// Every layer a Hyena operator.
        #[default]
        Hyena = "hyena",
        /// Layer i is attention iff `i % attn_every == 0`, the others Hyena.
        Hybrid = "hybrid",
    }
}

named_enum! {
    /// How a Hyena model decodes (`decode_style`).
    pub enum DecodeStyle: "decode style" {
        /// Cache the N projection inputs of every token (a KV-like cache).
        #[default]
        Direct = "direct",
        /// A fixed recurrent state per sequence (`distill_state` complex values per channel).
        Distilled = "distilled",
    }
}

named_enum! {
    /// The format the optical engine's output must match (`act_format`).
    pub enum ActFormat: "act_format" {
        /// 11 effective bits.
        #[default]
        Bf16 = "bf16",
        /// 8 effective bits.
        Int8 = "int8",
        /// 7 effective bits.
        Fp8 = "fp8",
    }
}

impl ActFormat {
    /// Effective bits the engine's conversion must deliver (`ENOB_REQUIRED`, `docs/levers.md#fft-mixing`).
    pub fn enob_required(self) -> u32 {
        match self {
            ActFormat::Bf16 => 11,
            ActFormat::Int8 => 8,
            ActFormat::Fp8 => 7,
        }
    }
}

named_enum! {
    /// Where a CED model replays the prompt's last tokens through the decoder (`ced_replay_on`).
    pub enum ReplayOn: "ced_replay_on" {
        /// On the prefill instance, which emits the first token (the ordinary flow).
        #[default]
        Prefill = "prefill",
        /// On the decode instance: the prefill pool runs the encoder only.
        Decode = "decode",
    }
}

/// An FFT-mixing model's extra shape (`docs/cost-model.md#catalogue`, `docs/levers.md#fft-mixing`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FftMixing {
    /// `hyena` or `hybrid`.
    pub mixer: Mixer,
    /// Hybrid: layer i is attention iff `i % attn_every == 0` (4).
    pub attn_every: u64,
    /// Long convolutions per Hyena layer, N (2).
    pub order: u64,
    /// Taps of the short depthwise convolution (3).
    pub short_taps: u64,
    /// Block size k of block-circulant projections and MLP; 0 = dense weights.
    pub circulant_block: u64,
    /// `direct` or `distilled`.
    pub decode_style: DecodeStyle,
    /// Distilled decode: state values per channel (16).
    pub distill_state: u64,
    /// Format the optical engine's output must match (bf16).
    pub act_format: ActFormat,
}

impl FftMixing {
    /// A Hyena-2 (or hybrid) model with the reference's defaults.
    pub fn new(mixer: Mixer) -> Self {
        FftMixing {
            mixer,
            attn_every: 4,
            order: 2,
            short_taps: 3,
            circulant_block: 0,
            decode_style: DecodeStyle::Direct,
            distill_state: 16,
            act_format: ActFormat::Bf16,
        }
    }

    /// Construction checks of `docs/cost-model.md#catalogue` that concern the mixer, in order.
    pub fn validate(&self, key: &str) -> Result<(), Error> {
        let bad = |what: &str, why: &str| Err(Error::invalid(format!("model '{key}' {what}"), why));
        if self.circulant_block > 0 && self.mixer != Mixer::Hyena {
            return bad(
                "circulant_block",
                "block-circulant weights are modelled for mixer='hyena' only",
            );
        }
        if self.decode_style == DecodeStyle::Distilled && self.mixer != Mixer::Hyena {
            return bad(
                "decode_style",
                "distilled decode is modelled for mixer='hyena' only",
            );
        }
        if self.order == 0 || self.order > 64 {
            return bad("hyena_order", "must be between 1 and 64");
        }
        if self.attn_every == 0 {
            return bad("attn_every", "must be at least 1");
        }
        if self.circulant_block > 0 && !self.circulant_block.is_power_of_two() {
            return bad("circulant_block", "must be a power of two (or 0: dense)");
        }
        Ok(())
    }

    /// Whether layer `i` (0-based) is an attention layer.
    pub fn is_attention(&self, i: u64) -> bool {
        self.mixer == Mixer::Hybrid && i.is_multiple_of(self.attn_every)
    }

    /// Attention layers among `n_layers`.
    pub fn n_attn(&self, n_layers: u64) -> u64 {
        match self.mixer {
            Mixer::Hyena => 0,
            Mixer::Hybrid => n_layers.div_ceil(self.attn_every),
        }
    }

    /// The five weight matrices of a Hyena layer as (rows, cols): in-projection, out-projection and
    /// the three MLP matrices.
    pub fn matrices(&self, d: u64, ff: u64) -> [(u64, u64); 5] {
        [((self.order + 1) * d, d), (d, d), (ff, d), (ff, d), (d, ff)]
    }

    /// Parameters of one Hyena layer: `Σ (m*c) // k` over the five matrices (`m*c` when dense).
    pub fn hyena_params_per_layer(&self, d: u64, ff: u64) -> i128 {
        let k = self.circulant_block as i128;
        self.matrices(d, ff)
            .iter()
            .map(|&(m, c)| {
                let mc = m as i128 * c as i128;
                if k > 0 {
                    mc / k
                } else {
                    mc
                }
            })
            .sum()
    }

    /// Cached values per token of the Hyena layers: `n_hy * N * d` (direct), 0 (distilled).
    pub fn conv_values(&self, n_layers: u64, d: u64) -> i128 {
        match self.decode_style {
            DecodeStyle::Direct => {
                (n_layers - self.n_attn(n_layers)) as i128 * self.order as i128 * d as i128
            }
            DecodeStyle::Distilled => 0,
        }
    }

    /// Bytes of a distilled state per sequence: `fl(((n_hy*N)*d)*distill_state) * 4.0`; 0.0 for
    /// direct decode.
    pub fn state_bytes_per_seq(&self, n_layers: u64, d: u64) -> f64 {
        match self.decode_style {
            DecodeStyle::Direct => 0.0,
            DecodeStyle::Distilled => {
                let n_hy = (n_layers - self.n_attn(n_layers)) as i128;
                ((((n_hy * self.order as i128) * d as i128) * self.distill_state as i128) as f64)
                    * 4.0
            }
        }
    }
}

/// A causal encoder-decoder's extra shape (`docs/levers.md#ced`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ced {
    /// Encoder layers E (the bottom E of the model's L).
    pub encoder_layers: u64,
    /// Prompt tokens replayed through the decoder, W (128).
    pub replay: u64,
    /// Where the replay runs.
    pub replay_on: ReplayOn,
}

impl Ced {
    /// E encoder layers, the reference's replay of 128 tokens on the prefill instance.
    pub fn new(encoder_layers: u64) -> Self {
        Ced {
            encoder_layers,
            replay: 128,
            replay_on: ReplayOn::Prefill,
        }
    }

    /// `0 < E < n_layers` and `W >= 1` (`docs/cost-model.md#catalogue`).
    pub fn validate(&self, key: &str, n_layers: u64) -> Result<(), Error> {
        if self.encoder_layers == 0 || self.encoder_layers >= n_layers {
            return Err(Error::invalid(
                format!("model '{key}' ced_encoder_layers"),
                format!(
                    "{} must be between 1 and {} (the model has {n_layers} layers)",
                    self.encoder_layers,
                    n_layers - 1
                ),
            ));
        }
        if self.replay == 0 {
            return Err(Error::invalid(
                format!("model '{key}' ced_replay"),
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

named_enum! {
    /// How the optical engine detects its output (`detection`).
    pub enum Detection: "detection" {
        /// Coherent detection: one pass per conversion.
        #[default]
        Coherent = "coherent",
        /// Intensity detection: twice the passes.
        Intensity = "intensity",
    }
}

/// The optical Fourier-transform engine of the `optical-fft` devices (`TransformEngine`,
/// `docs/levers.md#fft-mixing`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransformEngine {
    /// Converter samples per second (1e12).
    pub samples_per_s: f64,
    /// Effective bits of the converters (8).
    pub enob: u32,
    /// DAC figure of merit, fJ per conversion step (10.0).
    pub fom_dac_fj: f64,
    /// ADC figure of merit, fJ per conversion step (20.0).
    pub fom_adc_fj: f64,
    /// Laser power, W (10.0).
    pub laser_w: f64,
    /// Thermal tuning power, W (10.0).
    pub tuning_w: f64,
    /// Values one Fourier-plane mask holds (2,000,000).
    pub mask_values: u64,
    /// Mask rewrites per second (1031.0).
    pub mask_rate_hz: f64,
    /// `coherent` or `intensity`.
    pub detection: Detection,
    /// Whether optical and GPU work overlap within a step.
    pub overlap: bool,
}

impl Default for TransformEngine {
    fn default() -> Self {
        TransformEngine {
            samples_per_s: 1e12,
            enob: 8,
            fom_dac_fj: 10.0,
            fom_adc_fj: 20.0,
            laser_w: 10.0,
            tuning_w: 10.0,
            mask_values: 2_000_000,
            mask_rate_hz: 1031.0,
            detection: Detection::Coherent,
            overlap: false,
        }
    }
}

impl TransformEngine {
    /// Passes per conversion for output format `fmt`: `4 ** max(0, ENOB_REQUIRED - enob)`, twice
    /// that with intensity detection.
    pub fn passes(&self, fmt: ActFormat) -> u64 {
        let k = 4u64.pow(fmt.enob_required().saturating_sub(self.enob));
        match self.detection {
            Detection::Coherent => k,
            Detection::Intensity => 2 * k,
        }
    }

    /// Energy of one DAC + ADC conversion pair, pJ:
    /// `((fom_dac * fl(2**enob)) * 1e-3) + ((fom_adc * fl(2**enob)) * 1e-3)`.
    pub fn pj_per_pair(&self) -> f64 {
        let levels = (1u64 << self.enob) as f64;
        ((self.fom_dac_fj * levels) * 1e-3) + ((self.fom_adc_fj * levels) * 1e-3)
    }

    /// Static power of one engine: `laser_w + tuning_w`.
    pub fn static_w(&self) -> f64 {
        self.laser_w + self.tuning_w
    }

    /// Field checks: positive rates, 1 to 16 effective bits, at least one mask value.
    pub fn validate(&self, key: &str) -> Result<(), Error> {
        let what = |f: &str| format!("device '{key}' {f}");
        crate::error::positive(&what("samples_per_s"), self.samples_per_s)?;
        crate::error::positive(&what("mask_rate_hz"), self.mask_rate_hz)?;
        crate::error::non_negative(&what("laser_w"), self.laser_w)?;
        crate::error::non_negative(&what("tuning_w"), self.tuning_w)?;
        crate::error::non_negative(&what("fom_dac_fj"), self.fom_dac_fj)?;
        crate::error::non_negative(&what("fom_adc_fj"), self.fom_adc_fj)?;
        if self.enob == 0 || self.enob > 16 {
            return Err(Error::invalid(
                what("enob"),
                format!("{} must be between 1 and 16", self.enob),
            ));
        }
        if self.mask_values == 0 {
            return Err(Error::invalid(what("mask_values"), "must be at least 1"));
        }
        Ok(())
    }
}
