//! `--handoff-ranks` in a run for models described by layer kinds (issue 16): each hand-off's
//! stream time is the busiest NIC of the rank-aware plan, whose bytes follow the layer kinds
//! (MLA latents once per decode rank, windows capped, linear states fixed). InfiniBand NDR (the
//! default link): 50 GB/s, 10 µs.
//!
//! DeepSeek-V3: 61 MLA layers * 576 values * 2 B = 70,272 B a token; a 2,048-token prompt is
//! 143,917,056 B logical. Its FP8 weights (~671 GB) need 16 H100s an instance.
//! gpt-oss-120b on TP8: rank i holds KV head i (128 values a token a layer) of 18 sliding
//! (W = 128) and 18 full layers: 18 * 128 * 2 * (min(P, 128) + P) B.

use disagg_model::Catalogue;
use disagg_sim::{simulate_observed, GenRequest, Observer, Scenario, TransferEvent};

const BW: f64 = 5e10;
const LAT: f64 = 1e-5;
const DSV3: f64 = 143_917_056.0;

#[derive(Default)]
struct Xfers(Vec<TransferEvent>);

impl Observer for Xfers {
    fn transfer(&mut self, ev: &TransferEvent) {
        self.0.push(*ev);
    }
}

/// The one transfer of a `prompt`-token request (16 output tokens) under `flags`.
fn one(flags: &[&str], prompt: u64) -> TransferEvent {
    let c = Scenario::from_flags(flags)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap();
    let w = vec![GenRequest {
        rid: 0,
        arrival_s: 0.0,
        prompt_len: prompt as _,
        output_len: 16,
    }];
    let mut o = Xfers::default();
    simulate_observed(&c, &w, &mut o).unwrap();
    assert_eq!(o.0.len(), 1);
    o.0[0]
}

#[test]
fn deepseek_v3_sends_a_latent_per_decode_rank() {
    let base = ["--model", "deepseek-v3", "--devices-per-instance", "16"];
    let with = |extra: &[&str]| {
        let mut f = base.to_vec();
        f.push("--handoff-ranks");
        f.extend_from_slice(extra);
        one(&f, 2048)
    };
    // TP16 -> TP16: decode rank r takes the whole latent from prefill rank r; every NIC carries
    // one copy, 143,917,056 B: no faster than the single transfer.
    let x = with(&[]);
    assert_eq!(x.dur, LAT + DSV3 / BW);
    assert_eq!(x.dur, LAT + 0.00287834112);
    let plain = one(&base, 2048);
    assert_eq!(plain.dur, LAT + DSV3 / BW);
    // The transfer's bytes are the logical hand-off.
    assert_eq!(x.kv_bytes, DSV3);
    // Two NICs an instance: eight ranks, eight copies each, 8 x 143,917,056 = 1,151,336,448 B.
    let x = with(&["--nics-per-instance", "2"]);
    assert_eq!(x.dur, LAT + 1_151_336_448.0 / BW);
    assert_eq!(x.dur, LAT + 0.02302672896);
}

#[test]
fn gpt_oss_ports_follow_the_window_per_prompt_length() {
    let base = ["--model", "gpt-oss-120b", "--devices-per-instance", "8"];
    let mut f = base.to_vec();
    f.push("--handoff-ranks");
    // P = 2048: 18 * 128 * 2 * (128 + 2048) = 10,027,008 B a NIC.
    assert_eq!(one(&f, 2048).dur, LAT + 10_027_008.0 / BW);
    // P = 100: 18 * 128 * 2 * (100 + 100) = 921,600 B a NIC.
    assert_eq!(one(&f, 100).dur, LAT + 921_600.0 / BW);
    // The single transfer of 2,048 tokens: 8 x 10,027,008 = 80,216,064 B.
    assert_eq!(one(&base, 2048).dur, LAT + 80_216_064.0 / BW);
}

#[test]
fn qwen3_next_ports_carry_the_fixed_state() {
    // TP4 -> TP4 (its BF16 weights need four H100s): rank r holds a quarter of the 36 linear
    // layers' state, 36 * 548,864 * 2 / 4 = 9,879,552 B at any length; the full layers' 2 KV
    // heads are replicated on ranks (0, 1) and (2, 3), and ranks 0 and 2 receive them over the
    // link: 12 * 512 * 2 = 12,288 B a token more on their NICs.
    let f = [
        "--model",
        "qwen3-next-80b-a3b",
        "--devices-per-instance",
        "4",
        "--handoff-ranks",
    ];
    assert_eq!(one(&f, 1).dur, LAT + 9_891_840.0 / BW);
    // 9,879,552 + 2048 * 12,288 = 9,879,552 + 25,165,824 = 35,045,376 B.
    assert_eq!(one(&f, 2048).dur, LAT + 35_045_376.0 / BW);
}
