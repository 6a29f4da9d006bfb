//! Dynamo's `DynamoGraphDeployment` (`nvidia.com/v1beta1`: `spec.components[]`; the deprecated
//! `nvidia.com/v1alpha1`: `spec.services{}`) read into [`Source`] components.

use serde_json::Value;

use super::{annotations_of, container, str_at, u32_at, words, Component, RoleKind, Source};
use crate::deploy::Engine;

/// The API versions of a DGD read here.
pub(crate) const VERSIONS: &[&str] = &["nvidia.com/v1beta1", "nvidia.com/v1alpha1"];

/// A DGD document (`kind: DynamoGraphDeployment`) of `api_version`.
pub(crate) fn read(doc: &Value, api_version: &str) -> Result<Source, String> {
    let v1beta1 = match api_version {
        "nvidia.com/v1beta1" => true,
        "nvidia.com/v1alpha1" => false,
        other => {
            return Err(format!(
                "DynamoGraphDeployment apiVersion '{other}' is not read (valid: {})",
                VERSIONS.join(", ")
            ))
        }
    };
    let spec = doc.get("spec").unwrap_or(&Value::Null);
    let mut src = Source {
        format: if v1beta1 {
            "dynamo-v1beta1"
        } else {
            "dynamo-v1alpha1"
        },
        name: str_at(doc, &["metadata", "name"]).unwrap_or_default(),
        annotations: annotations_of(doc.get("metadata")),
        engine: match spec.get("backendFramework").and_then(Value::as_str) {
            Some("vllm") => Some(Engine::Vllm),
            Some("sglang") => Some(Engine::Sglang),
            Some(other) => {
                return Err(format!(
                    "spec.backendFramework '{other}' is not simulated (valid: vllm, sglang)"
                ))
            }
            None => None,
        },
        ..Source::default()
    };
    if v1beta1 {
        let comps = spec.get("components").and_then(Value::as_array);
        for c in comps.into_iter().flatten() {
            component_v1beta1(c, &mut src)?;
        }
    } else {
        let services = spec.get("services").and_then(Value::as_object);
        for (name, s) in services.into_iter().flatten() {
            service_v1alpha1(name, s, &mut src)?;
        }
    }
    if let Some(groups) = str_or_len(spec, &["experimental", "componentGroups"]) {
        src.not_mapped.push(format!(
            "spec.experimental.componentGroups: {groups} (scaling groups; the simulation keeps \
             the replicas written)"
        ));
    }
    Ok(src)
}

fn str_or_len(v: &Value, path: &[&str]) -> Option<String> {
    let mut at = v;
    for k in path {
        at = at.get(k)?;
    }
    at.as_array().map(|a| format!("{} group(s)", a.len()))
}

/// The kind of a component type, None for the types that run no model (frontend, epp) and
/// `Some(Err)` for the planner.
fn kind_of(t: &str) -> Option<Result<RoleKind, ()>> {
    match t {
        "prefill" => Some(Ok(RoleKind::Prefill)),
        "decode" => Some(Ok(RoleKind::Decode)),
        "worker" | "main" => Some(Ok(RoleKind::Worker)),
        "planner" => Some(Err(())),
        _ => None,
    }
}

fn planner_note(name: &str) -> String {
    format!(
        "component '{name}' (planner: SLA autoscaling is not simulated; the replicas written are \
         kept)"
    )
}

/// The main container of a pod spec: the one named `main`, else the first.
fn main_container(pod_spec: &Value) -> Option<&Value> {
    container(pod_spec.get("containers"), "main")
}

fn component_v1beta1(c: &Value, src: &mut Source) -> Result<(), String> {
    let name = str_at(c, &["name"]).unwrap_or_default();
    let t = str_at(c, &["type"]).unwrap_or_default();
    let kind = match kind_of(&t) {
        Some(Ok(k)) => k,
        Some(Err(())) => {
            src.not_mapped.push(planner_note(&name));
            return Ok(());
        }
        None => {
            src.others.push(if t.is_empty() { name } else { t });
            return Ok(());
        }
    };
    let pod = c.get("podTemplate").and_then(|p| p.get("spec"));
    let main = pod.and_then(main_container);
    let mut command = words(main.and_then(|m| m.get("command")));
    command.extend(words(main.and_then(|m| m.get("args"))));
    let gpus = main
        .and_then(|m| m.get("resources"))
        .and_then(|r| r.get("limits"))
        .and_then(|l| l.get("nvidia.com/gpu"));
    src.components.push(Component {
        name: name.clone(),
        kind,
        replicas: replicas(c, &name)?,
        gpus: gpus
            .map(|g| super::count(g, &name, "nvidia.com/gpu"))
            .transpose()?,
        nodes: u32_at(c, &["multinode", "nodeCount"], &name)?,
        product: pod.and_then(|p| str_at(p, &["nodeSelector", "nvidia.com/gpu.product"])),
        command,
        ..Component::default()
    });
    if c.get("scalingAdapter").is_some() {
        src.not_mapped.push(format!(
            "component '{name}': scalingAdapter (autoscaling is not simulated; the replicas \
             written are kept)"
        ));
    }
    Ok(())
}

fn replicas(c: &Value, name: &str) -> Result<u32, String> {
    Ok(u32_at(c, &["replicas"], name)?.unwrap_or(1))
}

fn service_v1alpha1(name: &str, s: &Value, src: &mut Source) -> Result<(), String> {
    let t = str_at(s, &["componentType"]).unwrap_or_default();
    let sub = str_at(s, &["subComponentType"]);
    let kind = match (t.as_str(), sub.as_deref()) {
        (_, Some(sub)) if kind_of(&t).is_some_and(|k| k.is_ok()) => match kind_of(sub) {
            Some(Ok(k)) => k,
            _ => {
                return Err(format!(
                    "service '{name}': subComponentType '{sub}' (valid: prefill, decode)"
                ))
            }
        },
        _ => match kind_of(&t) {
            Some(Ok(k)) => k,
            Some(Err(())) => {
                src.not_mapped.push(planner_note(name));
                return Ok(());
            }
            None => {
                src.others
                    .push(if t.is_empty() { name.to_string() } else { t });
                return Ok(());
            }
        },
    };
    let pod = s.get("extraPodSpec");
    let main = pod.and_then(|p| p.get("mainContainer"));
    let mut command = words(main.and_then(|m| m.get("command")));
    command.extend(words(main.and_then(|m| m.get("args"))));
    let gpus = s
        .get("resources")
        .and_then(|r| r.get("limits"))
        .and_then(|l| l.get("gpu"));
    src.components.push(Component {
        name: name.to_string(),
        kind,
        replicas: replicas(s, name)?,
        gpus: gpus.map(|g| super::count(g, name, "gpu")).transpose()?,
        nodes: u32_at(s, &["multinode", "nodeCount"], name)?,
        product: pod.and_then(|p| str_at(p, &["nodeSelector", "nvidia.com/gpu.product"])),
        command,
        ..Component::default()
    });
    if s.get("autoscaling")
        .and_then(|a| a.get("enabled"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        src.not_mapped.push(format!(
            "service '{name}': autoscaling (not simulated; the replicas written are kept)"
        ));
    }
    Ok(())
}
