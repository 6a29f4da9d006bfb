//! The session generator against CPython's own `random` (fixtures/sessions, see its README).

use disagg_sim::pyrand::{poisson_workload, LengthDist};
use disagg_sim::sessions::{chat_sessions, find_workload, workloads, SessionShape};
use serde_json::Value;

fn expected(case: &str) -> Vec<Value> {
    let text = include_str!("../fixtures/sessions/expected.json");
    let v: Value = serde_json::from_str(text).unwrap();
    v[case].as_array().unwrap().clone()
}

fn check(case: &str, got: &[disagg_sim::sessions::SessionRequest]) {
    let want = expected(case);
    assert_eq!(got.len(), want.len(), "{case}");
    for (g, w) in got.iter().zip(&want) {
        let arrival: f64 = w[0].as_str().unwrap().parse().unwrap();
        let think: f64 = w[4].as_str().unwrap().parse().unwrap();
        assert_eq!(g.req.arrival_s, arrival, "{case} rid {}", g.req.rid);
        assert_eq!(
            g.req.prompt_len as u64,
            w[1].as_u64().unwrap(),
            "{case} rid {}",
            g.req.rid
        );
        assert_eq!(
            g.req.output_len as u64,
            w[2].as_u64().unwrap(),
            "{case} rid {}",
            g.req.rid
        );
        assert_eq!(
            g.after.map(|x| x as u64),
            w[3].as_u64(),
            "{case} rid {}",
            g.req.rid
        );
        assert_eq!(g.think_s, think, "{case} rid {}", g.req.rid);
    }
}

#[test]
fn chat_and_voice_match_cpython() {
    let chat = find_workload("chat").unwrap();
    check("chat", &chat.generate(2.0, 40, 1));
    let voice = find_workload("voice").unwrap();
    check("voice", &voice.generate(1.0, 30, 7));
    let shape = SessionShape {
        turns: 2,
        think_s: 1.5,
        system_prompts: 5,
        system_len: 200,
        share: 0.5,
    };
    let got = chat_sessions(
        3.0,
        25,
        &LengthDist::new(300.0, 0.5),
        &LengthDist::new(100.0, 0.5),
        3,
        &shape,
    );
    check("shared-half", &got);
}

#[test]
fn one_turn_without_system_prompt_is_poisson() {
    let p = LengthDist::new(2048.0, 0.5);
    let o = LengthDist::new(256.0, 0.5);
    let s = chat_sessions(8.0, 300, &p, &o, 1, &SessionShape::default());
    let w = poisson_workload(8.0, 300, &p, &o, 1);
    assert_eq!(s.iter().map(|x| x.req).collect::<Vec<_>>(), w);
    assert!(s.iter().all(|x| x.after.is_none() && x.think_s == 0.0));
}

#[test]
fn presets_have_their_slos() {
    let keys: Vec<&str> = workloads().iter().map(|w| w.key).collect();
    assert_eq!(
        keys,
        ["chat", "coding-agent", "offline-batch", "long-rag", "voice"]
    );
    let v = find_workload("voice").unwrap();
    assert_eq!((v.ttft_slo_s, v.tpot_slo_s), (0.3, 0.025));
    assert!(find_workload("karaoke")
        .unwrap_err()
        .to_string()
        .contains("chat"));
}

#[test]
fn closed_loop_turns_arrive_think_after_their_predecessor() {
    use disagg_sim::{simulate_config, Scenario};
    for fast in [false] {
        let sc = Scenario {
            model: "llama3-8b".into(),
            devices_per_instance: 1,
            rate: 1.0,
            requests: 90,
            turns: 3,
            think: 2.0,
            fast,
            ..Scenario::default()
        };
        let cfg = sc.build(&disagg_model::Catalogue::builtin()).unwrap();
        let w = cfg.requests();
        let closed = w.closed.clone().expect("closed-loop turns");
        let run = simulate_config(&cfg).unwrap();
        assert_eq!(run.summary().requests.completed, 90);
        assert_eq!(run.summary().workload.closed_loop_turns, 60);
        for (i, after) in closed.after.iter().enumerate() {
            let r = run.request(i);
            match after {
                None => assert_eq!(r.arrival_s, w.requests[i].arrival_s),
                Some(p) => {
                    let fin = run.request(*p as usize).finish_s.unwrap();
                    let want = fin + closed.think_s[i];
                    assert_eq!(r.arrival_s, want, "rid {i}");
                }
            }
        }
    }
}

#[test]
fn closed_loop_refuses_the_fast_path() {
    let sc = disagg_sim::Scenario {
        turns: 2,
        fast: true,
        ..disagg_sim::Scenario::default()
    };
    let e = sc
        .build(&disagg_model::Catalogue::builtin())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("--fast:"), "{e}");
}
