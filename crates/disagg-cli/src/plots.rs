//! `--plot DIR`: the SVG charts of run, compare, sweep and plan (drawn by `disagg-plot`, which
//! knows nothing about simulations; this module turns runs into numbers for it).

use std::path::{Path, PathBuf};

use disagg_plot::{
    Axis, Cdf, LineChart, MarkPoint, Panel, Scatter, Series, StackedBars, TimeSeries,
};
use disagg_sim::metrics::STAGES;
use disagg_sim::observer::{InstanceInfo, Observer, Sample, StepEvent, TransferEvent};
use disagg_sim::{RunResult, Summary};

use disagg_api::output::write_file_atomic;
use disagg_api::UsageError;

/// Creates the plot directory (and parents) up front, so a bad path fails before any run. The
/// directories it creates are removed again by [`remove_created_dirs`] if the command fails.
pub fn prepare_dir(dir: &Path) -> Result<(), UsageError> {
    if dir.as_os_str() == "-" {
        return Err(UsageError(
            "--plot: '-' is not a directory: give the directory to write the charts into".into(),
        ));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError(format!(
            "--plot: '{}' is not a directory",
            dir.display()
        )));
    }
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| std::fs::symlink_metadata(a).is_err())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir)
        .map_err(|e| UsageError(format!("--plot: cannot create '{}': {e}", dir.display())))?;
    disagg_api::output::note_created_dirs(missing);
    Ok(())
}

/// Removes the directories [`prepare_dir`] created that are still empty (after a failure).
pub use disagg_api::output::remove_created_dirs;

fn write(
    dir: &Path,
    name: &str,
    svg: String,
    written: &mut Vec<PathBuf>,
) -> Result<(), UsageError> {
    let p = dir.join(name);
    write_file_atomic("--plot", &p, svg.as_bytes())?;
    written.push(p);
    Ok(())
}

/// Per-request latencies of one run, in milliseconds (finished requests).
pub struct Latencies {
    pub name: String,
    pub ttft: Vec<f64>,
    pub tpot: Vec<f64>,
    pub itl: Vec<f64>,
    pub e2e: Vec<f64>,
    pub handoff: Vec<f64>,
}

impl Latencies {
    /// A copy (the samples are moved into charts by reference; this keeps call sites simple).
    pub fn clone_named(&self) -> Latencies {
        Latencies {
            name: self.name.clone(),
            ttft: self.ttft.clone(),
            tpot: self.tpot.clone(),
            itl: self.itl.clone(),
            e2e: self.e2e.clone(),
            handoff: self.handoff.clone(),
        }
    }

    /// Collects the latencies of `run`: TTFT, TPOT, ITL and E2E of the measured requests (after
    /// the warm-up cut, with the run's first-token convention: the set the summary's figures come
    /// from); hand-offs of every request (like the summary's). ITLs are included when the run has
    /// at most 200,000 requests.
    pub fn of(name: &str, run: &RunResult) -> Latencies {
        let m = run.measured_latencies();
        let ms = |v: Vec<f64>| -> Vec<f64> { v.into_iter().map(|x| 1e3 * x).collect() };
        let mut l = Latencies {
            name: name.into(),
            ttft: ms(m.ttft_s),
            tpot: ms(m.tpot_s),
            itl: vec![],
            e2e: ms(m.e2e_s),
            handoff: vec![],
        };
        for r in run.requests() {
            if let (Some(ft), Some(k)) = (r.first_token_s, r.kv_ready_s) {
                l.handoff.push(1e3 * (k - ft));
            }
        }
        if run.len() <= 200_000 {
            for &rid in &m.rids {
                l.itl
                    .extend(run.itls(rid as usize).into_iter().map(|x| 1e3 * x));
            }
        }
        l
    }
}

/// Latency CDFs, one line per run: cdf-ttft.svg, cdf-tpot.svg, cdf-itl.svg, cdf-e2e.svg and
/// cdf-handoff.svg (when any run has hand-offs).
pub fn cdfs(
    dir: &Path,
    runs: &[Latencies],
    slo: (f64, f64),
    written: &mut Vec<PathBuf>,
) -> Result<(), UsageError> {
    type Pick = fn(&Latencies) -> &Vec<f64>;
    let charts: [(&str, &str, &str, Pick, Option<f64>); 5] = [
        (
            "cdf-ttft.svg",
            "Time to first token",
            "TTFT (ms)",
            |l| &l.ttft,
            Some(1e3 * slo.0),
        ),
        (
            "cdf-tpot.svg",
            "Time per output token",
            "TPOT (ms)",
            |l| &l.tpot,
            Some(1e3 * slo.1),
        ),
        (
            "cdf-itl.svg",
            "Inter-token latency",
            "ITL (ms)",
            |l| &l.itl,
            None,
        ),
        (
            "cdf-e2e.svg",
            "End-to-end latency",
            "E2E (ms)",
            |l| &l.e2e,
            None,
        ),
        (
            "cdf-handoff.svg",
            "KV hand-off (first token to KV landed)",
            "hand-off (ms)",
            |l| &l.handoff,
            None,
        ),
    ];
    for (file, title, x, pick, slo_line) in charts {
        if file == "cdf-handoff.svg" && runs.iter().all(|r| r.handoff.is_empty()) {
            continue;
        }
        let positive = runs.iter().flat_map(|r| pick(r).iter()).all(|v| *v > 0.0);
        let mut axis = Axis::new(x);
        if positive {
            axis = axis.log();
        }
        let mut c = Cdf::new().title(title).x_axis(axis);
        for r in runs {
            c = c.series(r.name.clone(), pick(r));
        }
        if let Some(s) = slo_line {
            c = c.vline(s, "SLO");
        }
        write(dir, file, c.render(), written)?;
    }
    Ok(())
}

/// One sample: time, link queue, per instance (queue, KV reserved %).
type SampleRow = (f64, usize, Vec<(usize, f64)>);

/// An observer that records what the timeline chart needs: busy time per instance and for the
/// link in fixed buckets, and the sampler's queue depths and KV occupancy.
#[derive(Default)]
pub struct Timeline {
    names: Vec<String>,
    steps: Vec<(u32, f64, f64)>,
    transfers: Vec<(f64, f64)>,
    samples: Vec<SampleRow>,
    horizon: f64,
}

impl Observer for Timeline {
    fn begin(&mut self, instances: &[InstanceInfo]) {
        self.names = instances.iter().map(|i| i.name.clone()).collect();
    }
    fn step(&mut self, ev: &StepEvent) {
        self.steps.push((ev.instance as u32, ev.start, ev.dur));
    }
    fn transfer(&mut self, ev: &TransferEvent) {
        self.transfers.push((ev.start, ev.dur));
    }
    fn wants_samples(&self) -> bool {
        true
    }
    fn sample(&mut self, s: &Sample<'_>) {
        let per = s
            .instances
            .iter()
            .map(|i| {
                (
                    i.queue,
                    if i.kv_cap > 0 {
                        100.0 * i.kv_used as f64 / i.kv_cap as f64
                    } else {
                        0.0
                    },
                )
            })
            .collect();
        self.samples.push((s.t, s.link_queue, per));
    }
    fn end(&mut self, horizon: f64) {
        self.horizon = horizon;
    }
}

fn busy_buckets(
    spans: impl Iterator<Item = (f64, f64)>,
    width: f64,
    n: usize,
    capacity: f64,
) -> Vec<f64> {
    let mut b = vec![0.0; n];
    for (start, dur) in spans {
        let (mut t, end) = (start, start + dur);
        while t < end {
            let k = ((t / width) as usize).min(n - 1);
            let edge = ((k + 1) as f64 * width).min(end).max(t);
            b[k] += edge - t;
            if edge <= t {
                break;
            }
            t = edge;
        }
    }
    b.iter().map(|x| 100.0 * x / (width * capacity)).collect()
}

impl Timeline {
    /// timeline.svg: utilisation per instance and for the link; queue depths; KV occupancy.
    pub fn plot(
        &self,
        dir: &Path,
        channels: u32,
        written: &mut Vec<PathBuf>,
    ) -> Result<(), UsageError> {
        let n = 240usize;
        let h = if self.horizon > 0.0 {
            self.horizon
        } else {
            1.0
        };
        let w = h / n as f64;
        let xs: Vec<f64> = (0..n).map(|k| (k as f64 + 0.5) * w).collect();
        let mut util = Panel::new(Axis::new("Busy (%)").range(0.0, 100.0));
        for (i, name) in self.names.iter().enumerate() {
            let b = busy_buckets(
                self.steps
                    .iter()
                    .filter(|s| s.0 as usize == i)
                    .map(|s| (s.1, s.2)),
                w,
                n,
                1.0,
            );
            util = util.series(Series::from_xy(name.clone(), &xs, &b));
        }
        if !self.transfers.is_empty() {
            let b = busy_buckets(self.transfers.iter().copied(), w, n, channels.max(1) as f64);
            util = util.series(Series::from_xy("kv-link", &xs, &b).dashed());
        }
        // Thin the 0.05 s samples to at most ~1,000 points.
        let stride = (self.samples.len() / 1000).max(1);
        let rows: Vec<&SampleRow> = self.samples.iter().step_by(stride).collect();
        let ts: Vec<f64> = rows.iter().map(|r| r.0).collect();
        let mut queue = Panel::new(Axis::new("Queue (requests)"));
        let mut kv = Panel::new(Axis::new("KV reserved (%)").range(0.0, 100.0));
        for (i, name) in self.names.iter().enumerate() {
            let q: Vec<f64> = rows
                .iter()
                .map(|r| r.2.get(i).map_or(0.0, |x| x.0 as f64))
                .collect();
            queue = queue.series(Series::from_xy(name.clone(), &ts, &q));
            let k: Vec<f64> = rows
                .iter()
                .map(|r| r.2.get(i).map_or(0.0, |x| x.1))
                .collect();
            if !name.starts_with("prefill") {
                kv = kv.series(Series::from_xy(name.clone(), &ts, &k));
            }
        }
        if !self.transfers.is_empty() {
            let q: Vec<f64> = rows.iter().map(|r| r.1 as f64).collect();
            queue = queue.series(Series::from_xy("kv-link", &ts, &q).dashed());
        }
        let chart = TimeSeries::new()
            .title("Utilisation, queues and KV occupancy over time")
            .panel(util)
            .panel(queue)
            .panel(kv);
        write(dir, "timeline.svg", chart.render(), written)
    }
}

/// stages.svg: mean time per request in each stage, one stacked bar per configuration.
pub fn stages(
    dir: &Path,
    runs: &[(String, &Summary)],
    written: &mut Vec<PathBuf>,
) -> Result<(), UsageError> {
    let mut bars = StackedBars::new()
        .title("Where the time goes (mean per measured request)")
        .categories(runs.iter().map(|(n, _)| n.clone()))
        .value_axis(Axis::new("Time (ms)"));
    for (k, name) in STAGES.iter().enumerate() {
        let vals: Vec<f64> = runs
            .iter()
            .map(|(_, s)| 1e3 * s.stage_breakdown_s.as_array()[k])
            .collect();
        bars = bars.segment(name.to_string(), vals);
    }
    write(dir, "stages.svg", bars.render(), written)
}

/// Percentiles and SLO attainment against rate: ttft-vs-rate.svg, tpot-vs-rate.svg,
/// attainment-vs-rate.svg (goodput point: the highest rate of each line that meets `target`).
pub fn versus_rate(
    dir: &Path,
    lines: &[(String, Vec<(f64, Summary)>)],
    slo: (f64, f64),
    target: f64,
    written: &mut Vec<PathBuf>,
) -> Result<(), UsageError> {
    type Pick = fn(&Summary) -> (f64, f64);
    let charts: [(&str, &str, &str, Pick, f64); 2] = [
        (
            "ttft-vs-rate.svg",
            "TTFT against load",
            "TTFT (ms)",
            |s| (s.ttft_s.p50, s.ttft_s.p99),
            slo.0,
        ),
        (
            "tpot-vs-rate.svg",
            "TPOT against load",
            "TPOT (ms)",
            |s| (s.tpot_s.p50, s.tpot_s.p99),
            slo.1,
        ),
    ];
    for (file, title, y, pick, slo_s) in charts {
        let mut c = LineChart::new()
            .title(title)
            .x_axis(Axis::new("Request rate (req/s)"))
            .y_axis(Axis::new(y).log());
        for (k, (name, pts)) in lines.iter().enumerate() {
            let p99: Vec<(f64, f64)> = pts.iter().map(|(r, s)| (*r, 1e3 * pick(s).1)).collect();
            let p50: Vec<(f64, f64)> = pts.iter().map(|(r, s)| (*r, 1e3 * pick(s).0)).collect();
            let color = disagg_plot::palette(k);
            c = c
                .series(
                    Series::new(format!("{name} p99"), p99)
                        .color(color)
                        .marker(disagg_plot::Marker::Circle),
                )
                .series(
                    Series::new(format!("{name} p50"), p50)
                        .color(color)
                        .dashed()
                        .marker(disagg_plot::Marker::Square),
                );
        }
        c = c.hline(1e3 * slo_s, "SLO");
        write(dir, file, c.render(), written)?;
    }
    let mut c = LineChart::new()
        .title("SLO attainment against load")
        .x_axis(Axis::new("Request rate (req/s)"))
        .y_axis(Axis::new("SLO attainment (%)").percent().range(0.0, 1.0))
        .hline(target, format!("target {:.0}%", 100.0 * target));
    for (k, (name, pts)) in lines.iter().enumerate() {
        let color = disagg_plot::palette(k);
        let att: Vec<(f64, f64)> = pts.iter().map(|(r, s)| (*r, s.slo_attainment)).collect();
        c = c.series(
            Series::new(name.clone(), att.clone())
                .color(color)
                .marker(disagg_plot::Marker::Circle),
        );
        // The goodput point: the highest rate that still meets the target, when a higher one
        // misses it (otherwise the knee lies beyond the swept range and nothing is marked).
        let knee = att
            .iter()
            .filter(|(_, a)| *a >= target)
            .max_by(|x, y| x.0.total_cmp(&y.0));
        let beyond = |r: f64| att.iter().any(|(x, a)| *x > r && *a < target);
        if let Some((r, a)) = knee.filter(|(r, _)| beyond(*r)) {
            c = c.mark(MarkPoint::new(*r, *a, format!("{name}: {r} req/s")).color(color));
        }
    }
    write(dir, "attainment-vs-rate.svg", c.render(), written)
}

/// pareto.svg: cost against p99 latency of every feasible configuration, with the frontier.
pub fn pareto(
    dir: &Path,
    chart: &ParetoChart,
    written: &mut Vec<PathBuf>,
) -> Result<(), UsageError> {
    // The first points are numbered, with a key of their labels under the chart; the rest are
    // plain markers (a key of hundreds of lines would not help).
    let (numbered, rest) = chart.points.split_at(chart.points.len().min(MAX_NUMBERED));
    let mut s = Scatter::new()
        .title(chart.title.as_str())
        .x_axis(Axis::new(chart.x_title.as_str()))
        .y_axis(Axis::new(chart.y_title.as_str()))
        .numbered_points(
            "feasible configurations",
            numbered.iter().map(|(x, y, l)| (*x, *y, l.as_str())),
        );
    if !rest.is_empty() {
        s = s.points(
            format!("other feasible configurations ({})", rest.len()),
            rest.iter().map(|(x, y, _)| (*x, *y)),
        );
    }
    let s = s.frontier(
        "Pareto frontier",
        chart.front.iter().map(|(x, y, _)| (*x, *y)),
    );
    write(dir, "pareto.svg", s.render(), written)
}

/// How many points of a Pareto chart are numbered (and keyed).
pub const MAX_NUMBERED: usize = 30;

/// A Pareto chart of a plan: the points in rank order (x, y, short label) and the frontier.
pub struct ParetoChart {
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    pub points: Vec<(f64, f64, String)>,
    pub front: Vec<(f64, f64, String)>,
}

/// Prints what was written, one path a line, on stderr.
pub fn report(written: &[PathBuf]) {
    for p in written {
        eprintln!("wrote {}", disagg_model::escape(&p.display().to_string()));
    }
}
