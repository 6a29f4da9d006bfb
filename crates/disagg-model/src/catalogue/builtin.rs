//! The built-in presets: the reference's models, accelerators, links and compression formats,
//! in the reference's order, and the models added since.

use super::compression::KvCompression;
use super::device::Device;
use super::link::Link;
use super::model::{LmHead, ModelSpec, Moe};
use super::{Catalogue, GB, TB};
use crate::variants::{Ced, DecodeStyle, FftMixing, Mixer, TransformEngine};

impl Default for Catalogue {
    fn default() -> Self {
        Self::builtin()
    }
}

/// Where a built-in model's configuration comes from, for the models added with the
/// calibration data (issue 15): the Hugging Face repository and file. `None` for the reference's
/// models (`docs/cost-model.md#catalogue` is their source).
pub fn model_source(key: &str) -> Option<&'static str> {
    match key {
        "llama2-7b" => Some("huggingface.co/meta-llama/Llama-2-7b-hf config.json"),
        "llama2-70b" => Some("huggingface.co/meta-llama/Llama-2-70b-hf config.json"),
        "bloom-176b" => Some(
            "huggingface.co/bigscience/bloom config.json (MLP 2 x 57344 GELU written as d_ff 38229)",
        ),
        other => crate::served::served_source(other),
    }
}

impl ModelSpec {
    #[allow(clippy::too_many_arguments)]
    fn preset(key: &str, name: &str, l: u64, d: u64, h: u64, hkv: u64, ff: u64, v: u64) -> Self {
        ModelSpec {
            key: key.into(),
            name: name.into(),
            n_layers: l,
            d_model: d,
            n_heads: h,
            n_kv_heads: hkv,
            head_dim: None,
            d_ff: ff,
            vocab: v,
            weight_bytes: 2.0,
            kv_bytes: 2.0,
            prefill_lm_head: LmHead::All,
            context_tokens: None,
            moe: None,
            fft: None,
            ced: None,
            arch: None,
        }
    }

    fn with_moe(mut self, moe: Moe) -> Self {
        self.moe = Some(moe);
        self
    }

    fn with_fft(mut self, fft: FftMixing) -> Self {
        self.fft = Some(fft);
        self
    }

    fn with_ced(mut self, e: u64) -> Self {
        self.ced = Some(Ced::new(e));
        self
    }

    /// A copy under a new key and name.
    fn renamed(&self, key: &str, name: &str) -> Self {
        ModelSpec {
            key: key.into(),
            name: name.into(),
            ..self.clone()
        }
    }

    fn with_context(mut self, tokens: u64) -> Self {
        self.context_tokens = Some(tokens);
        self
    }
}

impl Link {
    fn preset(key: &str, name: &str, bw_gb: f64, latency_s: f64, pj: f64) -> Self {
        Link {
            key: key.into(),
            name: name.into(),
            bandwidth_bps: bw_gb * GB,
            latency_s,
            channels: 1,
            pj_per_bit: pj,
        }
    }
}

impl KvCompression {
    fn preset(key: &str, ratio: f64, ops: f64, fft: bool, description: &str) -> Self {
        KvCompression {
            key: key.into(),
            description: description.into(),
            ratio,
            ops_per_value: ops,
            fft,
            scale_bytes_per_vector: 0.0,
        }
    }
}

fn h100_like(key: &str, name: &str, mem_bw: f64, mem_cap: f64) -> Device {
    Device {
        key: key.into(),
        name: name.into(),
        peak_flops: 989.0 * TB,
        mem_bw,
        mem_capacity: mem_cap,
        flops_eff: 0.55,
        bw_eff: 0.80,
        tdp_w: 700.0,
        idle_w: 100.0,
        pj_per_flop: 1.0,
        pj_per_byte: 60.0,
        native_formats: vec![("fp8".into(), 2.0), ("int8".into(), 2.0)],
        scale_up: "nvlink4".into(),
        fft_efficiency: 1.0,
        engine: None,
        step_overhead_s: None,
        per_seq_overhead_s: None,
        calibration: None,
    }
}

fn a100_like(key: &str, name: &str, mem_bw: f64, mem_cap: f64) -> Device {
    Device {
        key: key.into(),
        name: name.into(),
        peak_flops: 312.0 * TB,
        mem_bw,
        mem_capacity: mem_cap,
        flops_eff: 0.55,
        bw_eff: 0.80,
        tdp_w: 400.0,
        idle_w: 60.0,
        pj_per_flop: 1.6,
        pj_per_byte: 70.0,
        native_formats: vec![("int8".into(), 2.0)],
        scale_up: "nvlink3".into(),
        fft_efficiency: 1.0,
        engine: None,
        step_overhead_s: None,
        per_seq_overhead_s: None,
        calibration: None,
    }
}

impl Catalogue {
    /// The reference's presets (`docs/cost-model.md#catalogue`–`docs/cost-model.md#compression`).
    pub fn builtin() -> Self {
        let models = vec![
            // Context lengths: Llama 3.1's 128k for the Llama-3 shapes (3.1 has the same shapes),
            // Mistral-7B v0.2's 32k, Yi-34B's 4k, OPT's 2k.
            ModelSpec::preset("llama3-8b", "Llama-3-8B", 32, 4096, 32, 8, 14336, 128256)
                .with_context(131072),
            ModelSpec::preset("llama3-70b", "Llama-3-70B", 80, 8192, 64, 8, 28672, 128256)
                .with_context(131072),
            ModelSpec::preset("mistral-7b", "Mistral-7B", 32, 4096, 32, 8, 14336, 32000)
                .with_context(32768),
            ModelSpec::preset("yi-34b", "Yi-34B", 60, 7168, 56, 8, 20480, 64000).with_context(4096),
            ModelSpec::preset("opt-13b", "OPT-13B", 40, 5120, 40, 40, 13653, 50272)
                .with_context(2048),
            ModelSpec::preset("llama3.2-1b", "Llama-3.2-1B", 16, 2048, 32, 8, 8192, 128256)
                .with_context(131072),
        ];
        // The reference's other models (`docs/cost-model.md#catalogue`): Mixtral with its experts, and the
        // FFT-mixing and CED variants of the Llama-3 shapes.
        let l8 = models[0].clone();
        let l70 = models[1].clone();
        let hyena = FftMixing::new(Mixer::Hyena);
        let extra = [
            ModelSpec::preset(
                "mixtral-8x7b",
                "Mixtral-8x7B",
                32,
                4096,
                32,
                8,
                14336,
                32000,
            )
            .with_context(32768)
            .with_moe(Moe::mixtral()),
            l8.renamed("llama3-8b-hyena", "Llama-3-8B-shape Hyena-2")
                .with_fft(hyena.clone()),
            l8.renamed(
                "llama3-8b-hyena-dist",
                "Llama-3-8B-shape Hyena-2 (distilled decode)",
            )
            .with_fft(FftMixing {
                decode_style: DecodeStyle::Distilled,
                ..hyena.clone()
            }),
            l8.renamed("llama3-8b-hybrid", "Llama-3-8B-shape hybrid 1:3")
                .with_fft(FftMixing::new(Mixer::Hybrid)),
            l8.renamed(
                "llama3-8b-hyena-circ",
                "Llama-3-8B-shape Hyena-2 + block-circulant 256",
            )
            .with_fft(FftMixing {
                circulant_block: 256,
                ..hyena
            }),
            l8.renamed("llama3-8b-ced", "Llama-3-8B-shape CED 16+16")
                .with_ced(16),
            l70.renamed("llama3-70b-ced", "Llama-3-70B-shape CED 40+40")
                .with_ced(40),
        ];
        let mut models = models;
        models.extend(extra);
        // The models measured in the calibration data (issue 15), fp16 weights and KV, each
        // config from its Hugging Face repository's `config.json` ([`model_source`]):
        // meta-llama/Llama-2-7b-hf (32 layers, hidden 4096, 32 heads, 32 KV heads, FFN 11008,
        // vocab 32000, 4096 positions), meta-llama/Llama-2-70b-hf (80, 8192, 64, 8, 28672, 32000,
        // 4096) and bigscience/bloom (BLOOM-176B: n_layer 70, hidden 14336, n_head 112 (MHA,
        // head dim 128), vocab 250880, trained on 2048-token sequences). BLOOM's MLP is two
        // matrices of 4*d = 57344 with GELU, not three (SwiGLU): in the catalogue's
        // three-matrix convention, as the reference writes OPT-13B's 2 x 20480 as d_ff 13653,
        // it is d_ff = round(2 * 57344 / 3) = round(38229.33) = 38229.
        models.extend([
            ModelSpec::preset("llama2-7b", "Llama-2-7B", 32, 4096, 32, 32, 11008, 32000)
                .with_context(4096),
            ModelSpec::preset("llama2-70b", "Llama-2-70B", 80, 8192, 64, 8, 28672, 32000)
                .with_context(4096),
            ModelSpec::preset(
                "bloom-176b",
                "BLOOM-176B",
                70,
                14336,
                112,
                112,
                38229,
                250880,
            )
            .with_context(2048),
        ]);
        // The models served disaggregated today, layer kind by layer kind (issue 16).
        models.extend(crate::served::served_models());
        let devices = vec![
            h100_like("h100", "H100-SXM", 3.35 * TB, 80.0 * GB),
            a100_like("a100", "A100-SXM", 2.039 * TB, 80.0 * GB),
            a100_like("a100-40g", "A100-SXM-40GB", 1.555 * TB, 40.0 * GB),
            h100_like("h200", "H200-SXM", 4.8 * TB, 141.0 * GB),
            Device {
                key: "b200".into(),
                name: "B200".into(),
                peak_flops: 2250.0 * TB,
                mem_bw: 8.0 * TB,
                mem_capacity: 180.0 * GB,
                flops_eff: 0.55,
                bw_eff: 0.80,
                tdp_w: 1000.0,
                idle_w: 140.0,
                pj_per_flop: 0.6,
                pj_per_byte: 45.0,
                native_formats: vec![("fp8".into(), 2.0), ("fp4".into(), 4.0)],
                scale_up: "nvlink5".into(),
                fft_efficiency: 1.0,
                engine: None,
                step_overhead_s: None,
                per_seq_overhead_s: None,
                calibration: None,
            },
            Device {
                key: "optical".into(),
                name: "Hypothetical-optical-MAC".into(),
                peak_flops: 4000.0 * TB,
                mem_bw: 3.35 * TB,
                mem_capacity: 80.0 * GB,
                flops_eff: 0.4,
                bw_eff: 0.80,
                tdp_w: 700.0,
                idle_w: 180.0,
                pj_per_flop: 0.1,
                pj_per_byte: 60.0,
                native_formats: vec![],
                scale_up: "nvlink4".into(),
                fft_efficiency: 1.0,
                engine: None,
                step_overhead_s: None,
                per_seq_overhead_s: None,
                calibration: None,
            },
            // The host GPU with an optical Fourier-transform engine (`docs/levers.md#fft-mixing`).
            Device {
                engine: Some(TransformEngine::default()),
                ..h100_like(
                    "optical-fft",
                    "Optical-FFT + H100-class",
                    3.35 * TB,
                    80.0 * GB,
                )
            },
            Device {
                engine: Some(TransformEngine::default()),
                ..a100_like(
                    "optical-fft-small",
                    "Optical-FFT + A100-class",
                    2.039 * TB,
                    80.0 * GB,
                )
            },
        ];
        let links = vec![
            Link::preset("nvlink4", "NVLink 4 (one direction)", 450.0, 5e-6, 5.0),
            Link::preset("ib-ndr", "InfiniBand NDR 400G", 50.0, 10e-6, 15.0),
            Link::preset("pcie5", "PCIe Gen5 x16", 64.0, 5e-6, 6.0),
            Link::preset("pcie4", "PCIe Gen4 x16", 32.0, 5e-6, 6.0),
            Link::preset("eth-100g", "100 GbE", 12.5, 20e-6, 15.0),
            Link::preset("eth-25g", "25 GbE", 3.125, 20e-6, 15.0),
            Link::preset(
                "cpo-optical",
                "Co-packaged optics (illustrative)",
                200.0,
                5e-6,
                3.0,
            ),
            Link::preset("nvlink3", "NVLink 3 (one direction)", 300.0, 5e-6, 5.0),
            Link::preset("nvlink5", "NVLink 5 (one direction)", 900.0, 5e-6, 5.0),
        ];
        let compression = vec![
            KvCompression::preset("none", 1.0, 0.0, false, "BF16 as is: 2 bytes per value"),
            KvCompression::preset(
                "fp8",
                2.0,
                1.0,
                false,
                "FP8 values: 1 byte per value (ratio 2), 1 op per value",
            ),
            KvCompression::preset(
                "fp4-block",
                64.0 / 17.0,
                2.0,
                false,
                "4-bit E2M1 values with one 8-bit scale per 32-value block: 4.25 bits per value \
                 (ratio 64/17 = 3.76), 2 ops per value",
            ),
            KvCompression::preset(
                "freq-keep-k",
                2.0,
                1.0,
                true,
                "frequency domain: real FFT along tokens, keep half the coefficients (ratio 2; \
                 --kv-keep sets the kept fraction), 1 op per value plus the FFTs on a GPU",
            ),
            KvCompression {
                scale_bytes_per_vector: 2.0,
                ..KvCompression::preset(
                    "int8",
                    2.0,
                    2.0,
                    false,
                    "INT8 values with one FP16 scale per token per layer for K and for V: \
                     W + 2 bytes for W = kv_heads x head_dim values (ratio 2W/(W+2), 1.996 for \
                     Llama-3-8B), 2 ops per value (abs-max, scale and round)",
                )
            },
            KvCompression::preset(
                "fp4-g16",
                16.0 / 5.0,
                2.0,
                false,
                "4-bit values with one FP16 scale per 16 values (the chapter's wording): \
                 4 + 16/16 = 5 bits per value (ratio 16/5 = 3.2), 2 ops per value",
            ),
            KvCompression::preset(
                "kivi2",
                16.0 / 3.0,
                4.0,
                false,
                "KIVI-style 2-bit: keys quantised per channel, values per token, groups of 32 \
                 with an FP16 scale and an FP16 zero point: 2 + 32/32 = 3 bits per value \
                 (ratio 16/3 = 5.33; KIVI's full-precision residual window is not modelled), \
                 4 ops per value (min, max, scale, round)",
            ),
        ];
        Catalogue {
            models,
            devices,
            links,
            compression,
        }
    }
}
