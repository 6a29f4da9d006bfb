//! `sglang.sh`: one `sglang.launch_server` per prefill and decode instance (one per node of an
//! instance that spans nodes) and the SGLang router in PD mode in front
//! (`docs/deployment.md#scripts`).

use std::fmt::Write as _;

use super::script::{frame, gpu_list, node_count, node_var, placements, serve_line};
use super::{engine_flags, Deployment, Header, Role};

/// SGLang's HTTP port of instance `i` of a role.
fn port(role: Role, i: u32) -> u32 {
    match role {
        Role::Prefill => 30000 + i,
        Role::Decode => 31000 + i,
        Role::Worker => 32000 + i,
    }
}

/// The bootstrap port of prefill instance `i` (`--disaggregation-bootstrap-port`; the router
/// is told it after the prefill URL).
fn bootstrap_port(i: u32) -> u32 {
    8998 + i
}

/// The deployment as a bash script of SGLang launch commands.
pub fn emit(d: &Deployment, header: &Header) -> String {
    let ps = placements(d);
    let nodes = node_count(&ps);
    let mut body = String::new();
    let mut urls: Vec<(Role, String, u32)> = Vec::new();
    for (k, p) in ps.iter().enumerate() {
        let w = d.workers(p.role).expect("a placed role has workers");
        let http = port(p.role, p.index);
        let first = p.nodes[0].0;
        for (rank, (node, gpus)) in p.nodes.iter().enumerate() {
            let _ = writeln!(
                body,
                "# {} {}: node {node}, GPUs {}{}",
                p.role.as_str(),
                p.index,
                gpu_list(gpus),
                if p.nodes.len() > 1 {
                    format!(" (rank {rank} of {})", p.nodes.len())
                } else {
                    String::new()
                }
            );
            let env = vec![format!("CUDA_VISIBLE_DEVICES={}", gpu_list(gpus))];
            let mut cmd: Vec<String> = vec![
                "python3".into(),
                "-m".into(),
                "sglang.launch_server".into(),
                "--model-path".into(),
                d.model_id().into(),
                "--host".into(),
                "0.0.0.0".into(),
                "--port".into(),
                http.to_string(),
            ];
            if p.role == Role::Prefill {
                cmd.push("--disaggregation-bootstrap-port".into());
                cmd.push(bootstrap_port(p.index).to_string());
            }
            if p.nodes.len() > 1 {
                cmd.extend([
                    "--nnodes".to_string(),
                    p.nodes.len().to_string(),
                    "--node-rank".to_string(),
                    rank.to_string(),
                    "--dist-init-addr".to_string(),
                    format!("${}:{}", node_var(first), 5000 + k),
                ]);
            }
            cmd.extend(engine_flags(d, p.role, w, false));
            body.push_str(&serve_line(p, *node, &env, &cmd));
        }
        urls.push((
            p.role,
            format!("http://${}:{http}", node_var(first)),
            p.index,
        ));
    }
    if d.colocated.is_some() {
        let all: Vec<&str> = urls.iter().map(|(_, u, _)| u.as_str()).collect();
        let _ = writeln!(
            body,
            "\n# Aggregated workers: put a load balancer in front of {}",
            all.join(" ")
        );
    } else {
        let mut args = String::new();
        for (role, u, i) in &urls {
            match role {
                Role::Prefill => {
                    let _ = write!(args, " \\\n    --prefill \"{u}\" {}", bootstrap_port(*i));
                }
                _ => {
                    let _ = write!(args, " \\\n    --decode \"{u}\"");
                }
            }
        }
        let _ = writeln!(
            body,
            "\n# The SGLang router in PD mode on node 0, port 8000 (each prefill URL with its \
             bootstrap port)."
        );
        let _ = writeln!(
            body,
            "if [ \"$DISAGG_NODE\" = 0 ]; then\n  python3 -m sglang_router.launch_router \
             --pd-disaggregation{args} \\\n    --host 0.0.0.0 --port 8000 &\nfi"
        );
    }
    frame(d, header, "sglang.sh", nodes, &body)
}
