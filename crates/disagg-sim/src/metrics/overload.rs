//! `summary.overload` (`docs/serving-model.md#overload`): the offered rate against the per-pool
//! analytic ceiling ([`crate::capacity::ceiling`]), and whether the queues were still growing
//! when the last request arrived.

use serde::Serialize;

use super::ctx::Ctx;
use crate::workload::Source;

/// Whether the run was offered more than it can serve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Overload {
    /// The workload's offered rate, requests/s: the Poisson rate; for a trace, its requests over
    /// its arrival span after `--time-scale`; for sessions with closed-loop turns or system
    /// prompts, the run's arrivals over their span (`null` when the span is 0).
    pub offered_rps: f64,
    /// The per-pool analytic ceiling, requests/s (`null`: no bound, e.g. mean lengths below one
    /// token).
    pub capacity_rps: Option<f64>,
    /// The stage that sets the ceiling: `prefill`, `decode`, `kv-link` or `colocated`.
    pub bottleneck: Option<String>,
    /// `offered_rps > capacity_rps`, or `queues_growing`.
    pub overloaded: bool,
    /// The number in the system grew over the last quarter of arrivals by more than
    /// `max(m / 10, 3 sqrt(m))` for `m` arrivals in that quarter ([`growth_threshold`]).
    pub queues_growing: bool,
    /// That growth, requests: the least-squares slope of the number in the system, sampled at
    /// each of the last quarter of arrivals, times their time span (`null` with fewer than
    /// [`MIN_WINDOW`] arrivals in the window).
    pub queue_growth: Option<f64>,
}

/// Fewest arrivals in the last-quarter window for a growth figure.
pub const MIN_WINDOW: usize = 8;
/// The growth above which the queues are growing, for `m` arrivals in the window: a tenth of
/// them (a rate 11% above what is served), and at least three times `sqrt(m)`, the scale of the
/// chance difference between `m` Poisson arrivals and as many departures, so that a short run
/// of a stable system is not called overloaded.
pub fn growth_threshold(m: usize) -> f64 {
    let m = m as f64;
    (0.1 * m).max(3.0 * m.sqrt())
}

pub(super) fn overload(c: &Ctx<'_>) -> Overload {
    let cfg = c.cfg;
    let arrivals = arrival_times(c);
    let measured = matches!(&cfg.source, Source::Sessions { shape, .. } if !shape.is_plain());
    let offered_rps = offered_of(cfg.workload.rate, measured, &arrivals);
    let ceiling = crate::capacity::ceiling(cfg);
    let growth = queue_growth(c, &arrivals);
    let (overloaded, queues_growing) = verdict(
        offered_rps,
        ceiling.as_ref().map(|x| x.rps),
        growth,
        window_of(arrivals.len()),
    );
    Overload {
        offered_rps,
        capacity_rps: ceiling.as_ref().map(|x| x.rps),
        bottleneck: ceiling.map(|x| x.bottleneck.to_string()),
        overloaded,
        queues_growing,
        queue_growth: growth,
    }
}

/// The offered rate: the workload's `rate`, or (`measured`: sessions with closed-loop turns or
/// system prompts) the arrivals over their span, NaN when they span no time.
fn offered_of(rate: f64, measured: bool, arrivals: &[f64]) -> f64 {
    if !measured {
        return rate;
    }
    match (arrivals.first(), arrivals.last()) {
        (Some(a), Some(b)) if b > a => arrivals.len() as f64 / (b - a),
        _ => f64::NAN,
    }
}

/// Arrivals in the last-quarter window of `n` arrivals: `n - floor(3n / 4)`.
fn window_of(n: usize) -> usize {
    n - n * 3 / 4
}

/// `(overloaded, queues_growing)`: growing when the growth is above [`growth_threshold`] of the
/// window's arrivals; overloaded when the offered rate is above the capacity, or growing.
fn verdict(
    offered: f64,
    capacity: Option<f64>,
    growth: Option<f64>,
    window: usize,
) -> (bool, bool) {
    let growing = growth.is_some_and(|g| g > growth_threshold(window));
    let over = capacity.is_some_and(|x| offered > x);
    (over || growing, growing)
}

/// Every request's arrival (those that arrived: a closed-loop turn after a rejected one never
/// does), sorted.
fn arrival_times(c: &Ctx<'_>) -> Vec<f64> {
    let mut a: Vec<f64> = c
        .reqs
        .iter()
        .map(|r| r.arrival)
        .filter(|t| t.is_finite())
        .collect();
    a.sort_by(f64::total_cmp);
    a
}

/// The growth of the number in the system (arrived, not finished; a rejected request never
/// enters) over the last quarter of `arrivals`: the ordinary least-squares slope of that number,
/// sampled just after each arrival of the window, against the arrival time, times the window's
/// time span (the difference of the last and first samples when the span is 0).
pub fn queue_growth_of(arrivals: &[f64], finishes: &[f64], rejected_at: &[f64]) -> Option<f64> {
    let n = arrivals.len();
    let start = n * 3 / 4;
    if n - start < MIN_WINDOW {
        return None;
    }
    // Number in the system just after arrival k: k + 1 arrived, minus those finished or
    // rejected by then (both lists sorted).
    let (mut f, mut r) = (0usize, 0usize);
    let mut pts: Vec<(f64, f64)> = Vec::with_capacity(n - start);
    for (k, &t) in arrivals.iter().enumerate() {
        while f < finishes.len() && finishes[f] <= t {
            f += 1;
        }
        while r < rejected_at.len() && rejected_at[r] <= t {
            r += 1;
        }
        if k >= start {
            pts.push((t, (k + 1) as f64 - f as f64 - r as f64));
        }
    }
    Some(trend(&pts))
}

/// The growth of a number in system over a window of `(time, number)` points (at least one):
/// the least-squares slope times the window's span, or the last minus the first number when the
/// window spans no time (`docs/serving-model.md#overload`).
pub fn trend(pts: &[(f64, f64)]) -> f64 {
    let (t0, t1) = (pts[0].0, pts[pts.len() - 1].0);
    if t1 <= t0 {
        return pts[pts.len() - 1].1 - pts[0].1;
    }
    let m = pts.len() as f64;
    let mt = pts.iter().map(|p| p.0).sum::<f64>() / m;
    let mn = pts.iter().map(|p| p.1).sum::<f64>() / m;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mt) * (p.1 - mn)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mt) * (p.0 - mt)).sum();
    sxy / sxx * (t1 - t0)
}

fn queue_growth(c: &Ctx<'_>, arrivals: &[f64]) -> Option<f64> {
    let mut finishes: Vec<f64> = c
        .reqs
        .iter()
        .map(|r| r.finish)
        .filter(|t| !t.is_nan())
        .collect();
    finishes.sort_by(f64::total_cmp);
    let mut rejected: Vec<f64> = c
        .reqs
        .iter()
        .filter(|r| r.finish.is_nan() && r.arrival.is_finite())
        .map(|r| r.arrival)
        .collect();
    rejected.sort_by(f64::total_cmp);
    queue_growth_of(arrivals, &finishes, &rejected)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arrivals every second, each staying 0.5 s: the system holds 1 after every arrival; no
    /// growth.
    #[test]
    fn a_steady_system_does_not_grow() {
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let f: Vec<f64> = a.iter().map(|t| t + 0.5).collect();
        assert_eq!(queue_growth_of(&a, &f, &[]), Some(0.0));
    }

    /// Nothing finishes before the end: the number in the system rises by one per arrival, 10
    /// over the last 10 arrivals' 9 s (slope 1/s x 9 s).
    #[test]
    fn a_stalled_system_grows_by_its_arrivals() {
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let f: Vec<f64> = vec![100.0; 40];
        assert_eq!(queue_growth_of(&a, &f, &[]), Some(9.0));
        // Rejected requests never enter.
        assert_eq!(queue_growth_of(&a, &[], &a), Some(0.0));
        // Too few arrivals for a window.
        assert_eq!(queue_growth_of(&a[..20], &f, &[]), None);
    }

    #[test]
    fn the_threshold_is_a_tenth_or_three_square_roots() {
        // max(m / 10, 3 sqrt(m)): 3 sqrt(m) up to m = 900, a tenth above.
        assert_eq!(growth_threshold(16), 12.0);
        assert_eq!(growth_threshold(100), 30.0);
        assert_eq!(growth_threshold(900), 90.0);
        assert_eq!(growth_threshold(10_000), 1000.0);
        assert_eq!(window_of(40), 10);
        assert_eq!(window_of(41), 11);
        assert_eq!(window_of(3), 1);
    }

    #[test]
    fn overloaded_is_above_capacity_or_growing() {
        // Above capacity alone, growing alone, both, neither; equal is not above.
        assert_eq!(verdict(5.0, Some(4.0), Some(0.0), 100), (true, false));
        assert_eq!(verdict(3.0, Some(4.0), Some(31.0), 100), (true, true));
        assert_eq!(verdict(5.0, Some(4.0), Some(31.0), 100), (true, true));
        assert_eq!(verdict(3.0, Some(4.0), Some(30.0), 100), (false, false));
        assert_eq!(verdict(4.0, Some(4.0), None, 100), (false, false));
        assert_eq!(verdict(5.0, None, Some(-50.0), 100), (false, false));
    }

    #[test]
    fn measured_sessions_offer_their_arrivals_over_their_span() {
        let a = [1.0, 2.0, 3.0, 5.0];
        assert_eq!(offered_of(7.0, false, &a), 7.0);
        assert_eq!(offered_of(7.0, true, &a), 4.0 / 4.0);
        assert!(offered_of(7.0, true, &[2.0, 2.0]).is_nan());
        assert!(offered_of(7.0, true, &[]).is_nan());
    }

    #[test]
    fn the_window_needs_eight_arrivals() {
        // 29 arrivals: a window of 8 (the minimum); 28: 7, too few.
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let f: Vec<f64> = vec![100.0; 40];
        assert_eq!(window_of(29), 8);
        assert!(queue_growth_of(&a[..29], &f, &[]).is_some());
        assert_eq!(queue_growth_of(&a[..28], &f, &[]), None);
        // A window at one instant: the last minus the first number.
        assert_eq!(trend(&[(1.0, 2.0), (1.0, 5.0)]), 3.0);
    }

    #[test]
    fn the_trend_is_the_least_squares_slope_times_the_span() {
        // (1, 2), (2, 2), (3, 5): means 2 and 3; sxy = 1 + 0 + 2 = 3, sxx = 2; slope 1.5 over 2 s.
        assert_eq!(trend(&[(1.0, 2.0), (2.0, 2.0), (3.0, 5.0)]), 3.0);
        // (10, 1), (12, 7), (13, 4): means 35/3 and 4; sxy = (-5/3)(-3) + (1/3)(3) + (4/3)(0) = 6,
        // sxx = 25/9 + 1/9 + 16/9 = 42/9; slope 6 x 9 / 42 over 3 s.
        let t = trend(&[(10.0, 1.0), (12.0, 7.0), (13.0, 4.0)]);
        assert!((t - 6.0 * 9.0 / 42.0 * 3.0).abs() < 1e-12, "{t}");
    }
}
