//! The reference's workload JSON (simulator.md §7.2): an array of `[arrival_s, prompt_len,
//! output_len]` rows, optionally with a fourth object element (ignored here).

use std::path::Path;

use disagg_sim::GenRequest;
use serde_json::Value;

use crate::UsageError;

/// Reads and validates a workload file; a bad row is an error naming its index.
pub fn read(path: &Path) -> Result<Vec<GenRequest>, UsageError> {
    let name = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("--workload-file: cannot read '{name}': {e}")))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("--workload-file: {name}: not valid JSON: {e}")))?;
    let rows = v.as_array().ok_or_else(|| {
        UsageError(format!(
            "--workload-file: {name}: expected a JSON array of [arrival_s, prompt, output] rows"
        ))
    })?;
    if rows.is_empty() {
        return Err(UsageError(format!("--workload-file: {name}: no requests")));
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut last = 0.0f64;
    for (i, r) in rows.iter().enumerate() {
        let bad = |why: &str| {
            let mut t = r.to_string();
            t.truncate(80);
            UsageError(format!("--workload-file: {name}: row {i}: {why}: {t}"))
        };
        let a = r
            .as_array()
            .ok_or_else(|| bad("expected [arrival_s, prompt, output]"))?;
        if a.len() < 3 || a.len() > 4 {
            return Err(bad("expected 3 or 4 elements"));
        }
        let arrival = a[0]
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| bad("arrival must be a number >= 0"))?;
        let len = |v: &Value, what: &str| -> Result<u32, UsageError> {
            match v.as_f64() {
                Some(x) if x >= 1.0 && x.fract() == 0.0 && x <= u32::MAX as f64 => Ok(x as u32),
                _ => Err(bad(&format!("{what} must be a whole number >= 1"))),
            }
        };
        let prompt = len(&a[1], "prompt length")?;
        let output = len(&a[2], "output length")?;
        if arrival < last {
            return Err(bad("arrivals must not decrease"));
        }
        last = arrival;
        out.push(GenRequest {
            rid: i,
            arrival_s: arrival,
            prompt_len: prompt,
            output_len: output,
        });
    }
    Ok(out)
}
