//! [`Deployment::to_args`]: a deployment as scenario flags (`docs/deployment.md#mapping`).

use disagg_model::Catalogue;

use crate::deploy::{Deployment, Workers};
use crate::UsageError;

/// What the model can be simulated with.
struct Can {
    /// Explicit TP/PP layouts (not for models described by layer kinds, nor CED).
    layouts: bool,
    /// The scheduling levers: token budget, chunked prefill, prefix caching.
    levers: bool,
    /// A prefix cache (not with windowed or linear-attention layers).
    prefix: bool,
    /// Experts.
    moe: bool,
}

impl Deployment {
    /// The scenario flags of the deployment, in a fixed order (same deployment, same flags):
    /// `--model`, `--mode`, the counts, devices, devices per instance, layouts, link,
    /// compression, formats, batching. Workload and SLO flags are the command line's.
    pub fn to_args(&self, cat: &Catalogue) -> Result<Vec<String>, UsageError> {
        self.to_args_noted(cat).map(|(a, _)| a)
    }

    /// [`Deployment::to_args`] with a line for each part of the deployment the flags cannot say
    /// (simulated otherwise, or not at all).
    pub fn to_args_noted(&self, cat: &Catalogue) -> Result<(Vec<String>, Vec<String>), UsageError> {
        let m = cat
            .model(&self.model)
            .map_err(|e| UsageError(format!("--model: {e}")))?;
        let kinds = m.arch.is_some();
        let can = Can {
            layouts: !kinds && m.ced.is_none(),
            levers: m.is_attention() && m.ced.is_none(),
            prefix: m.is_attention() && m.ced.is_none() && !m.kv_is_bounded(),
            moe: m.moe.is_some() || m.arch.as_ref().is_some_and(|a| a.is_moe()),
        };
        let mut a: Vec<String> = Vec::new();
        let mut notes = Vec::new();
        let mut flag = |f: &str, v: &dyn std::fmt::Display| {
            a.push(f.to_string());
            a.push(v.to_string());
        };
        flag("--model", &self.model);
        // (role name, workers, tp flag, pp flag) of each pool simulated.
        let pools: Vec<(&str, &Workers, &str, &str)> =
            match (&self.prefill, &self.decode, &self.colocated) {
                (Some(p), Some(d), None) => {
                    flag("--mode", &"disagg");
                    flag("--prefill", &p.replicas);
                    flag("--decode", &d.replicas);
                    match (&p.device, &d.device) {
                        (Some(x), Some(y)) if x == y => flag("--device", x),
                        (x, y) => {
                            if let Some(x) = x {
                                flag("--prefill-device", x);
                            }
                            if let Some(y) = y {
                                flag("--decode-device", y);
                            }
                        }
                    }
                    flag("--prefill-devices-per-instance", &p.gpus());
                    flag("--decode-devices-per-instance", &d.gpus());
                    vec![
                        ("prefill", p, "--prefill-tp", "--prefill-pp"),
                        ("decode", d, "--decode-tp", "--decode-pp"),
                    ]
                }
                (None, None, Some(w)) => {
                    // Colocated instances are --prefill + --decode: all of them --prefill, as
                    // the plan's colocated candidates (`docs/objectives.md#colocated`).
                    flag("--mode", &"colocated");
                    flag("--prefill", &w.replicas);
                    flag("--decode", &0);
                    if let Some(x) = &w.device {
                        flag("--device", x);
                    }
                    flag("--devices-per-instance", &w.gpus());
                    vec![("colocated", w, "--tp", "--pp")]
                }
                _ => {
                    return Err(UsageError(
                        "deployment: prefill and decode workers, or aggregated workers alone"
                            .into(),
                    ))
                }
            };
        // Layouts (`docs/cost-model.md#parallelism`): a pool of tp x pp > 1 GPUs.
        let split: Vec<_> = pools.iter().filter(|(_, w, ..)| w.tp * w.pp > 1).collect();
        let dp = pools.iter().any(|(_, w, ..)| w.dp.is_some_and(|d| d > 1));
        let layouts = self.layouts_modelled && can.layouts && !dp;
        if layouts {
            for (_, w, tp, pp) in &split {
                flag(tp, &w.tp);
                if w.pp > 1 {
                    flag(pp, &w.pp);
                }
            }
        } else if self.layouts_modelled && !split.is_empty() || dp {
            let why = if dp {
                "data parallelism inside an instance is not a layout"
            } else if kinds {
                "layouts are not modelled for a model described by layer kinds"
            } else {
                "layouts are not modelled for this model"
            };
            let shown: Vec<String> = pools
                .iter()
                .filter(|(_, w, ..)| w.gpus() > 1)
                .map(|(r, w, ..)| {
                    let dp = w.dp.map(|d| format!(" x DP{d}")).unwrap_or_default();
                    format!("{r} TP{} x PP{}{dp} as {} ideal GPUs", w.tp, w.pp, w.gpus())
                })
                .collect();
            notes.push(format!("layouts: {} ({why})", shown.join(", ")));
        }
        // Expert parallelism: --ep is every pool's, 1 or the pool's tp.
        let eps: Vec<(&str, u32, u32)> = pools
            .iter()
            .filter_map(|(r, w, ..)| w.ep.map(|e| (*r, e, w.tp)))
            .collect();
        if let Some(&(_, e, _)) = eps.first() {
            let every = pools.iter().all(|(_, w, ..)| w.ep == Some(e) && w.tp == e);
            if !can.moe {
                notes.push(format!(
                    "expert parallelism EP{e} (the model has no experts)"
                ));
            } else if layouts && every {
                flag("--ep", &e);
            } else {
                let shown: Vec<String> = eps.iter().map(|(r, e, _)| format!("{r} EP{e}")).collect();
                notes.push(format!(
                    "expert parallelism: {} (simulated with experts split by TP: --ep needs \
                     modelled layouts and EP = TP in every pool)",
                    shown.join(", ")
                ));
            }
        }
        if self.prefill.is_some() {
            if let Some(l) = &self.link {
                flag("--link", l);
            }
            if let Some(c) = &self.kv_compress {
                flag("--kv-compress", c);
            }
        }
        for (f, v) in [
            ("--weight-format", &self.weight_format),
            ("--kv-format", &self.kv_format),
            ("--compute-format", &self.compute_format),
        ] {
            if let Some(v) = v {
                flag(f, v);
            }
        }
        // Batching: one token budget and one decode batch bound per scenario.
        let (first, last) = match (&self.prefill, &self.decode, &self.colocated) {
            (Some(p), Some(d), _) => (p, d),
            (_, _, Some(w)) => (w, w),
            _ => unreachable!("checked above"),
        };
        let budget = first.max_num_batched_tokens.or(last.max_num_batched_tokens);
        if let (Some(x), Some(y)) = (first.max_num_batched_tokens, last.max_num_batched_tokens) {
            if x != y {
                notes.push(format!(
                    "decode --max-num-batched-tokens {y} (one token budget per scenario: the \
                     prefill pool's {x} is simulated)"
                ));
            }
        }
        let lever = |on: bool, what: String, notes: &mut Vec<String>| {
            if on && !can.levers {
                notes.push(format!(
                    "{what} (the scheduling levers are not modelled for {})",
                    self.model
                ));
                return false;
            }
            on
        };
        if let Some(b) = budget {
            if lever(true, format!("--max-num-batched-tokens {b}"), &mut notes) {
                flag("--max-num-batched-tokens", &b);
            }
        }
        if let Some(n) = last.max_num_seqs {
            flag("--max-decode-batch", &n);
        }
        if let (Some(p), Some(_)) = (&self.prefill, &self.decode) {
            if let Some(n) = p.max_num_seqs {
                notes.push(format!(
                    "prefill --max-num-seqs {n} (the simulator bounds decode batches only)"
                ));
            }
        }
        if lever(self.chunked_prefill, "chunked prefill".into(), &mut notes) {
            flag("--batch-policy", &"chunked");
        }
        if self.prefix_caching && can.levers && !can.prefix {
            notes.push(format!(
                "prefix caching (not modelled for {}'s windowed or linear-attention layers)",
                self.model
            ));
        } else if lever(self.prefix_caching, "prefix caching".into(), &mut notes) {
            a.push("--prefix-caching".into());
        }
        if let Some(b) = self.block_size {
            a.push("--kv-block-size".into());
            a.push(b.to_string());
        }
        Ok((a, notes))
    }
}
