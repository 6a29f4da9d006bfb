//! `disagg run --deployment FILE`: a serving stack's file read into a [`Deployment`]
//! (`docs/deployment.md#mapping`).
//!
//! [`read_with`] detects the format (a Dynamo `DynamoGraphDeployment`, `nvidia.com/v1beta1` or
//! `v1alpha1`, in [`dynamo`]; llm-d modelservice values in [`llmd`]), reads each worker role's
//! replicas, GPUs, node selector and engine command line ([`engine`]), resolves the model id to a
//! catalogue key, and lists what it could not map (`Deployment::not_mapped`, never fatal).
//! [`Deployment::to_args`] (in [`args`]) turns the result into scenario flags.

mod args;
mod dynamo;
pub(crate) mod engine;
mod llmd;

use std::path::Path;

use disagg_model::Catalogue;
use serde_json::Value;

use super::{device_of_product, model_of_id, native_weight_format, Deployment, Engine, Workers};
use super::{KV_LINK_ANNOTATION, MODEL_IDS};
use crate::UsageError;

/// What [`read_with`] needs beside the file.
pub struct ReadOptions<'a> {
    /// The catalogue model ids resolve against.
    pub cat: &'a Catalogue,
    /// The command line's `--model`, if given: it stands in for a model id the catalogue lacks.
    pub model: Option<&'a str>,
}

/// A deployment read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    pub deployment: Deployment,
    /// `dynamo-v1beta1`, `dynamo-v1alpha1`, `llm-d-modelservice`, `llm-d-disaggregatedset`,
    /// `vllm-script` or `sglang-script`.
    pub format: &'static str,
}

/// Reads the deployment in `path` against the built-in catalogue.
pub fn read(path: &Path) -> Result<Deployment, UsageError> {
    let cat = Catalogue::builtin();
    let opts = ReadOptions {
        cat: &cat,
        model: None,
    };
    read_with(path, &opts).map(|i| i.deployment)
}

/// Reads the deployment in `path`; errors are one line naming the file.
pub fn read_with(path: &Path, opts: &ReadOptions) -> Result<Imported, UsageError> {
    let at = |e: String| UsageError(format!("--deployment: {}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| {
        at(match e.kind() {
            std::io::ErrorKind::NotFound => "file does not exist".into(),
            _ => e.to_string(),
        })
    })?;
    read_text(&text, opts).map_err(at)
}

/// Reads a deployment from its text.
pub fn read_text(text: &str, opts: &ReadOptions) -> Result<Imported, String> {
    const READ: &str = "reads a DynamoGraphDeployment (nvidia.com/v1beta1, nvidia.com/v1alpha1), \
                        llm-d modelservice values (prefill/decode/modelArtifacts), an llm-d \
                        DisaggregatedSet or a vllm.sh/sglang.sh of disagg plan --emit";
    if text.trim_start().starts_with("#!") {
        let src = super::script::parse_script(text)
            .map_err(|e| format!("a shell script: {e} (disagg {READ})"))?;
        return assemble(src, opts);
    }
    let mut docs = Vec::new();
    for d in serde_norway::Deserializer::from_str(text) {
        let v = <Value as serde::Deserialize>::deserialize(d).map_err(|e| yaml_error(&e))?;
        docs.push(v);
    }
    let mut kinds = Vec::new();
    for doc in &docs {
        let kind = doc.get("kind").and_then(Value::as_str);
        let src = match kind {
            Some("DynamoGraphDeployment") => {
                let api = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
                dynamo::read(doc, api)?
            }
            Some("DisaggregatedSet") => llmd::read_set(doc)?,
            None if llmd::is_values(doc) => llmd::read(doc)?,
            Some(k) => {
                kinds.push(format!("kind '{k}'"));
                continue;
            }
            None => continue,
        };
        return assemble(src, opts);
    }
    let hint = if kinds
        .iter()
        .any(|k| k == "kind 'DynamoGraphDeploymentRequest'")
    {
        " (a DGDR asks the operator to profile and generate a DGD: import the DGD it generates)"
    } else {
        ""
    };
    Err(match kinds.is_empty() {
        true if docs.iter().all(Value::is_null) => format!("empty; disagg {READ}"),
        true => format!("no deployment found; disagg {READ}"),
        false => format!("{} is not read{hint}; disagg {READ}", kinds.join(", ")),
    })
}

/// A YAML syntax error as one line with its position.
fn yaml_error(e: &serde_norway::Error) -> String {
    let msg = e.to_string();
    let first = msg.lines().next().unwrap_or("").to_string();
    match e.location() {
        Some(l) if !first.contains("line ") => {
            format!("not YAML: line {} column {}: {first}", l.line(), l.column())
        }
        _ => format!("not YAML: {first}"),
    }
}

/// The role of a component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum RoleKind {
    Prefill,
    Decode,
    /// Aggregated (colocated prefill and decode).
    #[default]
    Worker,
}

impl RoleKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RoleKind::Prefill => "prefill",
            RoleKind::Decode => "decode",
            RoleKind::Worker => "worker",
        }
    }
}

/// One worker component of a file, as written.
#[derive(Clone, Debug, Default)]
pub(crate) struct Component {
    pub name: String,
    pub kind: RoleKind,
    pub replicas: u32,
    /// GPUs of one pod (`nvidia.com/gpu` limit).
    pub gpus: Option<u32>,
    /// Pods of one instance (`multinode.nodeCount`).
    pub nodes: Option<u32>,
    /// `nodeSelector` `nvidia.com/gpu.product`.
    pub product: Option<String>,
    /// The main container's command then args.
    pub command: Vec<String>,
    /// The engine the file implies for this component (llm-d `modelCommand: vllmServe`).
    pub engine: Option<Engine>,
    /// Parallelism the file states outside the args (llm-d `parallelism`).
    pub tp: Option<u32>,
    pub dp: Option<u32>,
}

/// A file's deployment before its components are read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Source {
    pub format: &'static str,
    pub name: String,
    pub components: Vec<Component>,
    /// The types of components that run no model (frontend, epp), for errors.
    pub others: Vec<String>,
    /// `disagg.dev/*` annotations (or labels), in file order.
    pub annotations: Vec<(String, String)>,
    /// Graph-wide engine (`spec.backendFramework`).
    pub engine: Option<Engine>,
    /// The model the file names outside the args (llm-d `modelArtifacts.name`).
    pub model: Option<String>,
    /// The KV transfer backend the file names outside the args (llm-d `routing.proxy.connector`).
    pub kv_backend: Option<String>,
    pub not_mapped: Vec<String>,
}

/// The string at `path` in `v` (numbers and booleans as written).
pub(crate) fn str_at(v: &Value, path: &[&str]) -> Option<String> {
    let mut at = v;
    for k in path {
        at = at.get(k)?;
    }
    match at {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The container named `name` of a `containers` list, else the first.
pub(crate) fn container<'a>(containers: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    let cs = containers?.as_array()?;
    cs.iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
        .or_else(|| cs.first())
}

/// The words of a YAML list (a container's `command` or `args`; numbers and booleans as
/// written).
pub(crate) fn words(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(text)
        .collect()
}

/// A YAML scalar as written: a string's text, a number's or boolean's spelling.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A count (`replicas: 2`, `nvidia.com/gpu: "4"`) of component `name`'s field `what`.
pub(crate) fn count(v: &Value, name: &str, what: &str) -> Result<u32, String> {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    n.and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("'{name}': {what} '{}' is not a whole number", text(v)))
}

/// The count at `path` in `v`, if present.
pub(crate) fn u32_at(v: &Value, path: &[&str], name: &str) -> Result<Option<u32>, String> {
    let mut at = v;
    for k in path {
        match at.get(k) {
            Some(x) => at = x,
            None => return Ok(None),
        }
    }
    if at.is_null() {
        return Ok(None);
    }
    count(at, name, &path.join(".")).map(Some)
}

/// The `disagg.dev/*` entries of `metadata.annotations` and `metadata.labels` (DGD) or of a
/// `labels` map (llm-d `modelArtifacts`).
pub(crate) fn annotations_of(meta: Option<&Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for key in ["annotations", "labels"] {
        let map = meta.and_then(|m| m.get(key)).and_then(Value::as_object);
        for (k, v) in map.into_iter().flatten() {
            if k.starts_with("disagg.dev/") && !out.iter().any(|(o, _)| o == k) {
                out.push((k.clone(), text(v)));
            }
        }
    }
    out
}

/// Levenshtein distance of two strings (by char).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The name part of a model id, lower case: `hf://org/Name` -> `name`.
fn name_part(id: &str) -> String {
    let id = id.trim().trim_end_matches('/');
    id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase()
}

/// Quantised republications' suffixes (`RedHatAI/...-FP8-dynamic`), longest first, and whether
/// they mean FP8 weights.
const QUANT_SUFFIXES: &[(&str, bool)] = &[
    ("-fp8-dynamic", true),
    ("-fp8-static", true),
    ("-fp8", true),
    ("-quantized.w8a8", false),
    ("-quantized.w4a16", false),
];

/// The catalogue key of model id `id`, whether its name says FP8 weights, and a note when it was
/// read by its name alone; None if nothing matches.
fn resolve_model(id: &str, cat: &Catalogue) -> Option<(String, bool, Option<String>)> {
    let name = name_part(id);
    let fp8 = name.ends_with("-fp8") || name.contains("-fp8-");
    if let Some(k) = model_of_id(id.trim().trim_start_matches("hf://")) {
        return Some((k.to_string(), fp8, None));
    }
    if cat.model(id.trim()).is_ok() {
        return Some((id.trim().to_string(), false, None));
    }
    let mut base = name.as_str();
    for (suffix, _) in QUANT_SUFFIXES {
        if let Some(b) = base.strip_suffix(suffix) {
            base = b;
            break;
        }
    }
    for (key, ids) in MODEL_IDS {
        if let Some(hit) = ids.iter().find(|x| name_part(x) == base) {
            let note = format!(
                "model: '{id}' read as {key} (the catalogue's {hit}, by name{})",
                if fp8 { ", FP8 weights" } else { "" }
            );
            return Some((key.to_string(), fp8, Some(note)));
        }
    }
    None
}

/// The three catalogue keys closest to model id `id` (by edit distance to the key and to each
/// Hugging Face id's name).
fn close_models(id: &str, cat: &Catalogue) -> Vec<String> {
    let name = name_part(id);
    let mut scored: Vec<(usize, String)> = cat
        .models
        .iter()
        .map(|m| {
            let ids = MODEL_IDS
                .iter()
                .filter(|(k, _)| *k == m.key)
                .flat_map(|(_, ids)| ids.iter().map(|x| name_part(x)));
            let d = std::iter::once(m.key.to_ascii_lowercase())
                .chain(ids)
                .map(|x| edit_distance(&name, &x))
                .min()
                .unwrap_or(usize::MAX);
            (d, m.key.clone())
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, k)| k).collect()
}

/// Not-mapped lines of several components, identical lines joined: `a, b: line`.
#[derive(Default)]
struct Lines(Vec<(String, Vec<String>)>);

impl Lines {
    fn push(&mut self, who: &str, line: String) {
        match self.0.iter_mut().find(|(l, _)| *l == line) {
            Some((_, names)) if !names.iter().any(|n| n == who) => names.push(who.to_string()),
            Some(_) => {}
            None => self.0.push((line, vec![who.to_string()])),
        }
    }
    fn into_lines(self) -> Vec<String> {
        self.0
            .into_iter()
            .map(|(l, names)| format!("{}: {l}", names.join(", ")))
            .collect()
    }
}

/// One component read: its role, its workers, its engine args.
struct Read {
    kind: RoleKind,
    name: String,
    engine: Option<Engine>,
    workers: Workers,
    args: engine::EngineArgs,
}

fn read_component(c: &Component, src: &Source, lines: &mut Lines) -> Result<Read, String> {
    let who = format!("'{}'", c.name);
    if c.replicas == 0 {
        return Err(format!(
            "component {who} ({}): replicas 0, nothing to simulate (give it 1 or more)",
            c.kind.as_str()
        ));
    }
    let (engine, words) = engine::engine_words(&c.command).map_err(|e| format!("{who}: {e}"))?;
    let engine = engine.or(c.engine).or(src.engine);
    let a = engine::parse(engine, &words);
    for l in &a.not_mapped {
        lines.push(&c.name, l.clone());
    }
    let tp = match (a.tp, c.tp) {
        (Some(t), Some(p)) if t != p => {
            lines.push(
                &c.name,
                format!("parallelism.tensor {p} (the args' tensor parallelism {t} is simulated)"),
            );
            t
        }
        (t, p) => t.or(p).unwrap_or(1),
    };
    let pp = a.pp.unwrap_or(1);
    let mut dp = a.dp.or(c.dp).filter(|&d| d > 1);
    if a.dp_attention {
        if let Some(d) = dp.take() {
            lines.push(
                &c.name,
                format!(
                    "--enable-dp-attention --dp-size {d} (attention data parallelism inside the \
                     TP group; not modelled: simulated as TP {tp})"
                ),
            );
        }
    }
    let ep = match (a.ep, a.expert_parallel) {
        (Some(e), _) => Some(e),
        (None, true) => Some(tp * dp.unwrap_or(1)),
        _ => None,
    }
    .filter(|&e| e > 1);
    let device = match &c.product {
        Some(p) => match device_of_product(p) {
            Some(d) => Some(d.to_string()),
            None => {
                lines.push(
                    &c.name,
                    format!(
                        "nodeSelector nvidia.com/gpu.product {p} (not a catalogue device; the \
                         command line's --device, else h100)"
                    ),
                );
                None
            }
        },
        None => None,
    };
    let workers = Workers {
        replicas: c.replicas,
        tp,
        pp,
        ep,
        dp,
        device,
        max_num_seqs: a.max_num_seqs,
        max_num_batched_tokens: a.max_num_batched_tokens,
    };
    if let Some(g) = c.gpus {
        let nodes = c.nodes.unwrap_or(1);
        let total = g.saturating_mul(nodes);
        if total != workers.gpus() {
            let pods = if nodes > 1 {
                format!(" x {nodes} nodes")
            } else {
                String::new()
            };
            lines.push(
                &c.name,
                format!(
                    "nvidia.com/gpu {g}{pods} = {total} GPUs per instance (the engine uses tp x \
                     pp x dp = {}: simulated with {})",
                    workers.gpus(),
                    workers.gpus()
                ),
            );
        }
    }
    if let Some(m) = &a.disagg_mode {
        let expected = match c.kind {
            RoleKind::Prefill => "prefill",
            RoleKind::Decode => "decode",
            RoleKind::Worker => "agg",
        };
        if m != expected && !(c.kind == RoleKind::Worker && m == "null") {
            lines.push(
                &c.name,
                format!(
                    "--disaggregation-mode {m} (the component's type is {}: simulated as {})",
                    c.kind.as_str(),
                    c.kind.as_str()
                ),
            );
        }
    }
    Ok(Read {
        kind: c.kind,
        name: c.name.clone(),
        engine,
        workers,
        args: a,
    })
}

/// One role's workers from its components: equal shapes add their replicas.
fn merge(reads: &[&Read]) -> Result<Option<Workers>, String> {
    let Some(first) = reads.first() else {
        return Ok(None);
    };
    let mut w = first.workers.clone();
    for r in &reads[1..] {
        let same = Workers {
            replicas: w.replicas,
            ..r.workers.clone()
        };
        if same != w {
            return Err(format!(
                "components '{}' and '{}' are both {} workers of different shapes: one shape \
                 per role is simulated",
                first.name,
                r.name,
                r.kind.as_str()
            ));
        }
        w.replicas += r.workers.replicas;
    }
    Ok(Some(w))
}

/// The first value the reads of `order` give, with a line for a different later one.
fn agree<T: PartialEq + Clone + std::fmt::Display>(
    order: &[&Read],
    what: &str,
    get: impl Fn(&Read) -> Option<T>,
    lines: &mut Lines,
) -> Option<T> {
    let mut first: Option<(T, &str)> = None;
    for r in order {
        if let Some(v) = get(r) {
            match &first {
                None => first = Some((v, &r.name)),
                Some((f, by)) if *f != v => lines.push(
                    &r.name,
                    format!("{what} {v} (one value per scenario: {by}'s {f} is simulated)"),
                ),
                Some(_) => {}
            }
        }
    }
    first.map(|(v, _)| v)
}

fn assemble(src: Source, opts: &ReadOptions) -> Result<Imported, String> {
    let mut lines = Lines::default();
    let reads = src
        .components
        .iter()
        .map(|c| read_component(c, &src, &mut lines))
        .collect::<Result<Vec<_>, _>>()?;
    let of = |k: RoleKind| reads.iter().filter(|r| r.kind == k).collect::<Vec<_>>();
    let (p, d, w) = (
        of(RoleKind::Prefill),
        of(RoleKind::Decode),
        of(RoleKind::Worker),
    );
    let found = || {
        let mut all: Vec<String> = src.others.clone();
        all.sort();
        all.dedup();
        if all.is_empty() {
            "none".to_string()
        } else {
            all.join(", ")
        }
    };
    match (p.is_empty(), d.is_empty(), w.is_empty()) {
        (true, true, true) => {
            return Err(format!(
                "no prefill, decode or worker component (found: {}); nothing to simulate",
                found()
            ))
        }
        (_, _, false) if !(p.is_empty() && d.is_empty()) => {
            return Err(
                "both aggregated workers and prefill/decode workers: one mode per deployment is \
                 simulated"
                    .into(),
            )
        }
        (false, true, _) => return Err("prefill workers but no decode workers".into()),
        (true, false, _) => return Err("decode workers but no prefill workers".into()),
        _ => {}
    }
    // The order later roles defer to: prefill (or the aggregated workers) first.
    let order: Vec<&Read> = p.iter().chain(&w).chain(&d).copied().collect();
    let engines: Vec<Engine> = order.iter().filter_map(|r| r.engine).collect();
    if let Some(e) = engines.iter().find(|e| **e != engines[0]) {
        return Err(format!(
            "workers run both {:?} and {:?}: one engine per deployment is simulated",
            engines[0], e
        ));
    }
    let mut notes = src.not_mapped.clone();
    let engine = match engines.first() {
        Some(e) => *e,
        None => {
            notes.push("engine: not named (no dynamo.vllm, vllm serve, sglang...): vLLM's defaults assumed".into());
            Engine::Vllm
        }
    };
    // The model.
    let ids = agree(&order, "model", |r| r.args.model.clone(), &mut lines).or(src.model.clone());
    let (model, fp8) = match (ids, opts.model) {
        (None, Some(m)) => (m.to_string(), false),
        (None, None) => {
            return Err(
                "no model: the workers' args name none (--model, --model-path, vllm serve \
                 MODEL); give --model KEY"
                    .into(),
            )
        }
        (Some(id), given) => match (resolve_model(&id, opts.cat), given) {
            (Some((key, fp8, note)), _) => {
                notes.extend(note);
                (key, fp8)
            }
            (None, Some(m)) => {
                notes.push(format!(
                    "model: '{id}' is not in the catalogue: simulated as --model {m} (the \
                     command line's)"
                ));
                (m.to_string(), false)
            }
            (None, None) => {
                return Err(format!(
                    "model '{id}' is not in the catalogue (closest: {}); give --model KEY to \
                     simulate it as a catalogue model",
                    close_models(&id, opts.cat).join(", ")
                ))
            }
        },
    };
    let disagg = w.is_empty();
    let first_of_prefill: Vec<&Read> = if disagg { p.clone() } else { w.clone() };
    let chunked = agree(
        &order,
        "chunked prefill",
        |r| r.args.chunked_prefill,
        &mut lines,
    );
    let prefix = agree(
        &first_of_prefill,
        "prefix caching",
        |r| r.args.prefix_caching,
        &mut lines,
    );
    let block = agree(&order, "block size", |r| r.args.block_size, &mut lines);
    let kv_fmt = agree(
        &order,
        "--kv-cache-dtype",
        |r| r.args.kv_format.clone(),
        &mut lines,
    );
    let weight_fmt = agree(
        &order,
        "--quantization",
        |r| r.args.weight_format.clone(),
        &mut lines,
    );
    let backend = agree(
        &order,
        "KV transfer backend",
        |r| r.args.kv_backend.clone(),
        &mut lines,
    )
    .or(src.kv_backend.clone());
    let native = native_weight_format(&model).map(str::to_string);
    let mut dep = Deployment {
        name: src.name.clone(),
        model,
        engine,
        prefill: merge(&p)?,
        decode: merge(&d)?,
        colocated: merge(&w)?,
        link: None,
        kv_transfer_backend: match (disagg, backend) {
            (false, _) => "none".into(),
            (true, Some(b)) => b,
            (true, None) => match engine {
                Engine::Vllm => "nixl".into(),
                Engine::Sglang => "mooncake".into(),
            },
        },
        kv_format: kv_fmt.filter(|f| f != "bf16"),
        weight_format: weight_fmt.or(fp8.then(|| "fp8".to_string())).or(native),
        compute_format: None,
        kv_compress: None,
        layouts_modelled: true,
        chunked_prefill: chunked.unwrap_or(false),
        // vLLM and SGLang cache prefixes unless told not to.
        prefix_caching: prefix.unwrap_or(true),
        block_size: block,
        gpus_per_node: src
            .components
            .iter()
            .filter(|c| c.nodes.is_some_and(|n| n > 1))
            .filter_map(|c| c.gpus)
            .max()
            .unwrap_or(8),
        not_mapped: Vec::new(),
    };
    for (k, v) in &src.annotations {
        match dep.apply_annotation(k, v) {
            Ok(true) => {}
            Ok(false) => notes.push(format!("{k}: '{v}' (not a disagg annotation)")),
            Err(e) => notes.push(e),
        }
    }
    for f in [
        &mut dep.weight_format,
        &mut dep.kv_format,
        &mut dep.compute_format,
    ] {
        if f.as_deref() == Some("bf16") {
            *f = None;
        }
    }
    notes.extend(lines.into_lines());
    let roles = [&dep.prefill, &dep.decode, &dep.colocated];
    if roles
        .iter()
        .any(|r| r.as_ref().is_some_and(|w| w.device.is_none()))
    {
        notes.push(
            "device: not in the file (nodeSelector nvidia.com/gpu.product): the command line's \
             --device, else h100"
                .into(),
        );
    }
    if disagg && dep.link.is_none() {
        notes.push(format!(
            "link: not in the file (annotation {KV_LINK_ANNOTATION}): the command line's --link, \
             else ib-ndr"
        ));
    }
    dep.not_mapped = notes;
    Ok(Imported {
        deployment: dep,
        format: src.format,
    })
}

#[cfg(test)]
mod tests;
