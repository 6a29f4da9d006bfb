//! `llm-d-values.yaml`: values of llm-d's modelservice Helm chart: the model artifact, the
//! routing proxy (NIXL v2 connector) and the prefill and decode pods (vLLM with the NIXL KV
//! connector), each with its replicas, parallelism, GPU (and InfiniBand RDMA) resources
//! (`docs/deployment.md#llm-d`).

use std::fmt::Write as _;

use super::dynamo::yaml_str;
use super::{engine_flags, product_of_device, Deployment, Header, Role, Workers};

/// The image of the vLLM container when `--image` is not given: a placeholder to replace.
const DEFAULT_IMAGE: &str = "ghcr.io/llm-d/llm-d-cuda:SET-THE-LLM-D-VERSION";

/// vLLM's port in a decode pod (the routing proxy sidecar listens on the service port and
/// forwards to it) and in a prefill pod.
const DECODE_PORT: u32 = 8200;
const PREFILL_PORT: u32 = 8000;

/// The deployment as modelservice values (always vLLM: modelservice runs `vllm serve`).
pub fn emit(d: &Deployment, header: &Header) -> String {
    let mut s = header.lines("llm-d-values.yaml");
    let _ = writeln!(s, "# disagg.dev/name: {}", d.name);
    let image = header.image.as_deref().unwrap_or(DEFAULT_IMAGE);
    let multinode = d.roles().iter().any(|(_, w)| d.nodes_of(w) > 1);
    let _ = writeln!(s, "multinode: {multinode}");
    let id = d.model_id();
    let _ = write!(
        s,
        "modelArtifacts:\n  name: {}\n  uri: {}\n  authSecretName: llm-d-hf-token\n  labels:\n",
        yaml_str(id),
        yaml_str(&format!("hf://{id}"))
    );
    // disagg's annotations as the model's labels (`docs/deployment.md#annotations`).
    for (k, v) in d.annotations(true) {
        let _ = writeln!(s, "    {k}: {}", yaml_str(&v));
    }
    s.push_str("accelerator:\n  type: nvidia\n");
    let disagg = d.colocated.is_none();
    let _ = write!(
        s,
        "routing:\n  servicePort: 8000\n  proxy:\n    enabled: {disagg}\n    targetPort: {DECODE_PORT}\n    \
         connector: nixlv2\n    secure: false\n"
    );
    let rdma = d.link.as_deref().is_some_and(|l| l.starts_with("ib-"));
    // Aggregated workers are modelservice's decode pods, with no prefill pods.
    let (decode, prefill) = match &d.colocated {
        Some(w) => (Some((Role::Worker, w)), None),
        None => (
            d.decode.as_ref().map(|w| (Role::Decode, w)),
            d.prefill.as_ref().map(|w| (Role::Prefill, w)),
        ),
    };
    role_block(&mut s, d, "decode", decode, image, rdma, DECODE_PORT);
    role_block(&mut s, d, "prefill", prefill, image, rdma, PREFILL_PORT);
    s
}

fn role_block(
    s: &mut String,
    d: &Deployment,
    key: &str,
    rw: Option<(Role, &Workers)>,
    image: &str,
    rdma: bool,
    port: u32,
) {
    let _ = writeln!(s, "{key}:");
    let Some((role, w)) = rw else {
        s.push_str("  create: false\n  replicas: 0\n");
        return;
    };
    let nodes = d.nodes_of(w);
    let _ = write!(
        s,
        "  create: true\n  replicas: {}\n  parallelism:\n    tensor: {}\n    data: {}\n",
        w.replicas,
        w.tp,
        w.dp.unwrap_or(1)
    );
    if nodes > 1 {
        let _ = writeln!(s, "    workers: {nodes}");
    }
    if let Some(p) = w.device.as_deref().and_then(product_of_device) {
        let _ = writeln!(
            s,
            "  nodeSelector:\n    nvidia.com/gpu.product: {}",
            yaml_str(p)
        );
    }
    let _ = write!(
        s,
        "  containers:\n  - name: vllm\n    image: {}\n    modelCommand: vllmServe\n    args:\n",
        yaml_str(image)
    );
    for a in engine_flags(d, role, w, false) {
        let _ = writeln!(s, "    - {}", yaml_str(&a));
    }
    if role != Role::Worker {
        s.push_str(
            "    env:\n    - name: VLLM_NIXL_SIDE_CHANNEL_HOST\n      valueFrom:\n        fieldRef:\n          \
             fieldPath: status.podIP\n",
        );
    }
    let _ = write!(
        s,
        "    ports:\n    - containerPort: {port}\n      name: metrics\n      protocol: TCP\n"
    );
    let per_pod = w.gpus() / nodes;
    s.push_str("    resources:\n");
    for k in ["limits", "requests"] {
        let _ = writeln!(s, "      {k}:\n        nvidia.com/gpu: \"{per_pod}\"");
        if rdma {
            s.push_str("        rdma/ib: 1\n");
        }
    }
    s.push_str("    mountModelVolume: true\n");
}
