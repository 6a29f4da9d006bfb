//! Writes one SVG of each chart type, with made-up but plausible serving data, into a directory:
//!
//! ```sh
//! cargo run -p disagg-plot --example gallery -- /tmp/gallery
//! ```

use std::path::{Path, PathBuf};

use disagg_plot::{
    pareto_front, Axis, BarOrientation, Cdf, Color, LegendPos, LineChart, MarkPoint, Marker, Panel,
    Scatter, Series, StackedBars, TimeSeries,
};

/// A tiny deterministic generator (64-bit LCG), so the gallery is the same every run.
struct Lcg(u64);

impl Lcg {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Roughly normal (Irwin–Hall with 12 terms).
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }

    fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }
}

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "gallery".into()));
    for path in write_gallery(&dir)? {
        println!("{}", path.display());
    }
    Ok(())
}

/// Writes the gallery into `dir` (created if needed) and returns the files written.
pub fn write_gallery(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Lcg(42);
    let written = std::cell::RefCell::new(Vec::new());
    let write = |name: &str, svg: String| -> std::io::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, svg)?;
        written.borrow_mut().push(path);
        Ok(())
    };

    // 1. Latency CDFs, one line per run (one run has 200,000 samples: capped to 2,000 points).
    let a: Vec<f64> = (0..200_000).map(|_| rng.lognormal(120.0, 0.35)).collect();
    let b: Vec<f64> = (0..5_000).map(|_| rng.lognormal(180.0, 0.6)).collect();
    let c: Vec<f64> = (0..5_000)
        .map(|_| rng.lognormal(60.0, 0.25) + if rng.uniform() < 0.05 { 900.0 } else { 0.0 })
        .collect();
    write(
        "cdf_ttft.svg",
        Cdf::new()
            .title("Time to first token, Llama-3-8B, 8 req/s")
            .x_axis(Axis::new("TTFT (ms)").log())
            .y_axis(Axis::new("Fraction of requests").range(0.0, 1.0).percent())
            .series("1P:1D over 25 GbE", &a)
            .series("1P:1D over 100 GbE, layer-wise", &b)
            .series("colocated (no hand-off)", &c)
            .vline(500.0, "TTFT SLO 500 ms")
            .hline(0.99, "p99")
            .render(),
    )?;

    // 2. TTFT p50/p99 against rate with the SLO line.
    let rates: Vec<f64> = (1..=12).map(f64::from).collect();
    let p = |base: f64, knee: f64, r: f64| base + 40.0 * r + 2000.0 / (knee - r).max(0.15);
    let mut chart = LineChart::new()
        .title("TTFT against request rate")
        .x_axis(Axis::new("Request rate (req/s)").include_zero())
        .y_axis(Axis::new("TTFT (ms)").log());
    for (i, (name, knee)) in [("25 GbE", 9.5), ("100 GbE", 12.8)].iter().enumerate() {
        let color = disagg_plot::palette(i);
        chart = chart
            .series(
                Series::new(
                    format!("{name} p99"),
                    rates.iter().map(|&r| (r, 1.8 * p(80.0, *knee, r))),
                )
                .color(color)
                .marker(Marker::Circle),
            )
            .series(
                Series::new(
                    format!("{name} p50"),
                    rates.iter().map(|&r| (r, p(40.0, *knee, r))),
                )
                .color(color)
                .dashed()
                .marker(Marker::Square),
            );
    }
    write(
        "ttft_vs_rate.svg",
        chart.hline(1000.0, "TTFT SLO 1 s (p99)").render(),
    )?;

    // 3. SLO attainment against rate with the goodput point.
    let att = |r: f64, knee: f64| 1.0 / (1.0 + ((r - knee) * 1.4).exp());
    let fine: Vec<f64> = (0..=28).map(|i| 0.5 * f64::from(i)).collect();
    write(
        "attainment.svg",
        LineChart::new()
            .title("SLO attainment (TTFT ≤ 1 s and TPOT ≤ 50 ms)")
            .x_axis(Axis::new("Request rate (req/s)"))
            .y_axis(
                Axis::new("Requests meeting both SLOs")
                    .range(0.0, 1.0)
                    .percent(),
            )
            .series(
                Series::new("1P:1D, 25 GbE", fine.iter().map(|&r| (r, att(r, 8.0))))
                    .marker(Marker::Circle),
            )
            .series(
                Series::new("2P:1D, 100 GbE", fine.iter().map(|&r| (r, att(r, 11.5))))
                    .marker(Marker::Square),
            )
            .hline(0.9, "target 90%")
            .mark(MarkPoint::new(9.9, 0.9, "goodput 9.9 req/s"))
            .render(),
    )?;

    // 4. Utilisation, queue depths and KV occupancy over time.
    let t: Vec<f64> = (0..=120).map(|i| f64::from(i) * 0.5).collect();
    let mut util = Panel::new(Axis::new("Utilisation").range(0.0, 1.0).percent());
    let mut queue = Panel::new(Axis::new("Queue depth (requests)").include_zero());
    let mut kv = Panel::new(Axis::new("KV occupancy").range(0.0, 1.0).percent());
    for (k, name) in ["prefill 0", "prefill 1", "decode 0", "decode 1"]
        .iter()
        .enumerate()
    {
        let ph = k as f64;
        let u: Vec<(f64, f64)> = t
            .iter()
            .map(|&x| {
                (
                    x,
                    (0.55 + 0.3 * (x / 7.0 + ph).sin() + 0.08 * rng.normal()).clamp(0.0, 1.0),
                )
            })
            .collect();
        util = util.series(Series::new(*name, u).step().width(1.5));
        let q: Vec<(f64, f64)> = t
            .iter()
            .map(|&x| {
                (
                    x,
                    ((x / 9.0 + ph).sin() * 6.0 + 4.0 + rng.normal())
                        .max(0.0)
                        .round(),
                )
            })
            .collect();
        queue = queue.series(Series::new(*name, q).step().width(1.5));
        if name.starts_with("decode") {
            let o: Vec<(f64, f64)> = t
                .iter()
                .map(|&x| (x, (0.3 + x / 100.0 + 0.05 * (x + ph).sin()).min(0.97)))
                .collect();
            kv = kv.series(Series::new(*name, o).width(1.5));
        }
    }
    let link: Vec<(f64, f64)> = t
        .iter()
        .map(|&x| (x, (0.35 + 0.25 * (x / 5.0).cos()).clamp(0.0, 1.0)))
        .collect();
    util = util.series(
        Series::new("link 25 GbE", link)
            .step()
            .color(Color::rgb(0, 0, 0))
            .dashed()
            .width(1.5),
    );
    kv = kv.hline(0.9, "eviction threshold");
    write(
        "timeseries.svg",
        TimeSeries::new()
            .title("Instances and link over time")
            .x_axis(Axis::new("Time (s)"))
            .panel(util)
            .panel(queue)
            .panel(kv)
            .render(),
    )?;

    // 5. Stacked stage breakdown per configuration (long names: horizontal bars).
    let configs = [
        "1P:1D Llama-3-8B H100 25 GbE",
        "1P:1D Llama-3-8B H100 100 GbE layer-wise",
        "2P:1D Llama-3-8B H100 IB NDR fp8",
        "1P:2D Llama-3-70B 4xH100 NVLink 4",
        "colocated Llama-3-8B H100",
    ];
    let stages = [
        ("queue", vec![35.0, 20.0, 8.0, 60.0, 110.0]),
        ("prefill", vec![140.0, 140.0, 70.0, 260.0, 150.0]),
        ("hand-off", vec![86.0, 21.5, 2.7, 3.5, 0.0]),
        ("decode", vec![520.0, 520.0, 540.0, 610.0, 700.0]),
    ];
    let mut bars = StackedBars::new()
        .title("Where a request's time goes")
        .value_axis(Axis::new("Mean time per request (ms)"))
        .categories(configs)
        .totals(true);
    for (name, v) in &stages {
        bars = bars.segment(*name, v.clone());
    }
    write("stages.svg", bars.clone().render())?;
    let short = StackedBars::new()
        .title("Stage breakdown (vertical)")
        .value_axis(Axis::new("Mean time per request (ms)"))
        .categories(["25G", "100G-lw", "IB-fp8", "NVL4", "coloc"])
        .segment("queue", stages[0].1.clone())
        .segment("prefill", stages[1].1.clone())
        .segment("hand-off", stages[2].1.clone())
        .segment("decode", stages[3].1.clone())
        .orientation(BarOrientation::Vertical)
        .legend(LegendPos::OutsideRight)
        .totals(true);
    write("stages_vertical.svg", short.render())?;

    // 6. The plan's Pareto frontier: cost against p99 latency.
    let mut pts = Vec::new();
    let mut labels = Vec::new();
    for (link, speed, price) in [("25G", 1.0, 0.0), ("IB", 1.6, 1.5)] {
        for p in 1..=4 {
            for d in 1..=3 {
                let cost = 2.5 * f64::from(p + d) + price + 0.5 * rng.uniform();
                let lat =
                    2600.0 / (f64::from(p) * 1.3 * speed + f64::from(d)) + 150.0 * rng.uniform();
                pts.push((cost, lat));
                labels.push(format!("{p}P:{d}D {link}"));
            }
        }
    }
    let front: Vec<(f64, f64)> = pareto_front(&pts, true, true)
        .into_iter()
        .map(|i| pts[i])
        .collect();
    write(
        "pareto.svg",
        Scatter::new()
            .title("Plan: cost against p99 latency")
            .x_axis(Axis::new("Cost ($/hour)"))
            .y_axis(Axis::new("p99 E2E latency (ms)"))
            .frontier("Pareto frontier", front)
            .labelled_points(
                "configurations",
                pts.iter().zip(&labels).map(|(p, l)| (p.0, p.1, l.clone())),
            )
            .hline(800.0, "SLO 800 ms")
            .render(),
    )?;

    // 7. Nothing to show.
    write(
        "empty.svg",
        LineChart::new()
            .title("No runs")
            .x_axis(Axis::new("Rate (req/s)"))
            .y_axis(Axis::new("TTFT (ms)"))
            .render(),
    )?;
    Ok(written.into_inner())
}
