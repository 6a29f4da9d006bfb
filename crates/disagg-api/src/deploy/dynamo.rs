//! `dynamo.yaml`: a `DynamoGraphDeployment` of `nvidia.com/v1beta1` (the CRD's storage version)
//! with a frontend and a prefill and a decode component (or one aggregated `worker`), each
//! worker running Dynamo's vLLM or SGLang worker with the engine's own flags
//! (`docs/deployment.md#dynamo`).

use std::fmt::Write as _;

use super::{engine_flags, product_of_device, Deployment, Engine, Header, Role};

/// A YAML scalar: plain when it cannot be read as anything but this string, else double-quoted
/// (JSON's escapes, which YAML's double-quoted style shares).
pub fn yaml_str(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && (s.starts_with(|c: char| c.is_ascii_alphabetic())
            || (s.starts_with("--") && s[2..].starts_with(|c: char| c.is_ascii_alphabetic())))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("string")
    }
}

/// The image of a component when `--image` is not given: a placeholder to replace.
fn default_image(engine: Engine) -> String {
    format!(
        "nvcr.io/nvidia/ai-dynamo/{}-runtime:SET-THE-DYNAMO-VERSION",
        engine.as_str()
    )
}

/// The deployment as a DynamoGraphDeployment.
pub fn emit(d: &Deployment, header: &Header) -> String {
    let mut s = header.lines("dynamo.yaml");
    let image = header
        .image
        .clone()
        .unwrap_or_else(|| default_image(d.engine));
    s.push_str("apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata:\n");
    let _ = writeln!(s, "  name: {}", yaml_str(&d.name));
    let _ = writeln!(
        s,
        "  namespace: {}",
        yaml_str(header.namespace.as_deref().unwrap_or("default"))
    );
    s.push_str("  annotations:\n");
    for (k, v) in d.annotations(true) {
        let _ = writeln!(s, "    {k}: {}", yaml_str(&v));
    }
    s.push_str("spec:\n");
    let _ = writeln!(s, "  backendFramework: {}", d.engine.as_str());
    s.push_str("  components:\n");
    let _ = write!(
        s,
        "  - name: frontend\n    type: frontend\n    replicas: 1\n    podTemplate:\n      spec:\n        \
         containers:\n        - name: main\n          image: {}\n",
        yaml_str(&image)
    );
    for (role, w) in d.roles() {
        let _ = writeln!(s, "  - name: {}", role.as_str());
        let _ = writeln!(s, "    type: {}", role.as_str());
        let _ = writeln!(s, "    replicas: {}", w.replicas);
        let nodes = d.nodes_of(w);
        if nodes > 1 {
            let _ = writeln!(s, "    multinode:\n      nodeCount: {nodes}");
        }
        s.push_str("    podTemplate:\n      spec:\n");
        if let Some(p) = w.device.as_deref().and_then(product_of_device) {
            let _ = writeln!(
                s,
                "        nodeSelector:\n          nvidia.com/gpu.product: {}",
                yaml_str(p)
            );
        }
        s.push_str("        containers:\n        - name: main\n");
        let _ = writeln!(s, "          image: {}", yaml_str(&image));
        let (module, model_flag) = match d.engine {
            Engine::Vllm => ("dynamo.vllm", "--model"),
            Engine::Sglang => ("dynamo.sglang", "--model-path"),
        };
        let _ = writeln!(
            s,
            "          command:\n          - python3\n          - -m\n          - {module}"
        );
        let mut args: Vec<String> = vec![model_flag.into(), d.model_id().into()];
        if d.engine == Engine::Sglang {
            args.extend(["--served-model-name".into(), d.model_id().into()]);
        }
        args.extend(engine_flags(d, role, w, true));
        if d.engine == Engine::Sglang {
            if role != Role::Worker {
                args.extend(["--disaggregation-bootstrap-port".into(), "12345".into()]);
            }
            args.extend(["--host".into(), "0.0.0.0".into()]);
        }
        s.push_str("          args:\n");
        for a in &args {
            let _ = writeln!(s, "          - {}", yaml_str(a));
        }
        s.push_str(
            "          envFrom:\n          - secretRef:\n              name: hf-token-secret\n",
        );
        let _ = writeln!(
            s,
            "          resources:\n            limits:\n              nvidia.com/gpu: \"{}\"",
            w.gpus() / nodes
        );
    }
    s
}
