//! Inter-token latencies, reconstructed once at the end of a run. They are not stored per
//! request: every instance that decodes keeps the end time of each of its steps, and each request
//! the runs of consecutive steps that gave it a token, from which every ITL follows exactly
//! (`step_end[j] - step_end[j-1]`, the first of a run from the previous token), as the
//! reference's fast path does. A plain instance gives a request one run (from its admission step
//! to its finish step); a scheduled one may give several (preemption, swapping) plus zero gaps
//! (speculative verify passes).

use crate::stats::{weighted, Dist};

/// A request's runs of steps: one (plain instances) or a list (scheduled instances).
pub(crate) enum Runs<'r> {
    One(Option<(usize, usize)>),
    Many(std::slice::Iter<'r, (u32, u32)>),
}

impl Iterator for Runs<'_> {
    type Item = (usize, usize);
    #[inline]
    fn next(&mut self) -> Option<(usize, usize)> {
        match self {
            Runs::One(x) => x.take(),
            Runs::Many(it) => it.next().map(|&(a, b)| (a as usize, b as usize)),
        }
    }
}

/// One request's tokens after the first.
pub(crate) struct TokenRuns<'r> {
    /// The instance whose steps the runs index.
    pub inst: usize,
    /// That instance's step end times.
    pub steps: &'r [f64],
    /// Its first token, from which the first ITL is measured.
    pub first_s: f64,
    /// Runs `(first, last)` of consecutive step indices, in order.
    pub runs: Runs<'r>,
    /// Tokens that arrived with a zero gap (speculative verify passes).
    pub zeros: u64,
}

impl TokenRuns<'_> {
    /// Calls `f(value, count)` for each ITL: the gap before each run of steps, each step-to-step
    /// gap inside a run, then the zero gaps (counted, not in order).
    pub(crate) fn each_itl(self, mut f: impl FnMut(f64, u64)) {
        let e = self.steps;
        let mut prev = self.first_s;
        for (a, b) in self.runs {
            f(e[a] - prev, 1);
            for j in a + 1..=b {
                f(e[j] - e[j - 1], 1);
            }
            prev = e[b];
        }
        if self.zeros > 0 {
            f(0.0, self.zeros);
        }
    }
}

/// The ITL distribution of the measured requests `steady` (`runs_of(rid)`: a request's tokens
/// after the first, `None` if it has none), from the step-end arrays `step_ends` (per instance):
/// each run contributes the gap before it once and every step-to-step gap inside it, counted per
/// step with difference arrays. `count_zeros`: the zero gaps are counted (scheduled runs).
pub(crate) fn itl_dist<'r>(
    step_ends: &[Vec<f64>],
    steady: &[u32],
    runs_of: impl Fn(usize) -> Option<TokenRuns<'r>>,
    count_zeros: bool,
) -> Dist {
    // Difference arrays of "measured requests taking part in step j" (j after a run's first).
    let mut diff: Vec<Vec<i32>> = step_ends.iter().map(|e| vec![0i32; e.len() + 1]).collect();
    let mut firsts: Vec<f64> = Vec::with_capacity(steady.len());
    let mut zeros: u64 = 0;
    for &i in steady {
        let Some(t) = runs_of(i as usize) else {
            continue;
        };
        let e = t.steps;
        let mut prev = t.first_s;
        for (a, b) in t.runs {
            firsts.push(e[a] - prev);
            if b > a {
                let d = &mut diff[t.inst];
                d[a + 1] += 1;
                d[b + 1] -= 1;
            }
            prev = e[b];
        }
        zeros += t.zeros;
    }
    // Turn the difference arrays into counts in place.
    for d in diff.iter_mut() {
        let mut c = 0i32;
        for x in d.iter_mut() {
            c += *x;
            *x = c;
        }
    }
    weighted(|f| {
        for &v in &firsts {
            f(v, 1);
        }
        if count_zeros {
            f(0.0, zeros);
        }
        for (e, cnt) in step_ends.iter().zip(diff.iter()) {
            for j in 1..e.len() {
                let c = cnt[j];
                if c > 0 {
                    f(e[j] - e[j - 1], c as u64);
                }
            }
        }
    })
}
