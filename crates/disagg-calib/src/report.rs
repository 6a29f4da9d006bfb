//! The fit of every device with its errors (in-sample, leave-one-group-out, uncalibrated), the
//! catalogue TOML overlay and `evaluate`.

use std::collections::{BTreeMap, BTreeSet};

use disagg_model::custom::device_overlay_toml;
use disagg_model::{Calibration, Catalogue, CostOptions, Device, Link, GB};

use crate::fit::{self, fit_link, fit_params, predict, topology_of, LinkFit, Params, N_PARAMS};
use crate::measure::{Imported, Measurement, Phase};
use crate::CalibError;

/// Errors of one group (or of all rows).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupScore {
    /// `model/device/tpN` (or `all`).
    pub group: String,
    /// Rows scored.
    pub rows: usize,
    /// Prefill MAPE, percent (`None`: no prefill row).
    pub prefill_mape: Option<f64>,
    /// Decode MAPE, percent.
    pub decode_mape: Option<f64>,
}

/// One row with its predictions: what a plot of predicted against measured needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RowPrediction {
    /// `model/device/tpN`.
    pub group: String,
    /// Phase.
    pub phase: Phase,
    /// Sequences.
    pub batch: u64,
    /// Prompt or context tokens per sequence.
    pub tokens: u64,
    /// Measured seconds.
    pub measured_s: f64,
    /// The device fit's prediction (in-sample).
    pub predicted_s: f64,
    /// The prediction of the fit without this row's group (`None`: no such fit).
    pub cv_predicted_s: Option<f64>,
    /// The uncalibrated roofline's prediction.
    pub uncalibrated_s: f64,
}

impl RowPrediction {
    /// Measurement `r` with its fitted, held-out and uncalibrated predictions.
    fn of(
        r: &Measurement,
        predicted_s: f64,
        cv_predicted_s: Option<f64>,
        uncalibrated_s: f64,
    ) -> Self {
        RowPrediction {
            group: r.group.clone(),
            phase: r.phase,
            batch: r.batch,
            tokens: r.tokens,
            measured_s: r.seconds,
            predicted_s,
            cv_predicted_s,
            uncalibrated_s,
        }
    }
}

/// One device's (or device × TP's) fit.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceFit {
    /// The built-in device key.
    pub device: String,
    /// `Some(tp)` for a fit to one TP degree only.
    pub tp: Option<u32>,
    /// The fitted parameters.
    pub params: Params,
    /// The fitted scale-up link, if any.
    pub link: Option<LinkFit>,
    /// The scale-up link the fit used (the fitted one, or the device's).
    pub scale_up: String,
    /// Rows fitted.
    pub rows: usize,
    /// LM iterations.
    pub iterations: usize,
    /// Per group, in-sample.
    pub in_sample: Vec<GroupScore>,
    /// Per group, leave-one-group-out (empty for a per-TP fit).
    pub cv: Vec<GroupScore>,
    /// Per group, the uncalibrated roofline.
    pub uncalibrated: Vec<GroupScore>,
    /// All rows: in-sample, LOGO (pooled over held-out rows), uncalibrated.
    pub all: [GroupScore; 3],
}

/// The whole fit.
#[derive(Clone, Debug, PartialEq)]
pub struct FitReport {
    /// Per device (every TP pooled): what the overlay holds.
    pub devices: Vec<DeviceFit>,
    /// Per device × TP where the device has more than one TP degree (reported only).
    pub per_tp: Vec<DeviceFit>,
    /// Rows excluded, by reason.
    pub excluded: BTreeMap<String, usize>,
    /// Groups excluded with `--exclude`.
    pub excluded_groups: Vec<String>,
    /// Identical duplicate lines dropped.
    pub duplicates: usize,
    /// Measurement files.
    pub files: Vec<String>,
    /// Collective rows read, kernel-sum rows read (reported, not fitted).
    pub collectives: usize,
    /// Vidur kernel-sum rows read.
    pub kernels: usize,
    /// Every fitted row with its predictions.
    pub rows: Vec<RowPrediction>,
}

/// What to fit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitOptions {
    /// Only this device.
    pub device: Option<String>,
    /// Groups to leave out.
    pub exclude: Vec<String>,
}

/// Scores `rows` against `pred` per group (sorted by group) and over all rows.
pub fn scores(rows: &[&Measurement], pred: &[f64]) -> (Vec<GroupScore>, GroupScore) {
    let score = |name: &str, idx: &[usize]| {
        let ph = |p: Phase| {
            fit::mape(
                idx.iter()
                    .filter(|&&i| rows[i].phase == p)
                    .map(|&i| (pred[i], rows[i].seconds)),
            )
        };
        GroupScore {
            group: name.to_string(),
            rows: idx.len(),
            prefill_mape: ph(Phase::Prefill),
            decode_mape: ph(Phase::Decode),
        }
    };
    let mut by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        by.entry(r.group.as_str()).or_default().push(i);
    }
    let groups = by.iter().map(|(g, idx)| score(g, idx)).collect();
    let all: Vec<usize> = (0..rows.len()).collect();
    (groups, score("all", &all))
}

/// The key of a device's fit: `<dev>-fit`; of its link: `<dev>-fit-link`.
pub fn fit_key(device: &str) -> String {
    format!("{device}-fit")
}

fn link_of(fit: &LinkFit, device: &str, base: &Link) -> Link {
    Link {
        key: format!("{}-link", fit_key(device)),
        name: format!(
            "{} scale-up fitted to {} all-reduce",
            base.name, fit.topology
        ),
        bandwidth_bps: fit.bandwidth_bps,
        latency_s: fit.latency_s,
        channels: base.channels,
        pj_per_bit: base.pj_per_bit,
    }
}

/// The default step overhead of the uncalibrated roofline.
pub fn default_overhead() -> f64 {
    CostOptions::default().step_overhead_s
}

fn fit_one(
    cat: &Catalogue,
    work: &Catalogue,
    base: &Device,
    link: Option<&LinkFit>,
    rows: &[&Measurement],
    tp: Option<u32>,
    logo: bool,
) -> Result<(DeviceFit, Vec<RowPrediction>), CalibError> {
    let (params, st) = fit_params(work, base, rows)?;
    // The cost model of the fitted device itself (its step_time adds the overheads), as a run on
    // the overlay's `<dev>-fit` computes it.
    let fitted = params.device(base);
    let pred = predict(work, &fitted, rows)?;
    let builtin = cat.device(&base.key)?;
    let unc = predict(cat, builtin, rows)?;
    let groups: BTreeSet<&str> = rows.iter().map(|r| r.group.as_str()).collect();
    let mut cv_pred: Vec<Option<f64>> = vec![None; rows.len()];
    if logo && groups.len() > 1 {
        for g in &groups {
            let rest: Vec<&Measurement> = rows.iter().copied().filter(|r| r.group != *g).collect();
            if rest.len() < N_PARAMS {
                continue;
            }
            let (p, _) = fit_params(work, base, &rest)?;
            let held: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].group == *g).collect();
            let hr: Vec<&Measurement> = held.iter().map(|&i| rows[i]).collect();
            let hp = predict(work, &p.device(base), &hr)?;
            for (k, &i) in held.iter().enumerate() {
                cv_pred[i] = Some(hp[k]);
            }
        }
    }
    let (in_sample, in_all) = scores(rows, &pred);
    let (uncalibrated, unc_all) = scores(rows, &unc);
    let scored: Vec<usize> = (0..rows.len()).filter(|&i| cv_pred[i].is_some()).collect();
    let cv_rows: Vec<&Measurement> = scored.iter().map(|&i| rows[i]).collect();
    let cv_vals: Vec<f64> = scored
        .iter()
        .map(|&i| cv_pred[i].unwrap_or(f64::NAN))
        .collect();
    let (cv, cv_all) = scores(&cv_rows, &cv_vals);
    let out = rows
        .iter()
        .enumerate()
        .map(|(i, r)| RowPrediction::of(r, pred[i], cv_pred[i], unc[i]))
        .collect();
    Ok((
        DeviceFit {
            device: base.key.clone(),
            tp,
            params,
            link: link.cloned(),
            scale_up: base.scale_up.clone(),
            rows: rows.len(),
            iterations: st.iterations,
            in_sample,
            cv,
            uncalibrated,
            all: [in_all, cv_all, unc_all],
        },
        out,
    ))
}

/// Fits every device of `data` (or `opts.device`): the pooled fit with its LOGO errors, and one
/// fit per TP degree when the device has several.
pub fn fit_all(
    data: &Imported,
    cat: &Catalogue,
    opts: &FitOptions,
    files: &[String],
) -> Result<FitReport, CalibError> {
    let kept: Vec<&Measurement> = data
        .measurements
        .iter()
        .filter(|m| !opts.exclude.contains(&m.group))
        .filter(|m| opts.device.as_ref().is_none_or(|d| &m.device == d))
        .collect();
    if let Some(d) = &opts.device {
        cat.device(d)?;
    }
    for g in &opts.exclude {
        if !data.measurements.iter().any(|m| &m.group == g) {
            return Err(CalibError(format!(
                "--exclude {g}: no such group in the measurements"
            )));
        }
    }
    if kept.is_empty() {
        return Err(CalibError("no step-time rows to fit".into()));
    }
    let devices: BTreeSet<&str> = kept.iter().map(|m| m.device.as_str()).collect();
    let mut report = FitReport {
        devices: Vec::new(),
        per_tp: Vec::new(),
        excluded: data.excluded.clone(),
        excluded_groups: opts.exclude.clone(),
        duplicates: data.duplicates,
        files: files.to_vec(),
        collectives: data.collectives.len(),
        kernels: data.kernels.len(),
        rows: Vec::new(),
    };
    for dev in devices {
        let rows: Vec<&Measurement> = kept.iter().copied().filter(|m| m.device == dev).collect();
        let mut work = cat.clone();
        let mut base = cat.device(dev)?.clone();
        let needs_link = rows.iter().any(|r| r.tp > 1);
        let lf = match topology_of(dev) {
            Some(t) if needs_link => fit_link(&data.collectives, t)?.map(writable_link),
            _ => None,
        };
        if let Some(f) = &lf {
            let l = link_of(f, dev, cat.link(&base.scale_up)?);
            base.scale_up = l.key.clone();
            work.put_link(l)?;
        }
        let (df, preds) = fit_one(cat, &work, &base, lf.as_ref(), &rows, None, true)?;
        report.devices.push(df);
        report.rows.extend(preds);
        let tps: BTreeSet<u32> = rows.iter().map(|r| r.tp).collect();
        if tps.len() > 1 {
            for tp in tps {
                let sub: Vec<&Measurement> = rows.iter().copied().filter(|r| r.tp == tp).collect();
                let (df, _) = fit_one(cat, &work, &base, lf.as_ref(), &sub, Some(tp), false)?;
                report.per_tp.push(df);
            }
        }
    }
    Ok(report)
}

/// The nearest value to `x` that the catalogue file's `unit` (GB/s, us) writes exactly:
/// `(y / unit) * unit == y`, found by repeating `y = (y / unit) * unit` from `x` (each step moves
/// by at most an ulp or two). `None` if that does not settle in 16 steps.
pub fn writable_in_units(x: f64, unit: f64) -> Option<f64> {
    let mut y = x;
    for _ in 0..16 {
        let z = (y / unit) * unit;
        if z == y {
            return Some(y);
        }
        y = z;
    }
    None
}

/// A fitted link with its rates rounded to the nearest values the overlay writes exactly
/// (bandwidth in GB/s, latency in us), so the fit's predictions are the overlay's: a change of a
/// few ulps, far below the fit's precision. A rate that does not settle is kept (the writer then
/// refuses it).
fn writable_link(l: LinkFit) -> LinkFit {
    LinkFit {
        bandwidth_bps: writable_in_units(l.bandwidth_bps, GB).unwrap_or(l.bandwidth_bps),
        latency_s: writable_in_units(l.latency_s, 1e-6).unwrap_or(l.latency_s),
        ..l
    }
}

/// Refuses an overlay key that names a built-in device or link: the overlay would replace it
/// for every command that reads it.
pub fn refuse_builtin_key(kind: &str, key: &str) -> Result<(), CalibError> {
    let b = Catalogue::builtin();
    let taken = match kind {
        "link" => b.link(key).is_ok(),
        _ => b.device(key).is_ok(),
    };
    if taken {
        return Err(CalibError(format!(
            "cannot write {kind} '{key}': the built-in catalogue has a {kind} of that key"
        )));
    }
    Ok(())
}

/// A MAPE in percent as the fraction the catalogue's `calibration` holds; an error naming the
/// device and what is missing when there is none.
fn fraction(v: Option<f64>, key: &str, what: &str) -> Result<f64, CalibError> {
    v.map(|x| x / 100.0).ok_or_else(|| {
        CalibError(format!(
            "cannot write the calibration of {key}: no {what} (it needs prefill and decode rows \
             in at least two groups)"
        ))
    })
}

impl FitReport {
    /// The fitted devices and links of the overlay: `<dev>-fit` is the base device with the
    /// fitted `flops_eff`, `bw_eff`, overheads, scale-up link and its `calibration`
    /// provenance; `<dev>-fit-link` the fitted scale-up link, when one was fitted.
    pub fn fitted(
        &self,
        cat: &Catalogue,
        tool: &str,
    ) -> Result<(Vec<Device>, Vec<Link>), CalibError> {
        let mut devices = Vec::new();
        let mut links = Vec::new();
        for d in &self.devices {
            let b = cat.device(&d.device)?;
            let key = fit_key(&d.device);
            refuse_builtin_key("device", &key)?;
            if let Some(l) = &d.link {
                let link = link_of(l, &d.device, cat.link(&b.scale_up)?);
                refuse_builtin_key("link", &link.key)?;
                links.push(link);
            }
            let method = format!(
                "Levenberg-Marquardt, soft-L1 (delta {}) IRLS on log error; {} rows; \
                 leave-one-group-out CV by model/device/tp{}",
                fit::DELTA,
                d.rows,
                match &d.link {
                    Some(l) => format!(
                        "; scale-up fitted to {} rows of {} all-reduce (MAPE {:.1}%)",
                        l.rows, l.topology, l.mape
                    ),
                    None => String::new(),
                }
            );
            let calibration = Calibration {
                measurements: file_names(&self.files),
                fit: method,
                groups: d.in_sample.iter().map(|g| g.group.clone()).collect(),
                in_sample_prefill_mape: fraction(d.all[0].prefill_mape, &key, "prefill rows")?,
                in_sample_decode_mape: fraction(d.all[0].decode_mape, &key, "decode rows")?,
                cv_prefill_mape: fraction(d.all[1].prefill_mape, &key, "LOGO prefill error")?,
                cv_decode_mape: fraction(d.all[1].decode_mape, &key, "LOGO decode error")?,
                tool: tool.to_string(),
            };
            let base = Device {
                scale_up: d.scale_up.clone(),
                ..b.clone()
            };
            devices.push(Device {
                key: key.clone(),
                name: format!("{} (fitted)", b.name),
                calibration: Some(calibration),
                ..d.params.device(&base)
            });
        }
        Ok((devices, links))
    }

    /// The catalogue overlay (`--catalogue`): the devices and links of [`FitReport::fitted`]
    /// written by the catalogue's own writer, which reads back bit for bit.
    pub fn overlay(&self, cat: &Catalogue, tool: &str) -> Result<String, CalibError> {
        let (devices, links) = self.fitted(cat, tool)?;
        let body = device_overlay_toml(&devices, &links)?;
        Ok(format!(
            "# Catalogue overlay written by {tool}: devices fitted to measured step times \
             (see [devices.*.calibration]).\n{body}"
        ))
    }
}

/// The file name of a path (the whole string when it has none).
fn file_name(p: &str) -> String {
    std::path::Path::new(p)
        .file_name()
        .map_or_else(|| p.to_string(), |n| n.to_string_lossy().into_owned())
}

/// The measurement files as the provenance names them: the file name, with its parent directory
/// (`a100_dgx/all_reduce.csv`) when another file has the same name.
pub fn file_names(files: &[String]) -> Vec<String> {
    files
        .iter()
        .map(|f| {
            let n = file_name(f);
            let shared = files.iter().filter(|g| file_name(g) == n).count() > 1;
            let parent = std::path::Path::new(f)
                .parent()
                .and_then(|p| p.file_name())
                .map(|p| p.to_string_lossy().into_owned());
            match parent {
                Some(p) if shared => format!("{p}/{n}"),
                _ => n,
            }
        })
        .collect()
}

/// `evaluate`'s result.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Rows scored.
    pub rows: usize,
    /// Prefill MAPE over all rows, percent.
    pub prefill_mape: Option<f64>,
    /// Decode MAPE over all rows, percent.
    pub decode_mape: Option<f64>,
    /// Per group.
    pub groups: Vec<GroupScore>,
    /// Every row with its prediction (`cv_predicted_s` and `uncalibrated_s` as the built-in).
    pub predictions: Vec<RowPrediction>,
}

/// Scores `measurements` on `cat` (the built-in catalogue plus any `--catalogue` overlay):
/// `<dev>-fit` when the catalogue has it, else the device itself, each through its own cost model
/// (overheads included).
pub fn evaluate(measurements: &[Measurement], cat: &Catalogue) -> Result<Evaluation, CalibError> {
    let rows: Vec<&Measurement> = measurements.iter().collect();
    let mut pred = vec![0.0; rows.len()];
    let mut unc = vec![0.0; rows.len()];
    let devs: BTreeSet<&str> = rows.iter().map(|r| r.device.as_str()).collect();
    for dev in devs {
        let idx: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].device == dev).collect();
        let sub: Vec<&Measurement> = idx.iter().map(|&i| rows[i]).collect();
        let key = fit_key(dev);
        let d = match cat.device(&key) {
            Ok(d) => d,
            Err(_) => cat.device(dev)?,
        };
        let p = predict(cat, d, &sub)?;
        let u = predict(cat, cat.device(dev)?, &sub)?;
        for (k, &i) in idx.iter().enumerate() {
            pred[i] = p[k];
            unc[i] = u[k];
        }
    }
    let (groups, all) = scores(&rows, &pred);
    let predictions = rows
        .iter()
        .enumerate()
        .map(|(i, r)| RowPrediction::of(r, pred[i], None, unc[i]))
        .collect();
    Ok(Evaluation {
        rows: rows.len(),
        prefill_mape: all.prefill_mape,
        decode_mape: all.decode_mape,
        groups,
        predictions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::group_key;
    use crate::test_models::catalogue;

    fn row(model: &str, dev: &str, tp: u32, phase: Phase, b: u64, t: u64) -> Measurement {
        Measurement {
            model: model.into(),
            device: dev.into(),
            devices: tp,
            tp,
            phase,
            batch: b,
            tokens: t,
            seconds: 1.0,
            source: "t".into(),
            group: group_key(model, dev, tp),
        }
    }

    fn synthetic(cat: &Catalogue, truth: &Params, dev: &str) -> Vec<Measurement> {
        let mut rows = Vec::new();
        for (model, tp) in [("llama2-7b", 1), ("llama2-70b", 4), ("llama2-70b", 8)] {
            for (phase, b, t) in [
                (Phase::Prefill, 1, 256),
                (Phase::Prefill, 1, 2048),
                (Phase::Prefill, 4, 512),
                (Phase::Decode, 1, 600),
                (Phase::Decode, 8, 700),
                (Phase::Decode, 32, 900),
            ] {
                rows.push(row(model, dev, tp, phase, b, t));
            }
        }
        let d = truth.device(cat.device(dev).unwrap());
        let refs: Vec<&Measurement> = rows.iter().collect();
        let p = predict(cat, &d, &refs).unwrap();
        rows.into_iter()
            .zip(p)
            .map(|(r, s)| Measurement { seconds: s, ..r })
            .collect()
    }

    /// The built-in catalogue with `text` applied, as the global `--catalogue` reads it.
    fn read_back(text: &str) -> Catalogue {
        let f: disagg_model::custom::CatalogueFile = toml::from_str(text).unwrap();
        let mut c = Catalogue::builtin();
        f.apply(&mut c).unwrap();
        c
    }

    #[test]
    fn scores_group_and_pool() {
        let mut a = row("llama2-7b", "a100", 1, Phase::Prefill, 1, 10);
        let mut b = row("llama2-7b", "a100", 1, Phase::Decode, 1, 10);
        let mut c = row("llama2-70b", "a100", 2, Phase::Prefill, 1, 10);
        a.seconds = 1.0;
        b.seconds = 2.0;
        c.seconds = 4.0;
        let (g, all) = scores(&[&a, &b, &c], &[1.1, 1.0, 5.0]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].group, "llama2-70b/a100/tp2");
        // |5-4|/4 = 25 %
        assert_eq!(g[0].prefill_mape, Some(25.0));
        assert_eq!(g[0].decode_mape, None);
        assert_eq!(g[1].rows, 2);
        // |1.0-2|/2 = 50 %
        assert_eq!(g[1].decode_mape, Some(50.0));
        // prefill over all: (0.1 + 0.25) / 2
        assert_eq!(
            all.prefill_mape,
            Some(100.0 * ((1.1f64 - 1.0) / 1.0 + 0.25) / 2.0)
        );
        assert_eq!(all.rows, 3);
        assert_eq!(fit_key("h100"), "h100-fit");
        assert_eq!(default_overhead(), 0.5e-3);
    }

    /// Leave-one-group-out: each group is predicted by a fit of the other groups only. Two
    /// groups follow one device exactly, the third takes 1.5 times as long: fitted without it,
    /// the device is recovered exactly and misses every row of it by exactly 1/3; a fit that
    /// saw the held-out group (a leak) bends towards it and misses by less, as the in-sample fit
    /// does.
    #[test]
    fn logo_predicts_each_group_from_the_other_groups_only() {
        let cat = catalogue();
        let truth = Params {
            flops_eff: 0.58,
            bw_eff: 0.66,
            step_overhead_s: 6e-3,
            per_seq_overhead_s: 5e-5,
        };
        let slow = group_key("llama2-70b", "h100", 8);
        let measurements: Vec<Measurement> = synthetic(&cat, &truth, "h100")
            .into_iter()
            .map(|r| {
                let k = if r.group == slow { 1.5 } else { 1.0 };
                Measurement {
                    seconds: k * r.seconds,
                    ..r
                }
            })
            .collect();
        let data = Imported {
            measurements,
            ..Imported::default()
        };
        let r = fit_all(&data, &cat, &FitOptions::default(), &["syn.csv".into()]).unwrap();
        let d = &r.devices[0];
        let cv = |g: &str| d.cv.iter().find(|s| s.group == g).unwrap().clone();
        let held = cv(&slow);
        let third = 100.0 / 3.0;
        for e in [held.prefill_mape.unwrap(), held.decode_mape.unwrap()] {
            assert!((e - third).abs() < 1e-3, "{held:?}");
        }
        // The row predictions say the same: truth's time for every held-out row.
        for p in r.rows.iter().filter(|p| p.group == slow) {
            let cvp = p.cv_predicted_s.unwrap();
            assert!((cvp * 1.5 / p.measured_s - 1.0).abs() < 1e-5, "{p:?}");
        }
        // The in-sample fit saw the slow group: it misses it by clearly less.
        let ins = d.in_sample.iter().find(|s| s.group == slow).unwrap();
        assert!(ins.prefill_mape.unwrap() < third - 1.0, "{ins:?}");
        // And the exact groups, each held out in turn, are predicted by fits that saw the slow
        // group: not exactly.
        for g in d.cv.iter().filter(|s| s.group != slow) {
            assert!(g.prefill_mape.unwrap() > 1.0, "{g:?}");
        }
    }

    #[test]
    fn fit_all_recovers_exact_data_and_cv_is_exact_too() {
        let cat = catalogue();
        let truth = Params {
            flops_eff: 0.58,
            bw_eff: 0.66,
            step_overhead_s: 6e-3,
            per_seq_overhead_s: 5e-5,
        };
        let data = Imported {
            measurements: synthetic(&cat, &truth, "h100"),
            ..Imported::default()
        };
        let r = fit_all(&data, &cat, &FitOptions::default(), &["syn.csv".into()]).unwrap();
        assert_eq!(r.devices.len(), 1);
        let d = &r.devices[0];
        assert!((d.params.flops_eff / 0.58 - 1.0).abs() < 1e-6);
        assert!((d.params.per_seq_overhead_s / 5e-5 - 1.0).abs() < 1e-6);
        assert_eq!(d.cv.len(), 3);
        for g in d.cv.iter().chain(&d.in_sample) {
            assert!(g.prefill_mape.unwrap() < 1e-4, "{g:?}");
            assert!(g.decode_mape.unwrap() < 1e-4, "{g:?}");
        }
        // The built-in h100 (0.55, 0.80, 0.5 ms) is off on this data.
        assert!(d.all[2].prefill_mape.unwrap() > 1.0);
        // Three TP degrees: three per-TP fits, no CV on them.
        assert_eq!(r.per_tp.len(), 3);
        assert!(r.per_tp.iter().all(|f| f.cv.is_empty() && f.tp.is_some()));
        assert_eq!(r.rows.len(), 18);
        assert!(r.rows.iter().all(|x| x.cv_predicted_s.is_some()));
        // No collectives: the device's own scale-up link.
        assert_eq!(d.scale_up, "nvlink4");
        assert!(d.link.is_none());

        // The overlay reads back and evaluates to the same predictions.
        let text = r.overlay(&cat, "disagg calibrate test").unwrap();
        assert!(text.contains("[devices.h100-fit]"));
        assert!(!text.contains("[links."));
        let c2 = read_back(&text);
        let fd = c2.device("h100-fit").unwrap();
        assert_eq!(fd.flops_eff, d.params.flops_eff);
        assert_eq!(fd.bw_eff, d.params.bw_eff);
        assert_eq!(fd.step_overhead_s, Some(d.params.step_overhead_s));
        assert_eq!(fd.per_seq_overhead_s, Some(d.params.per_seq_overhead_s));
        assert_eq!(
            fd.name,
            format!("{} (fitted)", cat.device("h100").unwrap().name)
        );
        let c = fd.calibration.as_ref().unwrap();
        assert_eq!(c.measurements, vec!["syn.csv".to_string()]);
        assert_eq!(c.groups.len(), 3);
        assert_eq!(c.tool, "disagg calibrate test");
        // Fractions: the report's percent / 100.
        assert_eq!(
            c.in_sample_prefill_mape,
            d.all[0].prefill_mape.unwrap() / 100.0
        );
        assert_eq!(
            c.in_sample_decode_mape,
            d.all[0].decode_mape.unwrap() / 100.0
        );
        assert_eq!(c.cv_prefill_mape, d.all[1].prefill_mape.unwrap() / 100.0);
        assert_eq!(c.cv_decode_mape, d.all[1].decode_mape.unwrap() / 100.0);
        assert!(
            !c.fit.contains('\n') && c.fit.contains("18 rows"),
            "{}",
            c.fit
        );
        // The overlay's device reproduces the fit's in-sample errors bit for bit.
        let ev = evaluate(&data.measurements, &c2).unwrap();
        assert_eq!(ev.rows, 18);
        assert_eq!(ev.prefill_mape, d.all[0].prefill_mape);
        assert_eq!(ev.decode_mape, d.all[0].decode_mape);
        assert_eq!(ev.groups, d.in_sample);
        // Without the fit: the built-in's error.
        let ev0 = evaluate(&data.measurements, &cat).unwrap();
        assert_eq!(ev0.prefill_mape, d.all[2].prefill_mape);
        assert_eq!(ev0.decode_mape, d.all[2].decode_mape);
    }

    #[test]
    fn link_fit_goes_into_the_device_and_overlay() {
        let cat = catalogue();
        let mut data = Imported::default();
        let (bw, lat) = (1.5e11, 9e-6);
        for n in [2u32, 4, 8] {
            for s in [4096.0, 262144.0, 16777216.0] {
                data.collectives.push(crate::measure::Collective {
                    collective: "all_reduce".into(),
                    topology: "a100_dgx".into(),
                    workers: n,
                    devices_per_node: n,
                    size: s,
                    seconds: fit::ring_all_reduce(n, s, bw, lat),
                    source: "t".into(),
                });
            }
        }
        let truth = Params {
            flops_eff: 0.5,
            bw_eff: 0.7,
            step_overhead_s: 8e-3,
            per_seq_overhead_s: 1e-4,
        };
        let mut c2 = cat.clone();
        let lf = fit_link(&data.collectives, "a100_dgx").unwrap().unwrap();
        let l = link_of(&lf, "a100", cat.link("nvlink3").unwrap());
        assert_eq!(l.key, "a100-fit-link");
        c2.put_link(l.clone()).unwrap();
        let mut dev = cat.device("a100").unwrap().clone();
        dev.scale_up = l.key.clone();
        c2.put_device(dev).unwrap();
        data.measurements = synthetic(&c2, &truth, "a100");
        let r = fit_all(&data, &cat, &FitOptions::default(), &[]).unwrap();
        let d = &r.devices[0];
        assert_eq!(d.scale_up, "a100-fit-link");
        assert!((d.params.step_overhead_s / 8e-3 - 1.0).abs() < 1e-6);
        let text = r.overlay(&cat, "t").unwrap();
        assert!(text.contains("[links.a100-fit-link]"), "{text}");
        assert!(text.contains("scale_up = \"a100-fit-link\""));
        // Read back (with the models), the overlay predicts its own rows as the fit did.
        let c3 = read_back(&text);
        let l3 = c3.link("a100-fit-link").unwrap();
        assert!(
            (l3.bandwidth_bps / 1.5e11 - 1.0).abs() < 1e-9,
            "{}",
            l3.bandwidth_bps
        );
        assert!((l3.latency_s / 9e-6 - 1.0).abs() < 1e-9, "{}", l3.latency_s);
        assert_eq!(l3.pj_per_bit, cat.link("nvlink3").unwrap().pj_per_bit);
        assert_eq!(c3.device("a100-fit").unwrap().scale_up, "a100-fit-link");
        // The link as fitted, rounded to what the file writes exactly (GB/s, us).
        let lf = d.link.as_ref().unwrap();
        assert_eq!(
            (l3.bandwidth_bps, l3.latency_s),
            (lf.bandwidth_bps, lf.latency_s)
        );
        assert_eq!((l3.bandwidth_bps / GB) * GB, l3.bandwidth_bps);
        assert_eq!((l3.latency_s / 1e-6) * 1e-6, l3.latency_s);
        let ev = evaluate(&data.measurements, &c3).unwrap();
        assert_eq!(ev.prefill_mape, d.all[0].prefill_mape);
        assert_eq!(ev.decode_mape, d.all[0].decode_mape);
        assert!(
            ev.prefill_mape.unwrap() < 1e-4 && ev.decode_mape.unwrap() < 1e-4,
            "{ev:?}"
        );
        let fd = c3.device("a100-fit").unwrap();
        let bd = cat.device("a100").unwrap();
        assert_eq!(
            (
                fd.peak_flops,
                fd.mem_bw,
                fd.mem_capacity,
                fd.tdp_w,
                fd.idle_w
            ),
            (
                bd.peak_flops,
                bd.mem_bw,
                bd.mem_capacity,
                bd.tdp_w,
                bd.idle_w
            )
        );
        assert_eq!(
            (fd.pj_per_flop, fd.pj_per_byte),
            (bd.pj_per_flop, bd.pj_per_byte)
        );
        // exclusion and device filter
        let o = FitOptions {
            device: None,
            exclude: vec!["llama2-7b/a100/tp1".into()],
        };
        let r2 = fit_all(&data, &cat, &o, &[]).unwrap();
        assert_eq!(r2.devices[0].rows, 12);
        let bad = FitOptions {
            device: None,
            exclude: vec!["x/y/tp1".into()],
        };
        let e = fit_all(&data, &cat, &bad, &[]).unwrap_err();
        assert_eq!(e.0, "--exclude x/y/tp1: no such group in the measurements");
        let none = FitOptions {
            device: Some("h100".into()),
            exclude: vec![],
        };
        assert_eq!(
            fit_all(&data, &cat, &none, &[]).unwrap_err().0,
            "no step-time rows to fit"
        );
    }

    #[test]
    fn overlay_refusals_and_writable_units() {
        // A key of the built-in catalogue is refused; a new one passes.
        assert_eq!(
            refuse_builtin_key("device", "h100").unwrap_err().0,
            "cannot write device 'h100': the built-in catalogue has a device of that key"
        );
        assert!(refuse_builtin_key("device", "h100-fit").is_ok());
        assert!(refuse_builtin_key("link", "nvlink4").is_err());
        assert!(refuse_builtin_key("link", "h100-fit-link").is_ok());
        // A report whose device has no LOGO error (one group) cannot write its calibration.
        let cat = catalogue();
        let mut one = synthetic(
            &cat,
            &Params {
                flops_eff: 0.5,
                bw_eff: 0.6,
                step_overhead_s: 1e-3,
                per_seq_overhead_s: 1e-4,
            },
            "a100",
        );
        one.retain(|m| m.tp == 1);
        let data = Imported {
            measurements: one,
            ..Imported::default()
        };
        let r = fit_all(&data, &cat, &FitOptions::default(), &["/x/one.csv".into()]).unwrap();
        let e = r.overlay(&cat, "t").unwrap_err();
        assert!(
            e.0.starts_with("cannot write the calibration of a100-fit: no LOGO prefill error"),
            "{}",
            e.0
        );
        assert_eq!(file_name("/x/one.csv"), "one.csv");
        assert_eq!(file_name("one.csv"), "one.csv");
        assert_eq!(
            file_names(&[
                "/d/perf_model.csv".into(),
                "/n/a100_dgx/all_reduce.csv".into(),
                "/n/h100_dgx/all_reduce.csv".into(),
                "x.csv".into(),
            ]),
            [
                "perf_model.csv",
                "a100_dgx/all_reduce.csv",
                "h100_dgx/all_reduce.csv",
                "x.csv"
            ]
        );
        // Percent to fraction: 7.5 % is 0.075.
        assert_eq!(fraction(Some(7.5), "k", "w").unwrap(), 7.5 / 100.0);
        // Units: 0.1 us is not (0.1e-6 / 1e-6) * 1e-6; the nearest writable value is within an ulp
        // or two and is a fixed point.
        for (x, u) in [
            (1.234_567_891e11, GB),
            (0.1e-6, 1e-6),
            (9.87e-6, 1e-6),
            (3.0e11, GB),
        ] {
            let y = writable_in_units(x, u).unwrap();
            assert_eq!((y / u) * u, y, "{x}");
            assert!((y - x).abs() <= 4.0 * f64::EPSILON * x, "{x} -> {y}");
        }
        // Already writable: unchanged.
        assert_eq!(writable_in_units(3.0e11, GB), Some(3.0e11));
        // A fitted link whose rates the file's units cannot write is moved to ones it can.
        let odd = |u: f64, from: f64| {
            (1..10_000)
                .map(|k| from * (1.0 + k as f64 * 1e-7))
                .find(|x| (x / u) * u != *x)
                .unwrap()
        };
        // (Dividing and multiplying by 1e9 round-trips every bandwidth tried; microseconds do not.)
        let (bw, lat) = (1.5e11 * (1.0 + 1e-7), odd(1e-6, 9e-6));
        let l = writable_link(LinkFit {
            bandwidth_bps: bw,
            latency_s: lat,
            rows: 7,
            topology: "a100_dgx".into(),
            mape: 1.5,
        });
        assert_eq!(l.bandwidth_bps, bw);
        assert_ne!(l.latency_s, lat);
        assert_eq!((l.bandwidth_bps / GB) * GB, l.bandwidth_bps);
        assert_eq!((l.latency_s / 1e-6) * 1e-6, l.latency_s);
        assert!((l.bandwidth_bps / bw - 1.0).abs() < 1e-15);
        assert!((l.latency_s / lat - 1.0).abs() < 1e-15);
        assert_eq!((l.rows, l.topology.as_str(), l.mape), (7, "a100_dgx", 1.5));
    }
}
