//! What a `target_rate` plan ranks by (`--objective`), as pure functions of the candidates so
//! that the ranking is testable without simulating: [`rank`] orders the eligible candidates,
//! [`colocated_margin`] compares the winner with the best colocated candidate. The definitions
//! are in `docs/objectives.md#objectives`.

use serde_json::{json, Value};

use super::candidate::{Candidate, LoadPoint};
use crate::UsageError;

/// The names `--objective` takes (`tokens-per-gpu@R` with a number R).
pub const NAMES: [&str; 5] = [
    "cost",
    "goodput-per-gpu",
    "tokens-per-gpu@R",
    "min-gpus",
    "pareto",
];

/// A plan's objective (`docs/objectives.md#objectives`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Objective {
    /// US$ per hour, lowest first (ties: p99 latency, then index): the plan's ranking before
    /// objectives existed.
    Cost,
    /// SLO-met requests/s per GPU, highest first.
    GoodputPerGpu,
    /// Output tokens/s per GPU, highest first, among candidates whose tokens/s per user
    /// (1 / mean TPOT) is at least the value.
    TokensPerGpu(f64),
    /// Fewest GPUs first (ties: cost).
    MinGpus,
    /// The Pareto frontier of tokens/s per GPU against tokens/s per user (both higher better),
    /// from the highest tokens/s per GPU to the highest tokens/s per user.
    Pareto,
}

impl Objective {
    /// Parses `--objective`'s value; a bad one is a one-line error naming the valid ones.
    pub fn parse(s: &str) -> Result<Objective, UsageError> {
        let bad = || {
            UsageError(format!(
                "--objective: unknown objective '{s}'; valid: {} (R: tokens/s per user, a \
                 number above 0, e.g. tokens-per-gpu@50)",
                NAMES.join(", ")
            ))
        };
        Ok(match s.trim() {
            "cost" => Objective::Cost,
            "goodput-per-gpu" => Objective::GoodputPerGpu,
            "min-gpus" => Objective::MinGpus,
            "pareto" => Objective::Pareto,
            t => {
                let r = t.strip_prefix("tokens-per-gpu@").ok_or_else(bad)?;
                match r.trim().parse::<f64>() {
                    Ok(v) if v.is_finite() && v > 0.0 => Objective::TokensPerGpu(v),
                    _ => return Err(bad()),
                }
            }
        })
    }

    /// The name, as given (`tokens-per-gpu@50`).
    pub fn name(&self) -> String {
        match self {
            Objective::Cost => "cost".into(),
            Objective::GoodputPerGpu => "goodput-per-gpu".into(),
            Objective::TokensPerGpu(r) => format!("tokens-per-gpu@{r}"),
            Objective::MinGpus => "min-gpus".into(),
            Objective::Pareto => "pareto".into(),
        }
    }

    /// What the margin over the best colocated candidate is measured on, in words.
    pub fn measure(&self) -> &'static str {
        match self {
            Objective::Cost => "cost per hour",
            Objective::GoodputPerGpu => "goodput per GPU",
            Objective::TokensPerGpu(_) | Objective::Pareto => "output tokens/s per GPU",
            Objective::MinGpus => "GPUs",
        }
    }

    /// Whether the objective measures each candidate along its load ladder
    /// (`docs/objectives.md#ladder`): `goodput-per-gpu`, `tokens-per-gpu@U` and `pareto`.
    pub fn uses_ladder(&self) -> bool {
        matches!(
            self,
            Objective::GoodputPerGpu | Objective::TokensPerGpu(_) | Objective::Pareto
        )
    }

    /// The candidate's value of the measure (None: not simulated) and whether higher is better.
    pub fn value(&self, c: &Candidate) -> (Option<f64>, bool) {
        match self {
            Objective::Cost => (c.usd_per_hour, false),
            Objective::GoodputPerGpu => (c.goodput_per_gpu, true),
            Objective::TokensPerGpu(_) | Objective::Pareto => (c.tokens_per_s_per_gpu, true),
            Objective::MinGpus => (Some(c.gpus as f64), false),
        }
    }
}

/// The multiples of the target rate on a load ladder (`docs/objectives.md#ladder`).
pub const LADDER_MULTIPLES: [f64; 5] = [1.25, 1.5, 2.0, 3.0, 4.0];

/// The top rung of a load ladder, as a fraction of the analytic ceiling.
pub const CEILING_RUNG: f64 = 0.95;

/// The rates a candidate feasible at `rate` is also simulated at (`docs/objectives.md#ladder`):
/// `rate x m` for each of [`LADDER_MULTIPLES`] below the analytic ceiling `ceiling` (every
/// multiple without a ceiling), and `ceiling x` [`CEILING_RUNG`] when above `rate`; ascending,
/// equal rates once.
pub fn ladder(rate: f64, ceiling: Option<f64>) -> Vec<f64> {
    let mut v: Vec<f64> = LADDER_MULTIPLES
        .iter()
        .map(|m| rate * m)
        .filter(|&r| ceiling.is_none_or(|c| r < c))
        .collect();
    if let Some(top) = ceiling.map(|c| c * CEILING_RUNG).filter(|&t| t > rate) {
        v.push(top);
    }
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// Whether a load-curve point counts for `obj`: it meets the SLOs, and for `tokens-per-gpu@U`
/// its tokens/s per user is at least U.
pub fn qualifies(p: &LoadPoint, obj: Objective) -> bool {
    p.meets_slo
        && match obj {
            Objective::TokensPerGpu(u) => p.tokens_per_s_per_user.is_some_and(|x| x >= u),
            _ => true,
        }
}

/// Takes a candidate's figures for `obj` at the best qualifying point of its load curve
/// (`goodput-per-gpu`: the highest goodput per GPU; `tokens-per-gpu@U` and `pareto`: the highest
/// output tokens/s per GPU, with that point's tokens/s per user; the lowest rate of equals) and
/// sets `at_rate_rps`. A candidate without a curve or a qualifying point keeps its figures.
pub fn settle(c: &mut Candidate, obj: Objective) {
    let Some(curve) = &c.load_curve else { return };
    let measure = |p: &LoadPoint| match obj {
        Objective::GoodputPerGpu => p.goodput_per_gpu,
        _ => p.tokens_per_s_per_gpu,
    };
    let mut best: Option<&LoadPoint> = None;
    for p in curve.iter().filter(|p| qualifies(p, obj)) {
        if best.is_none_or(|b| key(measure(p), true) > key(measure(b), true)) {
            best = Some(p);
        }
    }
    let Some(p) = best.cloned() else { return };
    set_at(c, &p, obj);
}

fn set_at(c: &mut Candidate, p: &LoadPoint, obj: Objective) {
    match obj {
        Objective::GoodputPerGpu => c.goodput_per_gpu = p.goodput_per_gpu,
        _ => {
            c.tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
            c.tokens_per_s_per_user = p.tokens_per_s_per_user;
        }
    }
    c.at_rate_rps = Some(p.rate_rps);
}

/// A point of the throughput frontier: candidate `candidate` at `rate_rps` (None: a candidate
/// without a load curve, at its own figures).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CurvePoint {
    pub candidate: usize,
    pub rate_rps: Option<f64>,
    pub tokens_per_s_per_gpu: f64,
    pub tokens_per_s_per_user: f64,
}

/// Every point of the feasible candidates that meets the SLOs (each load-curve point, or the
/// candidate's own figures without a curve), in candidate then rate order.
pub fn curve_points(cands: &[Candidate]) -> Vec<CurvePoint> {
    let mut v = Vec::new();
    for c in cands.iter().filter(|c| c.status == "feasible") {
        let mut add = |rate, g: Option<f64>, u: Option<f64>| {
            v.push(CurvePoint {
                candidate: c.index,
                rate_rps: rate,
                tokens_per_s_per_gpu: key(g, true),
                tokens_per_s_per_user: key(u, true),
            })
        };
        match &c.load_curve {
            Some(curve) => {
                for p in curve.iter().filter(|p| p.meets_slo) {
                    add(
                        Some(p.rate_rps),
                        p.tokens_per_s_per_gpu,
                        p.tokens_per_s_per_user,
                    );
                }
            }
            None => add(None, c.tokens_per_s_per_gpu, c.tokens_per_s_per_user),
        }
    }
    v
}

/// The frontier of `points` (tokens/s per GPU against tokens/s per user, both maximised: the
/// points no other beats in one and matches or beats in the other), from the highest tokens/s
/// per GPU to the highest tokens/s per user (ties: candidate, then rate).
pub fn point_frontier(points: &[CurvePoint]) -> Vec<CurvePoint> {
    let mut front: Vec<CurvePoint> = points
        .iter()
        .enumerate()
        .filter(|&(i, p)| {
            let (g, u) = (p.tokens_per_s_per_gpu, p.tokens_per_s_per_user);
            g.is_finite()
                && u.is_finite()
                && !points.iter().enumerate().any(|(j, q)| {
                    let (gj, uj) = (q.tokens_per_s_per_gpu, q.tokens_per_s_per_user);
                    j != i && gj >= g && uj >= u && (gj > g || uj > u)
                })
        })
        .map(|(_, p)| p.clone())
        .collect();
    front.sort_by(|x, y| {
        y.tokens_per_s_per_gpu
            .total_cmp(&x.tokens_per_s_per_gpu)
            .then(x.tokens_per_s_per_user.total_cmp(&y.tokens_per_s_per_user))
            .then(x.candidate.cmp(&y.candidate))
            .then(key(x.rate_rps, false).total_cmp(&key(y.rate_rps, false)))
    });
    front
}

/// For `pareto`: the frontier over every point of every feasible candidate; each candidate's
/// figures are set at its first frontier point (its highest tokens/s per GPU on the frontier),
/// or, off the frontier, at its best qualifying point ([`settle`]).
pub fn settle_pareto(cands: &mut [Candidate]) -> Vec<CurvePoint> {
    let front = point_frontier(&curve_points(cands));
    for c in cands.iter_mut() {
        let first = front.iter().find(|p| p.candidate == c.index);
        let at = first.and_then(|f| {
            c.load_curve
                .as_ref()?
                .iter()
                .find(|p| Some(p.rate_rps) == f.rate_rps)
                .cloned()
        });
        match at {
            Some(p) => set_at(c, &p, Objective::Pareto),
            None => settle(c, Objective::Pareto),
        }
    }
    front
}

/// `x` with NaN and None as the worst value of a direction.
fn key(x: Option<f64>, higher: bool) -> f64 {
    match x {
        Some(v) if !v.is_nan() => v,
        _ if higher => f64::NEG_INFINITY,
        _ => f64::INFINITY,
    }
}

/// Cheapest first, then the lowest p99 latency, then the index: today's ranking and every
/// objective's tie-break.
fn by_cost(x: &Candidate, y: &Candidate) -> std::cmp::Ordering {
    key(x.usd_per_hour, false)
        .total_cmp(&key(y.usd_per_hour, false))
        .then(key(x.latency_p99_s, false).total_cmp(&key(y.latency_p99_s, false)))
        .then(x.index.cmp(&y.index))
}

/// The feasible candidates the objective admits, best first (for `pareto`, every feasible
/// candidate by tokens/s per GPU; [`rank`] keeps the frontier).
pub fn order(cands: &[Candidate], obj: Objective) -> Vec<usize> {
    let mut v: Vec<&Candidate> = cands
        .iter()
        .filter(|c| c.status == "feasible")
        .filter(|c| match obj {
            Objective::TokensPerGpu(r) => c.tokens_per_s_per_user.is_some_and(|u| u >= r),
            _ => true,
        })
        .collect();
    v.sort_by(|x, y| match obj {
        Objective::Cost => by_cost(x, y),
        Objective::MinGpus => x.gpus.cmp(&y.gpus).then(by_cost(x, y)),
        _ => {
            let (a, _) = obj.value(x);
            let (b, _) = obj.value(y);
            key(b, true).total_cmp(&key(a, true)).then(by_cost(x, y))
        }
    });
    v.iter().map(|c| c.index).collect()
}

/// The ranking of a plan: [`order`], and for `pareto` only its frontier (in the same order:
/// from the highest tokens/s per GPU to the highest tokens/s per user).
pub fn rank(cands: &[Candidate], obj: Objective) -> Vec<usize> {
    let ordered = order(cands, obj);
    if obj != Objective::Pareto {
        return ordered;
    }
    // The frontier's candidates, each once, in the frontier's order (candidates with a load
    // curve: over all their points; `docs/objectives.md#ladder`).
    let mut out: Vec<usize> = Vec::new();
    for p in point_frontier(&curve_points(cands)) {
        if !out.contains(&p.candidate) {
            out.push(p.candidate);
        }
    }
    // `order`'s admission (feasible) holds for every curve point's candidate.
    out.retain(|i| ordered.contains(i));
    out
}

/// The winner's margin over the best colocated candidate (the first colocated one in the
/// objective's [`order`]), in the objective's measure: for a measure where higher is better
/// `(winner - colocated) / colocated`, else `(colocated - winner) / colocated` (the fraction
/// saved). `None` without a winner or without a colocated candidate the objective admits.
pub fn colocated_margin(
    cands: &[Candidate],
    obj: Objective,
    ranked: &[usize],
) -> Option<(usize, f64)> {
    let &w = ranked.first()?;
    let best = order(cands, obj)
        .into_iter()
        .find(|&i| cands[i].mode == "colocated")?;
    let (vw, higher) = obj.value(&cands[w]);
    let (vc, _) = obj.value(&cands[best]);
    let (vw, vc) = (vw?, vc?);
    let margin = if higher {
        (vw - vc) / vc
    } else {
        (vc - vw) / vc
    };
    Some((best, margin))
}

/// The JSON `colocated_margin`: `{"best_colocated", "objective", "margin"}` (null index and
/// margin when no colocated candidate qualifies).
pub fn margin_json(m: Option<(usize, f64)>, obj: Objective) -> Value {
    json!({
        "best_colocated": m.map(|x| x.0),
        "objective": obj.name(),
        "margin": m.map(|x| x.1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated candidate: index, mode, GPUs, $/hour, p99 s, goodput/GPU, tok/s/GPU, tok/s/user.
    #[allow(clippy::too_many_arguments)]
    fn c(
        index: usize,
        mode: &str,
        gpus: u64,
        usd: f64,
        p99: f64,
        good: f64,
        tpg: f64,
        tpu: f64,
    ) -> Candidate {
        let mut x = Candidate::blank(index);
        x.mode = mode.into();
        x.status = "feasible".into();
        x.gpus = gpus;
        x.usd_per_hour = Some(usd);
        x.latency_p99_s = Some(p99);
        x.goodput_per_gpu = Some(good);
        x.tokens_per_s_per_gpu = Some(tpg);
        x.tokens_per_s_per_user = Some(tpu);
        x
    }

    fn cands() -> Vec<Candidate> {
        let mut v = vec![
            c(0, "disagg", 4, 10.0, 2.0, 0.5, 100.0, 40.0),
            c(1, "disagg", 2, 6.0, 3.0, 0.8, 150.0, 30.0),
            c(2, "colocated", 2, 5.0, 4.0, 0.4, 120.0, 20.0),
            c(3, "disagg", 3, 6.0, 2.5, 0.8, 90.0, 60.0),
            c(4, "colocated", 4, 9.0, 1.0, 0.6, 80.0, 35.0),
            c(5, "disagg", 1, 1.0, 1.0, 9.0, 900.0, 90.0),
        ];
        // Not feasible: never ranked, whatever its figures.
        v[5].status = "infeasible".into();
        v
    }

    #[test]
    fn objectives_parse_or_name_the_valid_ones() {
        assert_eq!(Objective::parse("cost").unwrap(), Objective::Cost);
        assert_eq!(
            Objective::parse("tokens-per-gpu@50").unwrap(),
            Objective::TokensPerGpu(50.0)
        );
        assert_eq!(
            Objective::parse("tokens-per-gpu@12.5").unwrap().name(),
            "tokens-per-gpu@12.5"
        );
        for bad in [
            "costs",
            "tokens-per-gpu@",
            "tokens-per-gpu@0",
            "tokens-per-gpu@x",
            "",
        ] {
            assert_eq!(
                Objective::parse(bad).unwrap_err().0,
                format!(
                    "--objective: unknown objective '{bad}'; valid: cost, goodput-per-gpu, \
                     tokens-per-gpu@R, min-gpus, pareto (R: tokens/s per user, a number above \
                     0, e.g. tokens-per-gpu@50)"
                )
            );
        }
    }

    #[test]
    fn each_objective_ranks_the_feasible_candidates() {
        let v = cands();
        // Cost: 5.0 < 6.0 (p99 2.5 < 3.0) < 6.0 < 9.0 < 10.0.
        assert_eq!(rank(&v, Objective::Cost), vec![2, 3, 1, 4, 0]);
        // Goodput per GPU: 0.8 (cost tie 6.0, p99 2.5 first) 0.8, 0.6, 0.5, 0.4.
        assert_eq!(rank(&v, Objective::GoodputPerGpu), vec![3, 1, 4, 0, 2]);
        // Tokens/s per GPU among tokens/s per user >= 35: 0 (100), 3 (90), 4 (80).
        assert_eq!(rank(&v, Objective::TokensPerGpu(35.0)), vec![0, 3, 4]);
        assert_eq!(rank(&v, Objective::TokensPerGpu(61.0)), Vec::<usize>::new());
        // Fewest GPUs, ties by cost: 2 GPUs (5.0, 6.0), 3, 4 GPUs (9.0, 10.0).
        assert_eq!(rank(&v, Objective::MinGpus), vec![2, 1, 3, 4, 0]);
        // Frontier of (tok/s/GPU, tok/s/user): (150,30), (120,20) is beaten by it, (100,40),
        // (90,60); (80,35) is beaten by (100,40).
        assert_eq!(rank(&v, Objective::Pareto), vec![1, 0, 3]);
    }

    #[test]
    fn the_margin_over_the_best_colocated_candidate_is_exact() {
        let v = cands();
        let m = |obj| colocated_margin(&v, obj, &rank(&v, obj));
        // Cost: the winner is colocated itself (2): no margin.
        assert_eq!(m(Objective::Cost), Some((2, 0.0)));
        // Goodput per GPU: 0.8 against colocated 4's 0.6: (0.8 - 0.6) / 0.6.
        assert_eq!(m(Objective::GoodputPerGpu), Some((4, (0.8 - 0.6) / 0.6)));
        // Tokens per GPU at 35 tokens/s per user: 100 against colocated 4's 80 = 0.25.
        assert_eq!(m(Objective::TokensPerGpu(35.0)), Some((4, 0.25)));
        // Pareto: the winner (150 tok/s/GPU) against colocated 2's 120: 0.25.
        assert_eq!(m(Objective::Pareto), Some((2, 0.25)));
        // Min GPUs: 2 against 2: 0.
        assert_eq!(m(Objective::MinGpus), Some((2, 0.0)));
        // Without colocated candidates: none.
        let only: Vec<Candidate> = v.into_iter().filter(|c| c.mode == "disagg").collect();
        let r = rank(&only, Objective::Cost);
        assert_eq!(colocated_margin(&only, Objective::Cost, &r), None);
        // Lower is better: a winner at 6.0 against a colocated 8.0 saves 25%.
        let two = vec![
            c(0, "disagg", 2, 6.0, 1.0, 1.0, 1.0, 1.0),
            c(1, "colocated", 2, 8.0, 1.0, 1.0, 1.0, 1.0),
        ];
        assert_eq!(
            colocated_margin(&two, Objective::Cost, &rank(&two, Objective::Cost)),
            Some((1, 0.25))
        );
        assert_eq!(
            margin_json(Some((1, 0.25)), Objective::Cost),
            json!({"best_colocated": 1, "objective": "cost", "margin": 0.25})
        );
    }

    #[test]
    fn the_load_ladder_is_exact() {
        // Every multiple below the ceiling, then 0.95 x the ceiling.
        assert_eq!(
            ladder(4.0, Some(17.0)),
            vec![5.0, 6.0, 8.0, 12.0, 16.0, 17.0 * 0.95]
        );
        // 0.95 x the ceiling below a multiple: ascending.
        assert_eq!(
            ladder(4.0, Some(12.5)),
            vec![5.0, 6.0, 8.0, 12.5 * 0.95, 12.0]
        );
        assert_eq!(ladder(10.0, Some(12.0)), vec![12.0 * 0.95]);
        // No ceiling: every multiple; a ceiling at or below the rate: no rung.
        assert_eq!(ladder(10.0, None), vec![12.5, 15.0, 20.0, 30.0, 40.0]);
        assert_eq!(ladder(10.0, Some(10.0)), Vec::<f64>::new());
    }

    fn point(rate: f64, meets: bool, good: f64, tpg: f64, tpu: f64) -> LoadPoint {
        LoadPoint {
            rate_rps: rate,
            slo_attainment: if meets { 1.0 } else { 0.5 },
            steady: meets,
            meets_slo: meets,
            tokens_per_s_per_user: Some(tpu),
            tokens_per_s_per_gpu: Some(tpg),
            goodput_per_gpu: Some(good),
        }
    }

    #[test]
    fn a_candidate_is_settled_at_its_best_qualifying_point() {
        let mut x = c(0, "disagg", 2, 1.0, 1.0, 1.0, 100.0, 50.0);
        x.load_curve = Some(vec![
            point(4.0, true, 1.0, 100.0, 50.0),
            point(5.0, true, 1.5, 130.0, 45.0),
            point(6.0, true, 1.4, 150.0, 38.0),
            point(8.0, false, 3.0, 300.0, 30.0),
        ]);
        let mut g = x.clone();
        settle(&mut g, Objective::GoodputPerGpu);
        assert_eq!((g.goodput_per_gpu, g.at_rate_rps), (Some(1.5), Some(5.0)));
        assert_eq!(g.tokens_per_s_per_gpu, Some(100.0));
        let mut t = x.clone();
        settle(&mut t, Objective::TokensPerGpu(40.0));
        assert_eq!(
            (
                t.tokens_per_s_per_gpu,
                t.tokens_per_s_per_user,
                t.at_rate_rps
            ),
            (Some(130.0), Some(45.0), Some(5.0))
        );
        let mut n = x.clone();
        settle(&mut n, Objective::TokensPerGpu(60.0));
        assert_eq!((n.tokens_per_s_per_gpu, n.at_rate_rps), (Some(100.0), None));
        // Pareto over the points of two candidates: (150, 38), (130, 45) and (100, 50) of 0,
        // (120, 60) of 1 beats (100, 50).
        let mut y = c(1, "disagg", 2, 1.0, 1.0, 1.0, 120.0, 60.0);
        y.load_curve = Some(vec![point(4.0, true, 1.0, 120.0, 60.0)]);
        let mut v = vec![x, y];
        let front = settle_pareto(&mut v);
        let got: Vec<(usize, Option<f64>)> =
            front.iter().map(|p| (p.candidate, p.rate_rps)).collect();
        assert_eq!(got, vec![(0, Some(6.0)), (0, Some(5.0)), (1, Some(4.0))]);
        assert_eq!(v[0].tokens_per_s_per_gpu, Some(150.0));
        assert_eq!(rank(&v, Objective::Pareto), vec![0, 1]);
    }
}
