//! Named scenarios: the chapter's configurations (results.md §10, §14, §15 of the reference), so that
//! `disagg run --preset NAME` reproduces a published row.

use crate::scenario::Scenario;

/// A named scenario.
#[derive(Clone, Debug)]
pub struct Preset {
    /// The name users type.
    pub name: &'static str,
    /// Which published table it reproduces.
    pub group: &'static str,
    /// One line on what it shows.
    pub about: &'static str,
    /// The scenario.
    pub scenario: Scenario,
}

/// The chapter's base: Llama-3-8B, one H100 per instance, 1P1D over InfiniBand NDR, 8 req/s,
/// prompts 2,048 and outputs 256 tokens (cv 0.5), 800 requests, seed 1, the exact fast decode path
/// (results.md §10–§15).
pub fn chapter_base() -> Scenario {
    Scenario {
        model: "llama3-8b".into(),
        devices_per_instance: 1,
        rate: 8.0,
        fast: true,
        ..Scenario::default()
    }
}

/// Every preset, in the order `disagg presets` lists them.
pub fn all() -> Vec<Preset> {
    let base = chapter_base;
    let mut v = vec![Preset {
        name: "reference-default",
        group: "reference CLI",
        about: "the reference CLI with no flags: Llama-3-70B, 4xH100 per instance, 1P1D, ib-ndr, 4 req/s",
        scenario: Scenario::default(),
    }];
    let pools: [(&str, &str, Scenario); 5] = [
        (
            "pools-h100-h100",
            "H100 prefill + H100 decode",
            Scenario {
                device: "h100".into(),
                ..base()
            },
        ),
        (
            "pools-h100-a100",
            "H100 prefill + A100 decode: TPOT 8.8 -> 16.8 ms, less energy per token",
            Scenario {
                prefill_device: Some("h100".into()),
                decode_device: Some("a100".into()),
                ..base()
            },
        ),
        (
            "pools-a100-h100",
            "A100 prefill + H100 decode: the prefill pool cannot keep up, TTFT p99 47 s",
            Scenario {
                prefill_device: Some("a100".into()),
                decode_device: Some("h100".into()),
                ..base()
            },
        ),
        (
            "pools-a100-a100",
            "A100 prefill + A100 decode",
            Scenario {
                device: "a100".into(),
                ..base()
            },
        ),
        (
            "pools-2a100-h100",
            "2x A100 prefill + H100 decode: TTFT p99 back to 1.09 s, 96.9% of SLOs met",
            Scenario {
                prefill: 2,
                prefill_device: Some("a100".into()),
                decode_device: Some("h100".into()),
                ..base()
            },
        ),
    ];
    for (name, about, scenario) in pools {
        v.push(Preset {
            name,
            group: "results.md §10 heterogeneous pools, 8 req/s",
            about,
            scenario,
        });
    }
    let links: [(&str, &str, &str); 5] = [
        ("link-nvlink4", "nvlink4", "NVLink 4, 450 GB/s"),
        (
            "link-cpo-optical",
            "cpo-optical",
            "co-packaged optics (illustrative), 200 GB/s, 3 pJ/bit",
        ),
        (
            "link-ib-ndr",
            "ib-ndr",
            "InfiniBand NDR, 50 GB/s: the chapter's base configuration",
        ),
        ("link-eth-100g", "eth-100g", "100 GbE, 12.5 GB/s"),
        (
            "link-eth-25g",
            "eth-25g",
            "25 GbE, 3.125 GB/s: link 64% busy, TPOT p99 11.6 ms",
        ),
    ];
    for (name, link, about) in links {
        v.push(Preset {
            name,
            group: "results.md §14 the KV hand-off per link, 8 req/s",
            about,
            scenario: Scenario {
                link: link.into(),
                ..base()
            },
        });
    }
    v.push(Preset {
        name: "eth25g-14rps",
        group: "results.md §15 compression on a saturated link",
        about:
            "25 GbE at 14 req/s, uncompressed: link 94% busy, hand-off p99 9.7 s, 41% of SLOs met",
        scenario: Scenario {
            link: "eth-25g".into(),
            rate: 14.0,
            ..base()
        },
    });
    v.push(Preset {
        name: "eth25g-14rps-fp8",
        group: "results.md §15 compression on a saturated link",
        about:
            "25 GbE at 14 req/s, FP8 in the link: 54% busy, hand-off p99 167 ms, 100% of SLOs met",
        scenario: Scenario {
            link: "eth-25g".into(),
            rate: 14.0,
            kv_compress: Some("fp8".into()),
            kv_compress_at: disagg_model::CompressAt::Transit,
            ..base()
        },
    });
    v.push(Preset {
        name: "eth25g-14rps-fp8-gpu",
        group: "results.md §15 compression on a saturated link",
        about: "25 GbE at 14 req/s, FP8 compressed on the prefill GPU",
        scenario: Scenario {
            link: "eth-25g".into(),
            rate: 14.0,
            kv_compress: Some("fp8".into()),
            kv_compress_at: disagg_model::CompressAt::Endpoint,
            ..base()
        },
    });
    let beyond: [(&str, &str, Scenario); 5] = [
        (
            "eth25g-14rps-layerwise",
            "25 GbE at 14 req/s, KV streamed layer by layer",
            Scenario {
                send: disagg_model::SendMode::Layerwise,
                ..Scenario {
                    link: "eth-25g".into(),
                    rate: 14.0,
                    ..base()
                }
            },
        ),
        (
            "eth25g-14rps-fair",
            "25 GbE at 14 req/s, the link shared fairly (processor sharing) instead of FIFO",
            Scenario {
                link_sharing: crate::scenario::LinkSharing::Fair,
                ..Scenario {
                    link: "eth-25g".into(),
                    rate: 14.0,
                    ..base()
                }
            },
        ),
        (
            "eth25g-14rps-per-pair-2d",
            "25 GbE at 14 req/s, two decode instances, one link per prefill-decode pair",
            Scenario {
                link_topology: crate::scenario::LinkTopology::PerPair,
                decode: 2,
                ..Scenario {
                    link: "eth-25g".into(),
                    rate: 14.0,
                    ..base()
                }
            },
        ),
        (
            "eth25g-14rps-reserve",
            "25 GbE at 14 req/s, decode KV reserved when the transfer starts (vLLM)",
            Scenario {
                reserve_kv_on: crate::scenario::ReserveKvOn::Transfer,
                ..Scenario {
                    link: "eth-25g".into(),
                    rate: 14.0,
                    ..base()
                }
            },
        ),
        (
            "eth25g-14rps-decode-ttft",
            "25 GbE at 14 req/s, first token from decode after the KV lands (llm-d, Dynamo)",
            Scenario {
                first_token: crate::scenario::FirstToken::Decode,
                ..Scenario {
                    link: "eth-25g".into(),
                    rate: 14.0,
                    ..base()
                }
            },
        ),
    ];
    for (name, about, scenario) in beyond {
        v.push(Preset {
            name,
            group: "beyond the reference, 25 GbE at 14 req/s",
            about,
            scenario,
        });
    }
    v
}

/// The preset called `name`.
pub fn find(name: &str) -> Result<Preset, disagg_model::Error> {
    let all = all();
    match all.iter().position(|p| p.name == name) {
        Some(i) => Ok(all[i].clone()),
        None => Err(disagg_model::Error::unknown(
            "preset",
            name,
            all.iter().map(|p| p.name),
        )),
    }
}
