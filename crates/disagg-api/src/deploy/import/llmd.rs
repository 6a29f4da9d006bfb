//! llm-d modelservice Helm values (top-level `modelArtifacts`, `prefill`, `decode`) read into
//! [`Source`] components.

use serde_json::Value;

use super::{annotations_of, container, str_at, u32_at, words, Component, RoleKind, Source};
use crate::deploy::Engine;

/// Whether a document looks like modelservice values.
pub(crate) fn is_values(doc: &Value) -> bool {
    doc.get("kind").is_none()
        && ["prefill", "decode", "modelArtifacts"]
            .iter()
            .any(|k| doc.get(k).is_some_and(Value::is_object))
}

pub(crate) fn read(doc: &Value) -> Result<Source, String> {
    let model = str_at(doc, &["modelArtifacts", "name"]).or_else(|| {
        str_at(doc, &["modelArtifacts", "uri"])
            .and_then(|u| u.strip_prefix("hf://").map(str::to_string))
    });
    let mut src = Source {
        format: "llm-d-modelservice",
        name: model.clone().unwrap_or_default(),
        annotations: annotations_of(doc.get("modelArtifacts")),
        model,
        kv_backend: str_at(doc, &["routing", "proxy", "connector"]).map(|c| match c.as_str() {
            "nixl" | "nixlv2" => "nixl".to_string(),
            other => other.to_string(),
        }),
        ..Source::default()
    };
    let multinode = doc.get("multinode").and_then(Value::as_bool) == Some(true);
    let prefill = role(doc, "prefill", RoleKind::Prefill, multinode, &mut src)?;
    let decode = role(doc, "decode", RoleKind::Decode, multinode, &mut src)?;
    match (prefill, decode) {
        (Some(p), Some(d)) => src.components.extend([p, d]),
        (None, Some(mut d)) => {
            src.not_mapped.push(
                "prefill: none (replicas 0 or create false): the decode workers serve whole \
                 requests, simulated as colocated"
                    .into(),
            );
            d.kind = RoleKind::Worker;
            src.components.push(d);
        }
        (p, None) => {
            src.components.extend(p);
            if doc.get("decode").is_some() {
                return Err("decode: replicas 0 or create false: no decode workers".into());
            }
        }
    }
    Ok(src)
}

/// One role (`prefill` or `decode`) of the values, or None if it creates no workers.
fn role(
    doc: &Value,
    key: &str,
    kind: RoleKind,
    multinode: bool,
    src: &mut Source,
) -> Result<Option<Component>, String> {
    let Some(r) = doc.get(key).filter(|r| r.is_object()) else {
        return Ok(None);
    };
    if r.get("create").and_then(Value::as_bool) == Some(false) {
        return Ok(None);
    }
    let replicas = u32_at(r, &["replicas"], key)?.unwrap_or(1);
    if replicas == 0 {
        return Ok(None);
    }
    let main = container(r.get("containers"), "vllm");
    let list = |k: &str| words(main.and_then(|m| m.get(k)));
    let model_command = main.and_then(|m| str_at(m, &["modelCommand"]));
    let mut command = Vec::new();
    let mut engine = None;
    match model_command.as_deref() {
        Some("vllmServe") => engine = Some(Engine::Vllm),
        Some("custom") => command = list("command"),
        _ => {}
    }
    command.extend(list("args"));
    let gpus = main
        .and_then(|m| m.get("resources"))
        .and_then(|r| r.get("limits").or_else(|| r.get("requests")))
        .and_then(|l| l.get("nvidia.com/gpu"));
    let product = str_at(r, &["nodeSelector", "nvidia.com/gpu.product"]).or_else(|| {
        let at = r.get("acceleratorTypes")?;
        (str_at(at, &["labelKey"])? == "nvidia.com/gpu.product").then(|| {
            at.get("labelValues")?
                .as_array()?
                .first()?
                .as_str()
                .map(str::to_string)
        })?
    });
    let nodes = if multinode {
        u32_at(r, &["parallelism", "workers"], key)?
    } else {
        None
    };
    if r.get("autoscaling")
        .and_then(|a| a.get("enabled"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        src.not_mapped.push(format!(
            "{key}.autoscaling (not simulated; the replicas written are kept)"
        ));
    }
    Ok(Some(Component {
        name: key.to_string(),
        kind,
        replicas,
        gpus: gpus
            .map(|g| super::count(g, key, "nvidia.com/gpu"))
            .transpose()?,
        nodes,
        product,
        command,
        engine,
        tp: u32_at(r, &["parallelism", "tensor"], key)?,
        dp: u32_at(r, &["parallelism", "data"], key)?,
    }))
}

/// llm-d's kustomize guide: a `DisaggregatedSet` (`disaggregatedset.x-k8s.io/v1`): `spec.roles[]`
/// named prefill and decode, each `replicas` per slice times `spec.slices`, a LeaderWorkerSet
/// group of `leaderWorkerTemplate.size` pods per instance.
pub(crate) fn read_set(doc: &Value) -> Result<Source, String> {
    let spec = doc.get("spec").unwrap_or(&Value::Null);
    let slices = u32_at(spec, &["slices"], "spec")?.unwrap_or(1);
    let mut src = Source {
        format: "llm-d-disaggregatedset",
        name: str_at(doc, &["metadata", "name"]).unwrap_or_default(),
        annotations: annotations_of(doc.get("metadata")),
        ..Source::default()
    };
    let roles = spec.get("roles").and_then(Value::as_array);
    for r in roles.into_iter().flatten() {
        let name = str_at(r, &["name"]).unwrap_or_default();
        let kind = match name.as_str() {
            "prefill" => RoleKind::Prefill,
            "decode" => RoleKind::Decode,
            _ => {
                src.others.push(name);
                continue;
            }
        };
        let rs = r.get("spec").unwrap_or(&Value::Null);
        let per_slice = u32_at(rs, &["replicas"], &name)?.unwrap_or(1);
        let lwt = rs.get("leaderWorkerTemplate").unwrap_or(&Value::Null);
        let pod = lwt.get("workerTemplate").and_then(|w| w.get("spec"));
        let main = container(pod.and_then(|p| p.get("containers")), "modelserver");
        let list = |k: &str| words(main.and_then(|m| m.get(k)));
        let mut command = list("command");
        command.extend(list("args"));
        let gpus = main
            .and_then(|m| m.get("resources"))
            .and_then(|r| r.get("limits").or_else(|| r.get("requests")))
            .and_then(|l| l.get("nvidia.com/gpu"));
        src.components.push(Component {
            name: name.clone(),
            kind,
            replicas: per_slice.saturating_mul(slices),
            gpus: gpus
                .map(|g| super::count(g, &name, "nvidia.com/gpu"))
                .transpose()?,
            nodes: u32_at(lwt, &["size"], &name)?,
            product: pod.and_then(|p| str_at(p, &["nodeSelector", "nvidia.com/gpu.product"])),
            command,
            ..Component::default()
        });
    }
    if slices > 1 {
        src.not_mapped.push(format!(
            "spec.slices {slices} (each slice's prefill hands off to its own decode; simulated \
             as one set of every slice's workers)"
        ));
    }
    Ok(src)
}
