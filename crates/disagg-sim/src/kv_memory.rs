//! KV memory of a scheduled instance in units (`docs/exactness.md#operation-order`, `docs/levers.md#kv-reservation`–`docs/levers.md#kv-reservation`): the
//! reservation policies and their integer arithmetic.
//!
//! Issue 12 groundwork: the policies and the per-instance constants, pinned by the spec's values.
//! The instances that use them (admission, growth, preemption) come with the scheduling levers.

disagg_model::named_enum! {
    /// How a scheduled instance reserves KV memory (`--kv-policy`). Serde names are the CLI names.
    pub enum KvPolicy: "--kv-policy" {
        /// The whole `prompt + output`, known in advance (the reference's default).
        #[default]
        Oracle = "oracle",
        /// The prompt plus the output rounded up to a power of two.
        Pow2 = "pow2",
        /// At least `max_seq_len` tokens.
        Max = "max",
        /// Blocks of `kv_block_size` tokens, allocated as the sequence grows, with preemption.
        Paged = "paged",
    }
}

/// `pow2(o) = 1 << bit_length(o - 1)`, for an output length `o >= 1` (`pow2(1) = 1`).
pub fn pow2(o: u64) -> u64 {
    debug_assert!(o >= 1, "pow2 of an output length of 0");
    1 << (u64::BITS - (o - 1).leading_zeros())
}

/// The KV constants of one scheduled instance: tokens per unit, capacity and watermark in units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KvUnits {
    /// The policy.
    pub policy: KvPolicy,
    /// Tokens per unit `blk`: the block size if paged, else 1.
    pub block_tokens: u64,
    /// Capacity `U`: the cost model's token capacity `div blk`.
    pub capacity: u64,
    /// Watermark `WM`: `trunc(kv_watermark * U)` if paged (and not a prefill instance), else 0.
    pub watermark: u64,
    /// The `max` policy's floor, tokens.
    pub max_seq_len: u64,
    /// A model with windowed layers or a linear state (issue 16): a sequence of `n` tokens
    /// reserves `reserve.units(n)` cache units, not `n`. `None` for every other model.
    pub reserve: Option<disagg_model::KvReserve>,
}

impl KvUnits {
    /// The constants of an instance holding `capacity_tokens` of KV (`docs/levers.md#kv-reservation`). `prefill`: a
    /// disaggregated prefill instance, which keeps no watermark.
    pub fn new(
        policy: KvPolicy,
        capacity_tokens: u64,
        block_size: u64,
        watermark_frac: f64,
        max_seq_len: u64,
        prefill: bool,
    ) -> Self {
        let paged = policy == KvPolicy::Paged;
        let block_tokens = if paged { block_size } else { 1 };
        let capacity = capacity_tokens / block_tokens;
        let watermark = if paged && !prefill {
            // The double product, truncated toward zero (`docs/exactness.md#operation-order`).
            (watermark_frac * capacity as f64).trunc() as u64
        } else {
            0
        };
        KvUnits {
            policy,
            block_tokens,
            capacity,
            watermark,
            max_seq_len,
            reserve: None,
        }
    }

    /// These constants for a model whose sequences reserve `reserve.units(n)` units.
    pub fn with_reserve(mut self, reserve: Option<disagg_model::KvReserve>) -> Self {
        self.reserve = reserve;
        self
    }

    /// The cache units (before blocks) of a sequence of `tokens` tokens.
    #[inline]
    fn tok(&self, tokens: u64) -> u64 {
        match &self.reserve {
            None => tokens,
            Some(r) => r.units(tokens),
        }
    }

    /// `units(t) = ceil(t / blk)`.
    pub fn units(&self, tokens: u64) -> u64 {
        self.tok(tokens).div_ceil(self.block_tokens)
    }

    /// `full_need(r)`, checked once at arrival: what the whole sequence of `prompt` + `output`
    /// tokens would need on a colocated or decode instance (`docs/levers.md#kv-reservation`).
    pub fn full_need(&self, prompt: u64, output: u64) -> u64 {
        match self.policy {
            KvPolicy::Oracle => self.tok(prompt + output),
            KvPolicy::Pow2 => self.tok(prompt + pow2(output)),
            KvPolicy::Max => self.tok(self.max_seq_len.max(prompt + output)),
            KvPolicy::Paged => self.units(prompt + output) + self.watermark,
        }
    }

    /// `admit_need(r, h)`: what an admission allocates privately when `hit` prompt tokens are
    /// covered by prefix hits; `target` is the (re)prefill target (the prompt, or more after a
    /// recompute preemption; only paged preempts).
    pub fn admit_need(&self, prompt: u64, output: u64, target: u64, hit: u64) -> u64 {
        match self.policy {
            // A model with a reservation rule has no prefix cache (`hit` is 0).
            KvPolicy::Oracle => self.tok(prompt - hit + output),
            KvPolicy::Pow2 => self.tok(prompt - hit + pow2(output)),
            KvPolicy::Max => self.tok(self.max_seq_len.max(prompt + output) - hit),
            KvPolicy::Paged => self.units(target - hit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_of_the_spec() {
        // `docs/exactness.md#operation-order`: pow2(1) = 1, pow2(200) = 256, pow2(256) = 256, pow2(257) = 512.
        assert_eq!([pow2(1), pow2(2), pow2(3), pow2(5)], [1, 2, 4, 8]);
        assert_eq!([pow2(200), pow2(256), pow2(257)], [256, 256, 512]);
        assert_eq!(pow2(1 << 40), 1 << 40);
        assert_eq!(pow2((1 << 40) + 1), 1 << 41);
    }

    #[test]
    fn names_round_trip() {
        for (i, n) in KvPolicy::NAMES.iter().enumerate() {
            let p = KvPolicy::parse(n).unwrap();
            assert_eq!(p.as_str(), *n);
            assert_eq!(p as usize, i);
        }
        let e = KvPolicy::parse("lru").unwrap_err().to_string();
        assert!(
            e.contains("--kv-policy") && e.contains("oracle, pow2, max, paged"),
            "{e}"
        );
        assert_eq!(KvPolicy::default(), KvPolicy::Oracle);
    }

    #[test]
    fn capacities_and_watermarks_of_the_golden_runs() {
        // `docs/levers.md#kv-reservation`: OPT-13B on 1xA100-40GB holds 11,969 tokens: blocks of 16 give U 748, WM 7; 32:
        // 374 / 3; 4: 2,992 / 29; 1: 11,969 / 119; 1,024: 11 / 0. Llama-3-8B on 1xH100, 426,788
        // tokens in blocks of 16: 26,674 / 266. OPT-13B + MTP, 10,927 tokens: 682 / 6.
        let cases = [
            (11_969, 16, 748, 7),
            (11_969, 32, 374, 3),
            (11_969, 4, 2_992, 29),
            (11_969, 1, 11_969, 119),
            (11_969, 1_024, 11, 0),
            (426_788, 16, 26_674, 266),
            (10_927, 16, 682, 6),
        ];
        for (tokens, blk, u, wm) in cases {
            let k = KvUnits::new(KvPolicy::Paged, tokens, blk, 0.01, 2048, false);
            assert_eq!(
                (k.block_tokens, k.capacity, k.watermark),
                (blk, u, wm),
                "{tokens}/{blk}"
            );
            // A prefill instance keeps no watermark.
            let p = KvUnits::new(KvPolicy::Paged, tokens, blk, 0.01, 2048, true);
            assert_eq!((p.capacity, p.watermark), (u, 0));
        }
        // Other policies count tokens, with no watermark, whatever the block size.
        let o = KvUnits::new(KvPolicy::Oracle, 11_969, 16, 0.01, 2048, false);
        assert_eq!((o.block_tokens, o.capacity, o.watermark), (1, 11_969, 0));
    }

    #[test]
    fn needs_of_each_policy() {
        // P = 1000, O = 200, h = 300 (`docs/levers.md#kv-reservation`'s table, by hand).
        let k = |p| KvUnits::new(p, 100_000, 16, 0.01, 2048, false);
        let o = k(KvPolicy::Oracle);
        assert_eq!(
            (o.full_need(1000, 200), o.admit_need(1000, 200, 1000, 300)),
            (1200, 900)
        );
        let p2 = k(KvPolicy::Pow2);
        assert_eq!(
            (p2.full_need(1000, 200), p2.admit_need(1000, 200, 1000, 300)),
            (1256, 956)
        );
        let m = k(KvPolicy::Max);
        assert_eq!(
            (m.full_need(1000, 200), m.admit_need(1000, 200, 1000, 300)),
            (2048, 1748)
        );
        assert_eq!(m.full_need(3000, 200), 3200);
        assert_eq!(m.admit_need(3000, 200, 3000, 300), 2900);
        // Paged, blocks of 16, U = 6250, WM = 62: units(1200) = 75, + 62; admission computes
        // target - h = 700 tokens: units(700) = 44 (43.75 rounded up).
        let pg = k(KvPolicy::Paged);
        assert_eq!((pg.capacity, pg.watermark), (6_250, 62));
        assert_eq!(pg.full_need(1000, 200), 75 + 62);
        assert_eq!(pg.admit_need(1000, 200, 1000, 300), 44);
        // After a recompute preemption with 50 tokens out, the target is P + n = 1050.
        assert_eq!(pg.admit_need(1000, 200, 1050, 0), 66);
        assert_eq!(
            [pg.units(0), pg.units(1), pg.units(16), pg.units(17)],
            [0, 1, 1, 2]
        );
    }

    #[test]
    fn a_layer_kind_model_reserves_its_units() {
        // Gemma 3: a unit is a token of its 10 full layers (81,920 B); a sequence of n tokens
        // reserves n + ceil(min(n, 1,024) x 425,984 / 81,920) units (its 52 sliding layers).
        let cat = disagg_model::Catalogue::builtin();
        let r = cat.model("gemma3-27b").unwrap().kv_reserve();
        assert!(r.is_some());
        let units = |n: u64| n + (n.min(1024) as f64 * 425_984.0 / 81_920.0).ceil() as u64;
        let k = |p| KvUnits::new(p, 100_000, 16, 0.01, 2048, false).with_reserve(r);
        let o = k(KvPolicy::Oracle);
        assert_eq!(o.full_need(1000, 200), units(1200));
        assert_eq!(o.admit_need(1000, 200, 1000, 0), units(1200));
        let p2 = k(KvPolicy::Pow2);
        assert_eq!(p2.full_need(1000, 200), units(1256));
        assert_eq!(p2.admit_need(1000, 200, 1000, 0), units(1256));
        let m = k(KvPolicy::Max);
        assert_eq!(m.full_need(1000, 200), units(2048));
        assert_eq!(m.admit_need(1000, 200, 1000, 0), units(2048));
        // Paged: the units in blocks of 16, plus the watermark.
        let pg = k(KvPolicy::Paged);
        assert_eq!(pg.units(1200), units(1200).div_ceil(16));
        assert_eq!(pg.full_need(1000, 200), units(1200).div_ceil(16) + 62);
        assert_eq!(pg.admit_need(1000, 200, 1000, 0), units(1000).div_ceil(16));
        assert_eq!(pg.units(0), 0);
        // Without a reservation rule, tokens as before.
        assert_eq!(
            k(KvPolicy::Oracle).with_reserve(None).full_need(1000, 200),
            1200
        );
    }
}
