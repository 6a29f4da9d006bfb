//! What the launch scripts (`vllm.sh`, `sglang.sh`) share: shell quoting, the placement of
//! instances on nodes and GPUs, the script's frame, and [`parse_script`], which reads a script
//! disagg wrote back into its [`Deployment`] (`docs/deployment.md#scripts`).

use std::fmt::Write as _;

use super::import::{Component, RoleKind, Source};
pub use super::shell::{shell_join, shell_quote, shell_words};
use super::{Deployment, Engine, Header, Role};

/// One instance's place: on which nodes, and which GPUs of each.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub role: Role,
    /// The instance's index within its role.
    pub index: u32,
    /// (node, GPU indices on it), one per node the instance spans.
    pub nodes: Vec<(u32, Vec<u32>)>,
}

/// The instances of `d` packed on nodes of `d.gpus_per_node` GPUs, in role order (prefill,
/// decode; or worker): an instance that fits on a node takes the next free GPUs of the current
/// node, or of the next node when they are too few; a larger one takes whole fresh nodes,
/// its GPUs split evenly over them.
pub fn placements(d: &Deployment) -> Vec<Placement> {
    let gpn = d.gpus_per_node.max(1);
    let (mut node, mut used) = (0u32, 0u32);
    let mut out = Vec::new();
    for (role, w) in d.roles() {
        let g = w.gpus();
        for index in 0..w.replicas {
            let nodes = d.nodes_of(w);
            if nodes == 1 {
                if used + g > gpn && used > 0 {
                    node += 1;
                    used = 0;
                }
                out.push(Placement {
                    role,
                    index,
                    nodes: vec![(node, (used..used + g).collect())],
                });
                used += g;
            } else {
                if used > 0 {
                    node += 1;
                    used = 0;
                }
                let per = g / nodes;
                out.push(Placement {
                    role,
                    index,
                    nodes: (0..nodes).map(|k| (node + k, (0..per).collect())).collect(),
                });
                node += nodes;
            }
        }
    }
    out
}

/// The number of nodes the placements use.
pub fn node_count(p: &[Placement]) -> u32 {
    p.iter()
        .flat_map(|x| x.nodes.iter().map(|(n, _)| n + 1))
        .max()
        .unwrap_or(1)
}

/// A GPU list as `CUDA_VISIBLE_DEVICES` takes it.
pub fn gpu_list(g: &[u32]) -> String {
    g.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The variable holding node `n`'s address (`NODE_0`), and its use in a command (`$NODE_0`).
pub fn node_var(n: u32) -> String {
    format!("NODE_{n}")
}

/// The frame of a launch script: the header, disagg's annotations as comment lines, the
/// settings, the `serve` function, then `body` (the commands), then `wait`.
pub fn frame(d: &Deployment, header: &Header, file: &str, nodes: u32, body: &str) -> String {
    let mut s = String::from("#!/usr/bin/env bash\n");
    s.push_str(&header.lines(file));
    let _ = writeln!(s, "# disagg.dev/name: {}", d.name);
    for (k, v) in d.annotations(false) {
        let _ = writeln!(s, "# {k}: {v}");
    }
    let _ = writeln!(
        s,
        "#\n# Run this script on each of the {nodes} node(s) with DISAGG_NODE set to the node's \
         index (0 to {}) and NODE_0 ... NODE_{} set to the nodes' addresses: each node starts \
         its own instances; node 0 also starts the router.",
        nodes - 1,
        nodes - 1
    );
    s.push_str("set -euo pipefail\n");
    s.push_str("DISAGG_NODE=\"${DISAGG_NODE:-0}\"\n");
    for n in 0..nodes {
        let v = node_var(n);
        let _ = writeln!(s, "{v}=\"${{{v}:-127.0.0.1}}\"");
    }
    s.push_str(
        "\n# serve ROLE INDEX NODE COMMAND...: starts COMMAND in the background on node NODE.\n\
         serve() {\n  local role=\"$1\" index=\"$2\" node=\"$3\"\n  shift 3\n  \
         if [ \"$DISAGG_NODE\" = \"$node\" ]; then\n    \
         echo \"disagg: starting $role $index on node $node\" >&2\n    \"$@\" &\n  fi\n}\n\n",
    );
    s.push_str(body);
    s.push_str("\nwait\n");
    s
}

/// A `serve` command: `serve ROLE INDEX NODE env VAR=... COMMAND ARGS`, continued over lines of
/// at most a few words.
pub fn serve_line(p: &Placement, node: u32, env: &[String], cmd: &[String]) -> String {
    let mut head = format!("serve {} {} {node}", p.role.as_str(), p.index);
    if !env.is_empty() {
        head.push_str(" env");
        for e in env {
            head.push(' ');
            head.push_str(e);
        }
    }
    let mut lines = vec![head];
    let mut cur = String::new();
    let mut i = 0;
    while i < cmd.len() {
        // A flag and its value stay on one line.
        let mut piece = shell_quote(&cmd[i]);
        if cmd[i].starts_with("--") && cmd.get(i + 1).is_some_and(|v| !v.starts_with("--")) {
            piece.push(' ');
            piece.push_str(&quote_keep_vars(&cmd[i + 1]));
            i += 1;
        }
        i += 1;
        if !cur.is_empty() && cur.len() + piece.len() > 70 {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&piece);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    let mut s = lines.join(" \\\n  ");
    s.push('\n');
    s
}

/// A word quoted for the shell, but `$NODE_k` references kept expandable (in double quotes).
pub fn quote_keep_vars(w: &str) -> String {
    if w.contains("$NODE_") && !w.contains(['"', '\\', '`', '\'', ' ']) {
        format!("\"{w}\"")
    } else {
        shell_quote(w)
    }
}

/// Reads a script disagg wrote (`vllm.sh`, `sglang.sh`) as the components `run --deployment`
/// assembles like a YAML file's (`docs/deployment.md#scripts`): one per role, its replicas the
/// distinct instance indices of its `serve` lines, its command the first instance's, and the
/// `# disagg.dev/KEY: VALUE` comment lines as annotations. Errors: a script with no `serve`
/// line, an unknown role or launcher.
pub(crate) fn parse_script(text: &str) -> Result<Source, String> {
    let mut src = Source::default();
    let mut logical: Vec<String> = Vec::new();
    let mut cur = String::new();
    for raw in text.lines() {
        let line = raw.trim_end();
        if cur.is_empty() {
            if let Some(c) = line.trim_start().strip_prefix('#') {
                if let Some((k, v)) = c.trim().split_once(": ") {
                    if k == "disagg.dev/name" {
                        src.name = v.trim().to_string();
                    } else if k.starts_with("disagg.dev/") {
                        src.annotations.push((k.to_string(), v.to_string()));
                    }
                }
                continue;
            }
        }
        match line.strip_suffix('\\') {
            Some(l) => {
                cur.push_str(l);
                cur.push(' ');
            }
            None => {
                cur.push_str(line);
                logical.push(std::mem::take(&mut cur));
            }
        }
    }
    // (role, instance index, command from the launcher on), in script order.
    let mut seen: Vec<(RoleKind, u32, Vec<String>)> = Vec::new();
    for (n, l) in logical.iter().enumerate() {
        let t = l.trim_start();
        if !t.starts_with("serve ") {
            continue;
        }
        let w = shell_words(t).map_err(|e| format!("line {}: {e}", n + 1))?;
        let bad = |why: &str| format!("'{}': {why}", t.trim());
        if w.len() < 5 {
            return Err(bad("expected serve ROLE INDEX NODE COMMAND"));
        }
        let role = match w[1].as_str() {
            "prefill" => RoleKind::Prefill,
            "decode" => RoleKind::Decode,
            "worker" => RoleKind::Worker,
            _ => return Err(bad("unknown role; valid: prefill, decode, worker")),
        };
        let index: u32 = w[2]
            .parse()
            .map_err(|_| bad("the instance index is not a number"))?;
        let mut rest: &[String] = &w[4..];
        if rest.first().is_some_and(|x| x == "env") {
            rest = &rest[1..];
            while rest
                .first()
                .is_some_and(|x| x.contains('=') && !x.starts_with('-'))
            {
                rest = &rest[1..];
            }
        }
        let launcher =
            match rest {
                [v, s, ..] if v == "vllm" && s == "serve" => Engine::Vllm,
                [py, dash_m, launch, ..]
                    if py.starts_with("python")
                        && dash_m == "-m"
                        && launch == "sglang.launch_server" =>
                {
                    Engine::Sglang
                }
                _ => return Err(bad(
                    "unknown launcher; valid: vllm serve MODEL, python3 -m sglang.launch_server",
                )),
            };
        src.format = match launcher {
            Engine::Vllm => "vllm-script",
            Engine::Sglang => "sglang-script",
        };
        seen.push((role, index, rest.to_vec()));
    }
    if seen.is_empty() {
        return Err("no serve command: not a launch script written by disagg plan --emit".into());
    }
    for kind in [RoleKind::Prefill, RoleKind::Decode, RoleKind::Worker] {
        let of_role: Vec<&(RoleKind, u32, Vec<String>)> =
            seen.iter().filter(|x| x.0 == kind).collect();
        let Some(zero) = of_role.iter().find(|x| x.1 == 0) else {
            if of_role.is_empty() {
                continue;
            }
            return Err(format!("no {} instance 0", kind.as_str()));
        };
        let mut idx: Vec<u32> = of_role.iter().map(|x| x.1).collect();
        idx.sort_unstable();
        idx.dedup();
        src.components.push(Component {
            name: kind.as_str().to_string(),
            kind,
            replicas: idx.len() as u32,
            command: zero.2.clone(),
            ..Component::default()
        });
    }
    Ok(src)
}
