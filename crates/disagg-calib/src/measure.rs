//! Measurements in, one schema: the importers (format detected from the header).

use std::collections::BTreeMap;
use std::path::Path;

use disagg_model::Catalogue;

use crate::CalibError;

/// The phase a measured step belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// A prefill batch: `batch` prompts of `tokens` tokens each, one step.
    Prefill,
    /// A decode step: `batch` sequences each at a context of `tokens` tokens, one new token each.
    Decode,
}

impl Phase {
    /// `prefill` or `decode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
    /// Parses `prefill` / `decode`.
    pub fn parse(s: &str) -> Option<Phase> {
        match s {
            "prefill" => Some(Phase::Prefill),
            "decode" => Some(Phase::Decode),
            _ => None,
        }
    }
}

/// One measured step time.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Catalogue model key.
    pub model: String,
    /// Catalogue device key.
    pub device: String,
    /// Devices of the instance.
    pub devices: u32,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Prefill or decode.
    pub phase: Phase,
    /// Sequences in the step.
    pub batch: u64,
    /// Prompt tokens per sequence (prefill) or context tokens per sequence (decode).
    pub tokens: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// `file:line` it came from.
    pub source: String,
    /// `model/device/tpN`.
    pub group: String,
}

/// The group key of a model, device and TP degree: `model/device/tpN`.
pub fn group_key(model: &str, device: &str, tp: u32) -> String {
    format!("{model}/{device}/tp{tp}")
}

/// One NCCL collective timing (Vidur's network profiles).
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    /// `all_reduce` or `send_recv`.
    pub collective: String,
    /// The topology folder the file sits in (`a100_dgx`), empty if unknown.
    pub topology: String,
    /// GPUs taking part.
    pub workers: u32,
    /// GPUs per node in the test.
    pub devices_per_node: u32,
    /// Message bytes per GPU.
    pub size: f64,
    /// Median seconds.
    pub seconds: f64,
    /// `file:line`.
    pub source: String,
}

/// One Vidur `mlp.csv` row: per-layer kernel time of every operator except attention and
/// communication (sum of the nine non-embedding operators' medians), imported and reported only.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSum {
    /// The GPU folder (`a100`) and model folder (`Llama-2-70b-hf`).
    pub gpu: String,
    /// Model folder name.
    pub model_dir: String,
    /// TP degree the shard shapes correspond to.
    pub tp: u32,
    /// Tokens in the batch.
    pub tokens: u64,
    /// Seconds per layer (sum of medians).
    pub seconds: f64,
    /// `file:line`.
    pub source: String,
}

/// The file formats the importer reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// disagg's own CSV: `model,device,devices,tp,phase,batch,tokens,seconds,source`.
    Disagg,
    /// SplitwiseSim's `perf_model.csv`.
    Splitwise,
    /// Vidur's `all_reduce.csv` / `send_recv.csv`.
    VidurNetwork,
    /// Vidur's `mlp.csv`.
    VidurMlp,
}

impl Format {
    /// Parses a `--format` value.
    pub fn parse(s: &str) -> Result<Format, CalibError> {
        match s {
            "disagg" => Ok(Format::Disagg),
            "splitwise" => Ok(Format::Splitwise),
            "vidur-network" => Ok(Format::VidurNetwork),
            "vidur-mlp" => Ok(Format::VidurMlp),
            _ => Err(CalibError(format!(
                "unknown format '{s}' (valid: disagg, splitwise, vidur-network, vidur-mlp)"
            ))),
        }
    }
    /// The `--format` name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Disagg => "disagg",
            Format::Splitwise => "splitwise",
            Format::VidurNetwork => "vidur-network",
            Format::VidurMlp => "vidur-mlp",
        }
    }
}

/// The header of disagg's own CSV schema.
pub const DISAGG_HEADER: [&str; 9] = [
    "model", "device", "devices", "tp", "phase", "batch", "tokens", "seconds", "source",
];
const SPLITWISE_HEADER: [&str; 11] = [
    "model",
    "hardware",
    "prompt_size",
    "batch_size",
    "token_size",
    "peak_power",
    "average_power",
    "prompt_time",
    "token_time",
    "e2e_time",
    "tensor_parallel",
];
const NETWORK_COLS: [&str; 5] = [
    "num_workers",
    "size",
    "collective",
    "devices_per_node",
    "max_devices_per_node",
];
/// The nine per-layer operators of `mlp.csv` summed (every one but the embedding).
pub const MLP_OPS: [&str; 9] = [
    "input_layernorm",
    "attn_pre_proj",
    "attn_rope",
    "attn_post_proj",
    "post_attention_layernorm",
    "mlp_up_proj",
    "mlp_act",
    "mlp_down_proj",
    "add",
];

/// Detects the format from a header line.
pub fn detect(header: &str) -> Option<Format> {
    let cols: Vec<&str> = header.trim_end().split(',').collect();
    if cols == DISAGG_HEADER {
        return Some(Format::Disagg);
    }
    if cols == SPLITWISE_HEADER {
        return Some(Format::Splitwise);
    }
    if NETWORK_COLS.iter().all(|c| cols.contains(c)) {
        return Some(Format::VidurNetwork);
    }
    if cols.contains(&"num_tokens")
        && cols.contains(&"num_tensor_parallel_workers")
        && cols.contains(&"time_stats.mlp_up_proj.median")
    {
        return Some(Format::VidurMlp);
    }
    None
}

/// Everything read from the measurement files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Imported {
    /// Step times.
    pub measurements: Vec<Measurement>,
    /// Collective timings.
    pub collectives: Vec<Collective>,
    /// Kernel sums (reported, not fitted: they exclude attention and communication).
    pub kernels: Vec<KernelSum>,
    /// Lines excluded, by reason: count.
    pub excluded: BTreeMap<String, usize>,
    /// Identical duplicate lines dropped.
    pub duplicates: usize,
}

impl Imported {
    fn exclude(&mut self, why: &str, n: usize) {
        *self.excluded.entry(why.to_string()).or_insert(0) += n;
    }
}

/// Why splitwise power-capped rows are dropped.
pub const WHY_PCAP: &str = "h100-80gb-pcap: derived (prompt_time = 1.3 x the h100-80gb line), not measured (README caveat 1)";
/// Why splitwise TP2 batch >= 32 rows are dropped.
pub const WHY_TP2_BIG: &str = "TP2 batch >= 32: the batch was probably not resident at once, not a single step (README caveat 2)";

/// Catalogue device of a SplitwiseSim hardware name.
pub fn splitwise_device(hw: &str) -> Option<&'static str> {
    match hw {
        "a100-80gb" => Some("a100"),
        "h100-80gb" => Some("h100"),
        _ => None,
    }
}

/// Line `n` of `file` split at commas, which must give `want` fields.
fn fields<'a>(file: &str, n: usize, l: &'a str, want: usize) -> Result<Vec<&'a str>, CalibError> {
    let f: Vec<&str> = l.split(',').collect();
    if f.len() != want {
        return Err(err(file, n, format!("{} fields, expected {want}", f.len())));
    }
    Ok(f)
}

fn err(file: &str, line: usize, why: impl std::fmt::Display) -> CalibError {
    CalibError(format!("{file}:{line}: {why}"))
}

fn num<T: std::str::FromStr>(file: &str, line: usize, col: &str, v: &str) -> Result<T, CalibError> {
    v.trim()
        .parse::<T>()
        .map_err(|_| err(file, line, format!("{col}: malformed number '{v}'")))
}

fn positive_int<T: std::str::FromStr + PartialOrd + Default>(
    file: &str,
    line: usize,
    col: &str,
    v: &str,
) -> Result<T, CalibError> {
    let x: T = num(file, line, col, v)?;
    if x <= T::default() {
        return Err(err(
            file,
            line,
            format!("{col} must be at least 1, got {v}"),
        ));
    }
    Ok(x)
}

/// A measured time: finite and above zero.
fn time(file: &str, line: usize, col: &str, v: &str, scale: f64) -> Result<f64, CalibError> {
    let x: f64 = num(file, line, col, v)?;
    if !x.is_finite() || x <= 0.0 {
        return Err(err(
            file,
            line,
            format!("{col} must be a finite time above zero, got {v}"),
        ));
    }
    Ok(x * scale)
}

fn check_known(
    cat: &Catalogue,
    file: &str,
    line: usize,
    model: &str,
    device: &str,
) -> Result<(), CalibError> {
    if cat.model(model).is_err() {
        return Err(err(
            file,
            line,
            format!("model '{model}' is not in the catalogue"),
        ));
    }
    if cat.device(device).is_err() {
        return Err(err(
            file,
            line,
            format!("device '{device}' is not in the catalogue"),
        ));
    }
    Ok(())
}

/// Reads one file (format detected from its header unless `format` forces it) into `into`.
pub fn import_file(
    path: &Path,
    format: Option<Format>,
    cat: &Catalogue,
    into: &mut Imported,
) -> Result<(), CalibError> {
    // Escaped once: the name reaches every row's `source` and every message.
    let file = disagg_model::escape(&path.display().to_string()).into_owned();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CalibError(format!("{file}: cannot read: {e}")))?;
    import_text(&file, &text, format, cat, into)
}

/// Reads the text of one file named `file` (see [`import_file`]).
pub fn import_text(
    file: &str,
    text: &str,
    format: Option<Format>,
    cat: &Catalogue,
    into: &mut Imported,
) -> Result<(), CalibError> {
    let mut lines = text.lines();
    let header = lines
        .next()
        .ok_or_else(|| CalibError(format!("{file}: empty file (no header)")))?;
    let fmt = match format.or_else(|| detect(header)) {
        Some(f) => f,
        None => {
            return Err(err(
                file,
                1,
                format!(
                    "unknown columns: the header matches no known format (disagg's own is '{}')",
                    DISAGG_HEADER.join(",")
                ),
            ))
        }
    };
    let cols: Vec<&str> = header.trim_end().split(',').collect();
    let expect_cols = |want: &[&str]| -> Result<(), CalibError> {
        if cols != want {
            return Err(err(
                file,
                1,
                format!(
                    "unknown columns for format {}: expected '{}'",
                    fmt.as_str(),
                    want.join(",")
                ),
            ));
        }
        Ok(())
    };
    let idx = |name: &str| -> Result<usize, CalibError> {
        cols.iter().position(|c| *c == name).ok_or_else(|| {
            err(
                file,
                1,
                format!("format {}: missing column '{name}'", fmt.as_str()),
            )
        })
    };
    let rows = lines
        .enumerate()
        .map(|(i, l)| (i + 2, l))
        .filter(|(_, l)| !l.trim().is_empty());
    match fmt {
        Format::Disagg => {
            expect_cols(&DISAGG_HEADER)?;
            for (n, l) in rows {
                let f = fields(file, n, l, DISAGG_HEADER.len())?;
                let (model, device) = (f[0].trim(), f[1].trim());
                let devices: u32 = positive_int(file, n, "devices", f[2])?;
                let tp: u32 = positive_int(file, n, "tp", f[3])?;
                let phase = Phase::parse(f[4].trim()).ok_or_else(|| {
                    err(
                        file,
                        n,
                        format!("phase must be prefill or decode, got '{}'", f[4]),
                    )
                })?;
                let batch: u64 = positive_int(file, n, "batch", f[5])?;
                let tokens: u64 = positive_int(file, n, "tokens", f[6])?;
                let seconds = time(file, n, "seconds", f[7], 1.0)?;
                check_known(cat, file, n, model, device)?;
                let src = f[8].trim();
                into.measurements.push(Measurement {
                    model: model.into(),
                    device: device.into(),
                    devices,
                    tp,
                    phase,
                    batch,
                    tokens,
                    seconds,
                    source: if src.is_empty() {
                        format!("{file}:{n}")
                    } else {
                        disagg_model::escape(src).into_owned()
                    },
                    group: group_key(model, device, tp),
                });
            }
        }
        Format::Splitwise => {
            expect_cols(&SPLITWISE_HEADER)?;
            let mut seen = std::collections::HashSet::new();
            for (n, l) in rows {
                if !seen.insert(l.to_string()) {
                    into.duplicates += 1;
                    continue;
                }
                let f = fields(file, n, l, SPLITWISE_HEADER.len())?;
                let prompt: u64 = positive_int(file, n, "prompt_size", f[2])?;
                let batch: u64 = positive_int(file, n, "batch_size", f[3])?;
                let out: u64 = positive_int(file, n, "token_size", f[4])?;
                let pt = time(file, n, "prompt_time", f[7], 1e-3)?;
                let tt = time(file, n, "token_time", f[8], 1e-3)?;
                let tp: u32 = positive_int(file, n, "tensor_parallel", f[10])?;
                let hw = f[1].trim();
                if hw == "h100-80gb-pcap" {
                    into.exclude(WHY_PCAP, 2);
                    continue;
                }
                let device = splitwise_device(hw).ok_or_else(|| {
                    err(file, n, format!("device '{hw}' is not in the catalogue"))
                })?;
                let model = f[0].trim();
                check_known(cat, file, n, model, device)?;
                if tp == 2 && batch >= 32 {
                    into.exclude(WHY_TP2_BIG, 2);
                    continue;
                }
                let group = group_key(model, device, tp);
                let base = Measurement {
                    model: model.into(),
                    device: device.into(),
                    devices: tp,
                    tp,
                    phase: Phase::Prefill,
                    batch,
                    tokens: prompt,
                    seconds: pt,
                    source: format!("{file}:{n}"),
                    group,
                };
                // The decode row: token_time is the mean step over the generation, whose context
                // runs from prompt to prompt + token_size: its mean, prompt + token_size / 2.
                let dec = Measurement {
                    phase: Phase::Decode,
                    tokens: prompt + out / 2,
                    seconds: tt,
                    ..base.clone()
                };
                into.measurements.push(base);
                into.measurements.push(dec);
            }
        }
        Format::VidurNetwork => {
            let (iw, is, ic, id) = (
                idx("num_workers")?,
                idx("size")?,
                idx("collective")?,
                idx("devices_per_node")?,
            );
            let coll = ic;
            let mut med = None;
            for c in ["all_reduce", "send_recv"] {
                if let Ok(i) = idx(&format!("time_stats.{c}.median")) {
                    med = Some(i);
                }
            }
            let im = med.ok_or_else(|| {
                err(
                    file,
                    1,
                    "format vidur-network: no time_stats.<collective>.median column",
                )
            })?;
            let topology = Path::new(file)
                .parent()
                .and_then(|p| p.file_name())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            for (n, l) in rows {
                let f = fields(file, n, l, cols.len())?;
                into.collectives.push(Collective {
                    collective: f[coll].trim().to_string(),
                    topology: topology.clone(),
                    workers: positive_int(file, n, "num_workers", f[iw])?,
                    devices_per_node: positive_int(file, n, "devices_per_node", f[id])?,
                    size: time(file, n, "size", f[is], 1.0)?,
                    seconds: time(file, n, "median", f[im], 1e-3)?,
                    source: format!("{file}:{n}"),
                });
            }
        }
        Format::VidurMlp => {
            let it = idx("num_tokens")?;
            let itp = idx("num_tensor_parallel_workers")?;
            let ops: Vec<(&str, usize)> = MLP_OPS
                .iter()
                .map(|o| Ok((*o, idx(&format!("time_stats.{o}.median"))?)))
                .collect::<Result<_, CalibError>>()?;
            let p = Path::new(file);
            let model_dir = p
                .parent()
                .and_then(|p| p.file_name())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let gpu = p
                .ancestors()
                .nth(3)
                .and_then(|p| p.file_name())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            for (n, l) in rows {
                let f = fields(file, n, l, cols.len())?;
                let mut s = 0.0;
                for (o, i) in &ops {
                    s += time(file, n, &format!("{o} median"), f[*i], 1e-3)?;
                }
                into.kernels.push(KernelSum {
                    gpu: gpu.clone(),
                    model_dir: model_dir.clone(),
                    tp: positive_int(file, n, "num_tensor_parallel_workers", f[itp])?,
                    tokens: positive_int(file, n, "num_tokens", f[it])?,
                    seconds: s,
                    source: format!("{file}:{n}"),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_models::catalogue;

    fn imp(text: &str) -> Result<Imported, CalibError> {
        let mut i = Imported::default();
        import_text("m.csv", text, None, &catalogue(), &mut i)?;
        Ok(i)
    }

    const SW: &str = "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,token_time,e2e_time,tensor_parallel";

    #[test]
    fn detects_each_format() {
        assert_eq!(detect(&DISAGG_HEADER.join(",")), Some(Format::Disagg));
        assert_eq!(detect(SW), Some(Format::Splitwise));
        assert_eq!(
            detect(",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node,max_devices_per_node"),
            Some(Format::VidurNetwork)
        );
        assert_eq!(
            detect("time_stats.mlp_up_proj.median,num_tokens,num_tensor_parallel_workers"),
            Some(Format::VidurMlp)
        );
        assert_eq!(detect("a,b,c"), None);
        assert_eq!(detect("model,device"), None);
    }

    #[test]
    fn splitwise_rows_give_prefill_and_decode_and_exclusions() {
        let text = format!(
            "{SW}\n\
             llama2-70b,a100-80gb,512,2,128,0,0,200.0,50.0,1,4\n\
             llama2-70b,a100-80gb,512,2,128,0,0,200.0,50.0,1,4\n\
             llama2-70b,h100-80gb-pcap,512,2,128,0,0,260.0,50.0,1,4\n\
             llama2-70b,h100-80gb,512,32,128,0,0,260.0,50.0,1,2\n\
             llama2-70b,h100-80gb,512,16,128,0,0,250.0,40.0,1,2\n"
        );
        let i = imp(&text).unwrap();
        assert_eq!(i.duplicates, 1);
        assert_eq!(i.excluded[WHY_PCAP], 2);
        assert_eq!(i.excluded[WHY_TP2_BIG], 2);
        assert_eq!(i.measurements.len(), 4);
        let p = &i.measurements[0];
        assert_eq!(
            (p.phase, p.batch, p.tokens, p.tp, p.devices),
            (Phase::Prefill, 2, 512, 4, 4)
        );
        // 200 ms = 0.2 s
        assert_eq!(p.seconds, 200.0 * 1e-3);
        assert_eq!(p.device, "a100");
        assert_eq!(p.group, "llama2-70b/a100/tp4");
        assert_eq!(p.source, "m.csv:2");
        let d = &i.measurements[1];
        // context = 512 + 128 / 2 = 576
        assert_eq!(
            (d.phase, d.tokens, d.seconds),
            (Phase::Decode, 576, 50.0 * 1e-3)
        );
        assert_eq!(i.measurements[2].group, "llama2-70b/h100/tp2");
        assert_eq!(i.measurements[2].batch, 16);
    }

    #[test]
    fn bad_input_names_file_and_line() {
        let h = DISAGG_HEADER.join(",");
        let e = |t: &str| imp(t).unwrap_err().0;
        assert!(e("x,y\n1,2\n").starts_with("m.csv:1: unknown columns"));
        let ok = "llama2-70b,a100,4,4,prefill,1,512,0.1,";
        assert_eq!(imp(&format!("{h}\n{ok}\n")).unwrap().measurements.len(), 1);
        let z = e(&format!(
            "{h}\n{ok}\nllama2-70b,a100,4,4,prefill,1,512,0,\n"
        ));
        assert!(
            z.starts_with("m.csv:3: seconds must be a finite time above zero"),
            "{z}"
        );
        let z = e(&format!("{h}\nllama2-70b,a100,4,4,decode,1,512,-1,\n"));
        assert!(z.starts_with("m.csv:2: seconds must be"), "{z}");
        let z = e(&format!("{h}\nllama2-70b,a100,4,4,decode,1,512,inf,\n"));
        assert!(z.starts_with("m.csv:2: seconds must be"), "{z}");
        let z = e(&format!("{h}\nllama2-70b,a100,4,4,decode,1,5x2,0.1,\n"));
        assert_eq!(z, "m.csv:2: tokens: malformed number '5x2'");
        let z = e(&format!("{h}\nnope,a100,4,4,decode,1,512,0.1,\n"));
        assert_eq!(z, "m.csv:2: model 'nope' is not in the catalogue");
        // A terminal title sequence in the model column reaches the message escaped.
        let z = imp(&format!(
            "{h}\n\u{1b}]0;pwned\u{7},a100,4,4,decode,1,512,0.1,\n"
        ));
        assert_eq!(
            z.unwrap_err().to_string(),
            "m.csv:2: model '\\u{1b}]0;pwned\\u{7}' is not in the catalogue"
        );
        let z = e(&format!("{h}\nllama2-70b,tpu,4,4,decode,1,512,0.1,\n"));
        assert_eq!(z, "m.csv:2: device 'tpu' is not in the catalogue");
        let z = e(&format!("{h}\nllama2-70b,a100,4,4,mixed,1,512,0.1,\n"));
        assert_eq!(z, "m.csv:2: phase must be prefill or decode, got 'mixed'");
        let z = e(&format!("{h}\nllama2-70b,a100,4,0,decode,1,512,0.1,\n"));
        assert_eq!(z, "m.csv:2: tp must be at least 1, got 0");
        let z = e(&format!("{h}\nllama2-70b,a100,4,4,decode,1\n"));
        assert_eq!(z, "m.csv:2: 6 fields, expected 9");
        let z = e(&format!("{SW}\nllama2-70b,v100,512,1,128,0,0,1,1,1,2\n"));
        assert_eq!(z, "m.csv:2: device 'v100' is not in the catalogue");
        assert_eq!(e(""), "m.csv: empty file (no header)");
    }

    #[test]
    fn network_and_mlp_import() {
        let t = ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n0,0.5,0,4,2048,all_reduce,4,8\n";
        let mut i = Imported::default();
        import_text("x/a100_dgx/all_reduce.csv", t, None, &catalogue(), &mut i).unwrap();
        let c = &i.collectives[0];
        assert_eq!((c.workers, c.devices_per_node, c.size), (4, 4, 2048.0));
        assert_eq!(c.seconds, 0.5 * 1e-3);
        assert_eq!(c.topology, "a100_dgx");
        let mut h: Vec<String> = MLP_OPS
            .iter()
            .map(|o| format!("time_stats.{o}.median"))
            .collect();
        h.push("num_tokens".into());
        h.push("num_tensor_parallel_workers".into());
        // medians 1..9 ms: 45 ms per layer
        let row = "1,2,3,4,5,6,7,8,9,64,2";
        let t = format!("{}\n{row}\n", h.join(","));
        let mut i = Imported::default();
        import_text(
            "c/a100/meta-llama/M/mlp.csv",
            &t,
            None,
            &catalogue(),
            &mut i,
        )
        .unwrap();
        let k = &i.kernels[0];
        assert_eq!((k.tp, k.tokens), (2, 64));
        // summed in order, each ms value scaled to seconds first
        let want = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
            .iter()
            .fold(0.0, |a, x| a + x * 1e-3);
        assert_eq!(k.seconds, want);
        assert_eq!((k.gpu.as_str(), k.model_dir.as_str()), ("a100", "M"));
    }

    #[test]
    fn forced_format_checks_columns() {
        let mut i = Imported::default();
        let e = import_text(
            "m.csv",
            &format!("{SW}\n"),
            Some(Format::Disagg),
            &catalogue(),
            &mut i,
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("m.csv:1: unknown columns for format disagg"),
            "{}",
            e.0
        );
        assert_eq!(Format::parse("splitwise").unwrap(), Format::Splitwise);
        assert!(Format::parse("x").is_err());
        for f in [
            Format::Disagg,
            Format::Splitwise,
            Format::VidurNetwork,
            Format::VidurMlp,
        ] {
            assert_eq!(Format::parse(f.as_str()).unwrap(), f);
        }
    }
}
