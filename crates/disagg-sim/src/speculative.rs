//! Speculative decoding's acceptance draws (`docs/levers.md#speculative`) and the closed form of the
//! tokens per verify pass (`docs/levers.md#lever-metrics`): the reference's mulberry32 generator, bit for bit.

use disagg_model::pymath::ipow;

/// The initial generator state of request `rid`: `(seed + rid * 2654435761) mod 2^32`, exact
/// integer arithmetic for any `seed` and `rid`.
pub fn seed_state(seed: u64, rid: u64) -> u32 {
    // seed + rid * 2654435761 < 2^64 + 2^96: no overflow in u128; `as u32` keeps the low 32
    // bits, which is the value mod 2^32.
    (seed as u128 + rid as u128 * 2_654_435_761) as u32
}

/// One mulberry32 step on the state `a` (all operations mod 2^32): the new state and the draw
/// `u` in `[0, 1)`.
pub fn mulberry32(a: u32) -> (u32, f64) {
    let a = a.wrapping_add(0x6D2B_79F5);
    let mut t = (a ^ (a >> 15)).wrapping_mul(1 | a);
    t = t.wrapping_add((t ^ (t >> 7)).wrapping_mul(61 | t)) ^ t;
    let u = (t ^ (t >> 14)) as f64 / 4_294_967_296.0;
    (a, u)
}

/// The drafted tokens accepted in one verify pass: draw until a draw is at least `alpha` or
/// `gamma` tokens are accepted. Returns the new state and `k` (it consumes `k + 1` draws, or
/// `gamma` when all are accepted).
pub fn draw_accepted(mut a: u32, alpha: f64, gamma: u32) -> (u32, u32) {
    let mut k = 0;
    while k < gamma {
        let (next, u) = mulberry32(a);
        a = next;
        if u >= alpha {
            break;
        }
        k += 1;
    }
    (a, k)
}

/// Expected tokens per verify pass (`docs/levers.md#lever-metrics`): `gamma + 1` if `alpha >= 1`, else
/// `(1 - alpha^(gamma+1)) / (1 - alpha)` with the power by binary exponentiation.
pub fn expected_tokens(alpha: f64, gamma: u32) -> f64 {
    if alpha >= 1.0 {
        (gamma as u64 + 1) as f64
    } else {
        (1.0 - ipow(alpha, gamma as u64 + 1)) / (1.0 - alpha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_states() {
        // `docs/levers.md#speculative`'s vectors.
        assert_eq!(seed_state(0, 0), 0);
        assert_eq!(seed_state(7, 3), 3_668_339_994);
        assert_eq!(seed_state(123_456, 799), 3_475_419_567);
        assert_eq!(seed_state(0, 5), 387_276_917);
        // By hand: 7 + 3 * 2,654,435,761 = 7,963,307,290; minus 2^32 = 3,668,339,994.
        assert_eq!(7u64 + 3 * 2_654_435_761 - (1 << 32), 3_668_339_994);
        // Large operands, exact mod 2^32: 2^32 + 2,654,435,761 -> 2,654,435,761;
        // (2^64 - 1) * (1 + 2,654,435,761) = -2,654,435,762 mod 2^32 = 1,640,531,534.
        assert_eq!(seed_state(1 << 32, 1), 2_654_435_761);
        assert_eq!(seed_state(u64::MAX, u64::MAX), 1_640_531_534);
        assert_eq!(seed_state(0, 1), 2_654_435_761);
        assert_eq!(seed_state(5, 0), 5);
    }

    #[test]
    fn mulberry32_vectors() {
        // `docs/levers.md#speculative`: from seed_state(0, 5) = 387276917, five steps.
        let want = [
            (2_218_842_730, 0.21900374488905072),
            (4_050_408_543, 0.884141055168584),
            (1_587_007_060, 0.3574465343263),
            (3_418_572_873, 0.04556656489148736),
            (955_171_390, 0.11712391441687942),
        ];
        let mut a = 387_276_917;
        for (state, u) in want {
            let (na, nu) = mulberry32(a);
            assert_eq!((na, nu), (state, u));
            // The state advances by 0x6D2B79F5 mod 2^32.
            assert_eq!(na, a.wrapping_add(0x6D2B_79F5));
            a = na;
        }
        // Draws are in [0, 1) with 32 bits of resolution.
        for s in [0u32, 1, u32::MAX, 0x9249_8609] {
            let (_, u) = mulberry32(s);
            assert!((0.0..1.0).contains(&u));
            assert_eq!((u * 4_294_967_296.0).fract(), 0.0);
        }
    }

    #[test]
    fn draw_accepted_vectors() {
        // `docs/levers.md#speculative`: eight successive draws (alpha 0.7, gamma 3) from seed_state(0, 5).
        let mut a = seed_state(0, 5);
        let mut ks = vec![];
        for _ in 0..8 {
            let (na, k) = draw_accepted(a, 0.7, 3);
            a = na;
            ks.push(k);
        }
        assert_eq!(ks, [1, 3, 3, 1, 0, 0, 1, 1]);
        assert_eq!(a, 3_922_526_149);
        // The first call by hand: draws 0.219 (< 0.7, accept), 0.884 (>= 0.7, stop): k = 1 after
        // two draws, the state is the second one of mulberry32_vectors.
        assert_eq!(draw_accepted(387_276_917, 0.7, 3), (4_050_408_543, 1));
        // gamma caps k and the draws: all accepted with alpha 1.0, gamma draws consumed.
        assert_eq!(draw_accepted(387_276_917, 1.0, 3), (1_587_007_060, 3));
        // alpha 0.0 rejects the first draw (u >= 0 always): one draw, k = 0.
        assert_eq!(draw_accepted(387_276_917, 0.0, 3), (2_218_842_730, 0));
        // A draw equal to alpha stops (u >= alpha): the first draw is 0.21900374488905072.
        assert_eq!(
            draw_accepted(387_276_917, 0.21900374488905072, 5),
            (2_218_842_730, 0)
        );
        // gamma 0 draws nothing.
        assert_eq!(draw_accepted(387_276_917, 0.7, 0), (387_276_917, 0));
    }

    #[test]
    fn expected_tokens_values() {
        // `docs/levers.md#lever-metrics`'s values.
        assert_eq!(expected_tokens(0.7, 3), 2.5329999999999995);
        assert_eq!(expected_tokens(0.8, 4), 3.3615999999999997);
        assert_eq!(expected_tokens(0.6, 2), 1.96);
        assert_eq!(expected_tokens(1.0, 3), 4.0);
        // The formula written out: (1 - ipow(0.7, 4)) / (1 - 0.7), ipow(0.7, 4) = (0.7^2)^2.
        assert_eq!(
            expected_tokens(0.7, 3),
            (1.0 - (0.7 * 0.7) * (0.7 * 0.7)) / (1.0 - 0.7)
        );
        // alpha 0: one token; alpha 0.5, gamma 1: (1 - 0.25) / 0.5 = 1.5.
        assert_eq!(expected_tokens(0.0, 5), 1.0);
        assert_eq!(expected_tokens(0.5, 1), 1.5);
        // alpha >= 1 is gamma + 1 exactly, also for the largest gamma.
        assert_eq!(expected_tokens(1.0, u32::MAX), 4_294_967_296.0);
    }
}
