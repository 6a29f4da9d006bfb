//! The link's statistical tests: they draw arrivals from the reference's generator
//! ([`PyRandom`]) and drive the link (disagg-model's `link`) on the engine's queue. The other link
//! tests live with the link, in disagg-model.

use super::*;
use crate::engine::EventQueue;
use crate::pyrand::PyRandom;
use disagg_model::link::testing::{self, spec, Drain};

impl<E> Drain<E> for EventQueue<E> {
    fn pop(&mut self) -> Option<(f64, E)> {
        EventQueue::pop(self)
    }
    fn processed(&self) -> u64 {
        EventQueue::processed(self)
    }
}

/// [`testing::drive`] on the engine's queue.
fn drive(link: &mut LinkModel, cap: f64, arrivals: &[(f64, XferSpec)]) -> Vec<(f64, f64)> {
    testing::drive(link, cap, arrivals, EventQueue::new())
}

/// Mean and the standard error of the mean by batch means (`nb` batches).
fn mean_se(x: &[f64], nb: usize) -> (f64, f64) {
    let n = x.len() / nb * nb;
    let m = x[..n].iter().sum::<f64>() / n as f64;
    let bs = n / nb;
    let bm: Vec<f64> = (0..nb)
        .map(|b| x[b * bs..(b + 1) * bs].iter().sum::<f64>() / bs as f64)
        .collect();
    let var = bm.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (nb - 1) as f64;
    (m, (var / nb as f64).sqrt())
}

/// `n` equal transfers of work `s` arriving as a Poisson process of rate `rate`, driven
/// through a link of `channels`; returns the arrival times and each transfer's (start, end).
fn equal_poisson(
    sharing: Sharing,
    channels: u32,
    n: usize,
    rate: f64,
    s: f64,
    seed: u64,
) -> (Vec<f64>, Vec<(f64, f64)>, LinkModel) {
    let times = poisson(n, rate, seed);
    let arr: Vec<(f64, XferSpec)> = times
        .iter()
        .enumerate()
        .map(|(i, &t)| (t, spec(i as u32, s, 0.0, None)))
        .collect();
    let mut link = LinkModel::new(sharing, channels);
    let out = drive(&mut link, channels as f64, &arr);
    (times, out, link)
}

fn poisson(n: usize, rate: f64, seed: u64) -> Vec<f64> {
    let mut rng = PyRandom::new(seed);
    let mut t = 0.0;
    (0..n)
        .map(|_| {
            t += rng.expovariate(rate);
            t
        })
        .collect()
}

/// Under Poisson arrivals of equal transfers (service s = 1 s at one channel) at load
/// rho = 0.6, the fair link is M/D/1-PS: mean time in system s / (1 - rho) = 2.5 s
/// (insensitive to the service distribution). 200,000 transfers after a 2,000 warm-up; the
/// standard error is estimated by 40 batch means (about 0.008 s here) and the test allows
/// 4 standard errors.
#[test]
fn fair_link_is_m_g_1_ps() {
    let (n, rho, s) = (200_000, 0.6, 1.0);
    let (times, out, link) = equal_poisson(Sharing::Fair, 1, n, rho / s, s, 7);
    let sojourn: Vec<f64> = out[2000..]
        .iter()
        .zip(&times[2000..])
        .map(|((_, end), t)| end - t)
        .collect();
    let (m, se) = mean_se(&sojourn, 40);
    let want = s / (1.0 - rho);
    assert!(se > 0.0 && se < 0.05, "standard error {se}");
    assert!((m - want).abs() <= 4.0 * se, "mean {m} vs {want} (se {se})");
    // Work conservation: the link is busy exactly the total work.
    let t = link.totals();
    assert_eq!(t.transfers, n as u64);
    assert!((t.busy_s - n as f64 * s).abs() < 1e-6 * n as f64);
    // Two channels at the same per-channel load: each of n transfers gets min(1, 2/n) of a
    // channel, a symmetric (Kelly) queue, so insensitive: its mean time in system is the
    // M/M/2 one, s (1 + C / (c - a)) with a = 1.2 offered channels and Erlang C = 0.45 the
    // probability of waiting: 1.5625 s.
    let (times2, out2, _) = equal_poisson(Sharing::Fair, 2, n, 2.0 * rho / s, s, 8);
    let soj2: Vec<f64> = out2[2000..]
        .iter()
        .zip(&times2[2000..])
        .map(|((_, end), t)| end - t)
        .collect();
    let (m2, se2) = mean_se(&soj2, 40);
    let (a, c) = (2.0 * rho, 2.0);
    let erlang_c = (a * a / 2.0 * c / (c - a)) / (1.0 + a + a * a / 2.0 * c / (c - a));
    let want2 = s * (1.0 + erlang_c / (c - a));
    assert_eq!(want2, 1.5625);
    assert!(
        (m2 - want2).abs() <= 4.0 * se2,
        "two channels: mean {m2} vs {want2} (se {se2})"
    );
}

/// FIFO with one channel and equal transfers is M/D/1: mean wait rho s / (2 (1 - rho)) =
/// 0.75 s at rho = 0.6, s = 1 s. Same sample design as the PS test (4 batch-means standard
/// errors, about 0.006 s here).
#[test]
fn fifo_link_is_m_d_1() {
    let (n, rho, s) = (200_000, 0.6, 1.0);
    let (times, out, _) = equal_poisson(Sharing::Fifo, 1, n, rho / s, s, 11);
    let waits: Vec<f64> = out[2000..]
        .iter()
        .zip(&times[2000..])
        .map(|((start, _), t)| start - t)
        .collect();
    let (m, se) = mean_se(&waits, 40);
    let want = rho * s / (2.0 * (1.0 - rho));
    assert!(se > 0.0 && se < 0.05, "standard error {se}");
    assert!(
        (m - want).abs() <= 4.0 * se,
        "mean wait {m} vs {want} (se {se})"
    );
    // Every transfer holds its channel exactly s.
    for ((st, end), _) in out.iter().zip(&times) {
        assert_eq!(*end, st + s);
    }
}

/// The fair link against a brute-force fluid simulation in 4 us steps, on random mixes of
/// layer-wise and whole-cache transfers joining at random times, on one and two channels:
/// every landing time agrees to within 50 steps.
#[test]
fn fair_link_matches_a_brute_force_fluid_simulation() {
    let mut rng = PyRandom::new(42);
    for trial in 0..24 {
        let c = 1 + trial % 2;
        let n = 3 + (trial % 5) as usize;
        let mut arr: Vec<(f64, XferSpec)> = (0..n)
            .map(|i| {
                let work = 0.02 + 0.3 * rng.random();
                if rng.random() < 0.6 {
                    let layers = [2u32, 3, 4, 8][(rng.random() * 4.0) as usize];
                    let p = LayerPlan::new(0.5 * rng.random(), 0.05 + 0.4 * rng.random(), layers);
                    let join = p.first_ready()
                        + if rng.random() < 0.3 {
                            0.05 * rng.random()
                        } else {
                            0.0
                        };
                    (join, spec(i as u32, work, 0.0, Some(p)))
                } else {
                    (0.6 * rng.random(), spec(i as u32, work, 0.0, None))
                }
            })
            .collect();
        arr.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (i, a) in arr.iter_mut().enumerate() {
            a.1.rid = i as u32;
        }
        let mut link = LinkModel::new(Sharing::Fair, c);
        let out = drive(&mut link, c as f64, &arr);
        // Brute force: per transfer, the breakpoints (time, ready work) of its ready bytes.
        let dt = 4e-6;
        let steps: Vec<Vec<(f64, f64)>> = arr
            .iter()
            .map(|&(j, sp)| match sp.plan {
                None => vec![(j, sp.stream_s)],
                Some(p) => {
                    let w = sp.stream_s / p.layers as f64;
                    let k0 = p.ready_at(j);
                    let mut v = vec![(j, k0 as f64 * w)];
                    for k in k0 + 1..=p.layers {
                        v.push((p.slice_ready(k), k as f64 * w));
                    }
                    v
                }
            })
            .collect();
        let total: Vec<f64> = steps.iter().map(|v| v.last().unwrap().1).collect();
        let mut next = vec![0usize; n];
        let mut ready = vec![0.0; n];
        let mut sent = vec![0.0; n];
        let mut done = vec![f64::NAN; n];
        let mut left = n;
        let mut t = 0.0;
        let mut active = Vec::with_capacity(n);
        while left > 0 {
            for i in 0..n {
                while next[i] < steps[i].len() && steps[i][next[i]].0 <= t {
                    ready[i] = steps[i][next[i]].1;
                    next[i] += 1;
                }
            }
            active.clear();
            active.extend((0..n).filter(|&i| done[i].is_nan() && ready[i] - sent[i] > 1e-12));
            let rate = (c as f64 / active.len().max(1) as f64).min(1.0);
            t += dt;
            for &i in &active {
                sent[i] = (sent[i] + rate * dt).min(ready[i]);
                if sent[i] >= total[i] - 1e-12 {
                    done[i] = t;
                    left -= 1;
                }
            }
            assert!(t < 100.0);
        }
        for i in 0..n {
            assert!(
                (out[i].1 - done[i]).abs() <= 50.0 * dt,
                "trial {trial} transfer {i}: {} vs brute force {}",
                out[i].1,
                done[i]
            );
        }
    }
}
