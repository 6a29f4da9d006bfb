//! Writing plans: each format's emitter by name, the files of `plan --emit` (whole, all or
//! none), and the plans of a `--target-rate` search or a `--max-rate` answer.

use disagg_model::Catalogue;
use disagg_sim::Scenario;

use super::{dynamo, llmd, sglang, vllm, Deployment, Emit, Engine, Format, Header};
use crate::UsageError;

impl Format {
    /// The deployment in this format, under `header`'s comment lines. The script and llm-d
    /// formats fix the engine (`vllm.sh` and llm-d's modelservice run vLLM, `sglang.sh` SGLang);
    /// Dynamo runs the deployment's.
    pub fn emit(self, d: &Deployment, header: &Header) -> String {
        match self {
            Format::Dynamo => dynamo::emit(d, header),
            Format::LlmD => llmd::emit(&with_engine(d, Engine::Vllm), header),
            Format::Vllm => vllm::emit(&with_engine(d, Engine::Vllm), header),
            Format::Sglang => sglang::emit(&with_engine(d, Engine::Sglang), header),
        }
    }
}

fn with_engine(d: &Deployment, engine: Engine) -> Deployment {
    Deployment {
        engine,
        ..d.clone()
    }
}

/// Creates `dir` (and its missing parents, removed again if the command fails). Errors: `-`,
/// a path that is not a directory, a directory that cannot be created.
pub fn prepare_dir(dir: &std::path::Path) -> Result<(), UsageError> {
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError(format!(
            "--emit-dir: '{}' is not a directory",
            dir.display()
        )));
    }
    let missing: Vec<std::path::PathBuf> = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| std::fs::symlink_metadata(a).is_err())
        .map(std::path::Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir).map_err(|e| {
        UsageError(format!(
            "--emit-dir: cannot create '{}': {e}",
            dir.display()
        ))
    })?;
    crate::output::note_created_dirs(missing);
    Ok(())
}

/// Writes each plan of `plans` (best first) in every format of `e`: `DIR/FILE` for one plan,
/// `DIR/1/FILE`, `DIR/2/FILE` ... for several. Every file is written whole, and either all
/// are written or none; an existing file is replaced (as `--out` does). Returns the paths.
pub fn write_files(
    e: &Emit,
    plans: &[(Deployment, Header)],
) -> Result<Vec<std::path::PathBuf>, UsageError> {
    let mut files = Vec::new();
    for (k, (d, h)) in plans.iter().enumerate() {
        let dir = if plans.len() > 1 {
            e.dir.join((k + 1).to_string())
        } else {
            e.dir.clone()
        };
        for f in &e.formats {
            files.push((dir.join(f.file_name()), f.emit(d, h)));
        }
    }
    prepare_dir(&e.dir)?;
    let mut pending = Vec::new();
    for (path, text) in &files {
        if let Some(parent) = path.parent() {
            prepare_dir(parent)?;
        }
        let mut p = crate::output::Pending::create("--emit-dir", path)?;
        p.write_all(text.as_bytes())?;
        pending.push(p);
    }
    crate::output::land(pending, Ok(()))?;
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// The plans `plan --emit` writes for a `--target-rate` search: the best `e.top` ranked
/// candidates, each as the deployment of the scenario the search simulated for it
/// ([`crate::plan::Search::scenario_of`]) with its predicted figures.
pub fn target_plans(
    e: &Emit,
    search: &crate::plan::Search,
    t: &crate::plan::Targets,
    cat: &Catalogue,
) -> Result<Vec<(Deployment, Header)>, UsageError> {
    let rate = search.rate();
    let ranked = t.ranked();
    if ranked.is_empty() {
        return Err(UsageError(format!(
            "--emit: no configuration meets the SLOs at {rate} req/s: nothing to write"
        )));
    }
    let n = e.top.min(ranked.len());
    let mut out = Vec::new();
    for (k, c) in ranked.iter().take(n).enumerate() {
        let sc = search.scenario_of(c.index);
        let mut d = Deployment::from_scenario(&sc, cat, e.engine, e.gpus_per_node)?;
        if n > 1 {
            d.name = format!("{}-r{}", d.name, k + 1);
        }
        let mut h = Header::of_run(&sc, &d, cat, c.summary.as_ref())?;
        h.rank = Some((k + 1, n));
        h.usd_per_hour = c.usd_per_hour;
        h.slo_attainment_ci = c.slo_attainment_ci.as_ref().map(|e| (e.low, e.high));
        h.image.clone_from(&e.image);
        h.namespace = Some(e.namespace.clone());
        out.push((d, h));
    }
    Ok(out)
}

/// The plan `plan --emit` writes for `--max-rate`: the scenario as given at the rate found
/// (`max_rate_rps` of the plan's JSON; with a trace, its `time_scale` when the plan gives one).
pub fn max_rate_plan(
    e: &Emit,
    base: &Scenario,
    doc: &serde_json::Value,
    cat: &Catalogue,
) -> Result<(Deployment, Header), UsageError> {
    if e.top > 1 {
        return Err(UsageError(
            "--emit-top: --max-rate has one answer; --emit-top ranks --target-rate plans".into(),
        ));
    }
    let rate = doc["max_rate_rps"].as_f64();
    let mut sc = base.clone();
    match (doc["time_scale"].as_f64(), rate) {
        (Some(x), _) if sc.trace_file.is_some() => sc.time_scale = x,
        (_, Some(r)) if sc.trace_file.is_none() => sc.rate = r,
        _ => {}
    }
    let d = Deployment::from_scenario(&sc, cat, e.engine, e.gpus_per_node)?;
    let mut h = Header::of_run(&sc, &d, cat, None)?;
    h.rate_rps = rate;
    // The answer's estimate (`--search ci`): its mean and 95% interval.
    let a = &doc["attainment"];
    if let (Some(m), Some(lo), Some(hi)) =
        (a["mean"].as_f64(), a["low"].as_f64(), a["high"].as_f64())
    {
        h.slo_attainment = Some(m);
        h.slo_attainment_ci = Some((lo, hi));
    }
    h.image.clone_from(&e.image);
    h.namespace = Some(e.namespace.clone());
    Ok((d, h))
}
