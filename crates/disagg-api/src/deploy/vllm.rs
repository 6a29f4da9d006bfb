//! `vllm.sh`: one `vllm serve` per prefill and decode instance (NIXL KV transfer) and vLLM's
//! NIXL proxy in front (`docs/deployment.md#scripts`).

use std::fmt::Write as _;

use super::script::{frame, gpu_list, node_count, node_var, placements, serve_line};
use super::{engine_flags, Deployment, Header, Role};

/// vLLM's HTTP port of prefill instance `i` (decode: 8200 + i, worker: 8000 + i).
fn port(role: Role, i: u32) -> u32 {
    match role {
        Role::Prefill => 8100 + i,
        Role::Decode => 8200 + i,
        Role::Worker => 8000 + i,
    }
}

/// The deployment as a bash script of vLLM launch commands.
pub fn emit(d: &Deployment, header: &Header) -> String {
    let ps = placements(d);
    let nodes = node_count(&ps);
    let mut body = String::new();
    // NIXL's side channel needs a port per instance on a node (`VLLM_NIXL_SIDE_CHANNEL_PORT`).
    let mut side = vec![5600u32; nodes as usize];
    let mut hosts: Vec<(Role, String, u32)> = Vec::new();
    for p in &ps {
        let w = d.workers(p.role).expect("a placed role has workers");
        let (node, gpus) = &p.nodes[0];
        let span = if p.nodes.len() > 1 {
            let last = p.nodes.last().map_or(*node, |x| x.0);
            let _ = writeln!(
                body,
                "# {} {}: nodes {node} to {last}, {} GPUs each: start a Ray cluster over them \
                 first; vLLM runs one engine across it from node {node}.",
                p.role.as_str(),
                p.index,
                gpus.len()
            );
            true
        } else {
            let _ = writeln!(
                body,
                "# {} {}: node {node}, GPUs {}",
                p.role.as_str(),
                p.index,
                gpu_list(gpus)
            );
            false
        };
        let mut env = Vec::new();
        if !span {
            env.push(format!("CUDA_VISIBLE_DEVICES={}", gpu_list(gpus)));
        }
        if p.role != Role::Worker {
            let sp = &mut side[*node as usize];
            env.push(format!(
                "VLLM_NIXL_SIDE_CHANNEL_HOST=\"${}\"",
                node_var(*node)
            ));
            env.push(format!("VLLM_NIXL_SIDE_CHANNEL_PORT={sp}"));
            *sp += 1;
        }
        let http = port(p.role, p.index);
        let mut cmd: Vec<String> = vec![
            "vllm".into(),
            "serve".into(),
            d.model_id().into(),
            "--port".into(),
            http.to_string(),
        ];
        cmd.extend(engine_flags(d, p.role, w, false));
        body.push_str(&serve_line(p, *node, &env, &cmd));
        hosts.push((p.role, format!("${}", node_var(*node)), http));
    }
    let list = |role: Role| -> (Vec<String>, Vec<String>) {
        hosts
            .iter()
            .filter(|(r, _, _)| *r == role)
            .map(|(_, h, p)| (format!("\"{h}\""), p.to_string()))
            .unzip()
    };
    if d.colocated.is_some() {
        let urls: Vec<String> = hosts
            .iter()
            .map(|(_, h, p)| format!("http://{h}:{p}"))
            .collect();
        let _ = writeln!(
            body,
            "\n# Aggregated workers: put a load balancer in front of {}",
            urls.join(" ")
        );
    } else {
        let (ph, pp) = list(Role::Prefill);
        let (dh, dp) = list(Role::Decode);
        let _ = writeln!(
            body,
            "\n# The proxy (vLLM's NIXL example proxy, from a vLLM source checkout) on node 0, \
             port 8192: each request is prefilled on a prefill instance, then decoded on a \
             decode instance."
        );
        let _ = writeln!(
            body,
            "if [ \"$DISAGG_NODE\" = 0 ]; then\n  python3 tests/v1/kv_connector/nixl_integration/toy_proxy_server.py --port 8192 \\\n    \
             --prefiller-hosts {} --prefiller-ports {} \\\n    \
             --decoder-hosts {} --decoder-ports {} &\nfi",
            ph.join(" "),
            pp.join(" "),
            dh.join(" "),
            dp.join(" ")
        );
    }
    frame(d, header, "vllm.sh", nodes, &body)
}
