//! User-described hardware (`disagg_model::custom`) and the error type (`disagg_model::error`):
//! friendly units converted by hand (GB/s x 1e9, µs x 1e-6, TFLOP/s x 1e12, GB x 1e9), defaults,
//! presets as bases, key rules, and every message.

use disagg_model::custom::*;
use disagg_model::error::{non_negative, positive};
use disagg_model::*;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

#[test]
fn model_from_scratch_and_from_a_base() {
    let c = cat();
    let full = CustomModel {
        name: Some("Tiny".into()),
        layers: Some(2),
        d_model: Some(64),
        heads: Some(4),
        kv_heads: Some(2),
        d_ff: Some(128),
        vocab: Some(1000),
        ..Default::default()
    };
    let m = full.resolve("tiny", &c).unwrap();
    assert_eq!(m.key, "tiny");
    assert_eq!(m.name, "Tiny");
    assert_eq!(
        (
            m.n_layers,
            m.d_model,
            m.n_heads,
            m.n_kv_heads,
            m.d_ff,
            m.vocab
        ),
        (2, 64, 4, 2, 128, 1000)
    );
    // Defaults: BF16 weights and cache, LM head on every token, no head_dim, no context limit.
    assert_eq!(m.head_dim, None);
    assert_eq!(m.weight_bytes, 2.0);
    assert_eq!(m.kv_bytes, 2.0);
    assert_eq!(m.prefill_lm_head, LmHead::All);
    assert_eq!(m.context_tokens, None);
    // Without a name the key is the name.
    let m = CustomModel {
        name: None,
        ..full.clone()
    }
    .resolve("tiny", &c)
    .unwrap();
    assert_eq!(m.name, "tiny");
    // Every optional field given.
    let m = CustomModel {
        head_dim: Some(32),
        weight_bytes: Some(1.0),
        kv_bytes: Some(0.5),
        prefill_lm_head: Some("last".into()),
        context_tokens: Some(4096),
        ..full.clone()
    }
    .resolve("tiny", &c)
    .unwrap();
    assert_eq!(m.head_dim, Some(32));
    assert_eq!(m.weight_bytes, 1.0);
    assert_eq!(m.kv_bytes, 0.5);
    assert_eq!(m.prefill_lm_head, LmHead::Last);
    assert_eq!(m.context_tokens, Some(4096));
    // Each required field missing, in turn.
    for (field, clear) in [
        (
            "layers",
            (|m: &mut CustomModel| m.layers = None) as fn(&mut CustomModel),
        ),
        ("d_model", |m| m.d_model = None),
        ("heads", |m| m.heads = None),
        ("kv_heads", |m| m.kv_heads = None),
        ("d_ff", |m| m.d_ff = None),
        ("vocab", |m| m.vocab = None),
    ] {
        let mut x = full.clone();
        clear(&mut x);
        assert_eq!(
            x.resolve("tiny", &c).unwrap_err().to_string(),
            format!(
                "model 'tiny': missing '{field}' (give it, or start from a preset with base = \
                 \"...\")"
            )
        );
    }
    // From a base: every field of the preset, the key and name of the entry, overrides win.
    let based = CustomModel {
        base: Some("llama3-70b".into()),
        layers: Some(40),
        ..Default::default()
    };
    let m = based.resolve("half-70b", &c).unwrap();
    let b = c.model("llama3-70b").unwrap();
    assert_eq!(m.key, "half-70b");
    assert_eq!(m.name, "half-70b");
    assert_eq!(m.n_layers, 40);
    assert_eq!(
        (m.d_model, m.n_heads, m.n_kv_heads, m.d_ff, m.vocab),
        (b.d_model, b.n_heads, b.n_kv_heads, b.d_ff, b.vocab)
    );
    assert_eq!(m.context_tokens, Some(131072));
    assert_eq!(m.weight_bytes, 2.0);
    // A base with a non-default LM head, head_dim and byte sizes passes them on.
    let mut c2 = c.clone();
    let mut q = c.model("llama3-8b").unwrap().clone();
    q.key = "q".into();
    q.prefill_lm_head = LmHead::Last;
    q.head_dim = Some(64);
    q.weight_bytes = 1.0;
    q.kv_bytes = 1.0;
    c2.put_model(q).unwrap();
    let m = CustomModel {
        base: Some("q".into()),
        ..Default::default()
    }
    .resolve("q2", &c2)
    .unwrap();
    assert_eq!(m.prefill_lm_head, LmHead::Last);
    assert_eq!(m.head_dim, Some(64));
    assert_eq!((m.weight_bytes, m.kv_bytes), (1.0, 1.0));
    // Errors: unknown base, bad LM head, invalid shape, bad key.
    let e = CustomModel {
        base: Some("nope".into()),
        ..Default::default()
    }
    .resolve("x", &c)
    .unwrap_err();
    assert!(e.to_string().starts_with("unknown model 'nope'; valid: "));
    let e = CustomModel {
        prefill_lm_head: Some("first".into()),
        ..full.clone()
    }
    .resolve("tiny", &c)
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown prefill LM head 'first'; valid: all, last"
    );
    let e = CustomModel {
        kv_heads: Some(8),
        ..full.clone()
    }
    .resolve("tiny", &c)
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "model 'tiny' kv_heads: 8 is more than the 4 query heads"
    );
    assert_eq!(
        full.resolve("", &c).unwrap_err().to_string(),
        "model key '': use 1 to 64 letters, digits, '-', '_' or '.'"
    );
}

#[test]
fn keys() {
    let c = cat();
    let l = CustomLink {
        bandwidth_gb_s: Some(1.0),
        ..Default::default()
    };
    let ok = ["a", "A-b_c.9", &"k".repeat(64)];
    for k in ok {
        assert!(l.resolve(k, &c).is_ok(), "{k}");
    }
    let long = "k".repeat(65);
    for k in ["", &long, "a b", "a/b", "é", "a:b"] {
        assert_eq!(
            l.resolve(k, &c).unwrap_err().to_string(),
            format!("link key '{k}': use 1 to 64 letters, digits, '-', '_' or '.'"),
        );
    }
    let d = CustomDevice {
        base: Some("h100".into()),
        ..Default::default()
    };
    assert_eq!(
        d.resolve("a b", &c).unwrap_err().to_string(),
        "device key 'a b': use 1 to 64 letters, digits, '-', '_' or '.'"
    );
}

#[test]
fn devices() {
    let c = cat();
    let full = CustomDevice {
        name: Some("Chip".into()),
        peak_tflops: Some(500.0),
        mem_bw_tb_s: Some(2.5),
        mem_gb: Some(96.0),
        ..Default::default()
    };
    let d = full.resolve("chip", &c).unwrap();
    assert_eq!(d.key, "chip");
    assert_eq!(d.name, "Chip");
    assert_eq!(d.peak_flops, 500.0 * 1e12);
    assert_eq!(d.mem_bw, 2.5 * 1e12);
    assert_eq!(d.mem_capacity, 96.0 * 1e9);
    // Defaults: 0.55, 0.80, 700 W, 100 W, 1 pJ/FLOP, 60 pJ/B, no formats, no scale-up link.
    assert_eq!((d.flops_eff, d.bw_eff), (0.55, 0.80));
    assert_eq!((d.tdp_w, d.idle_w), (700.0, 100.0));
    assert_eq!((d.pj_per_flop, d.pj_per_byte), (1.0, 60.0));
    assert!(d.native_formats.is_empty());
    assert_eq!(d.scale_up, "");
    let d = CustomDevice {
        flops_eff: Some(0.5),
        bw_eff: Some(0.9),
        tdp_w: Some(500.0),
        idle_w: Some(50.0),
        pj_per_flop: Some(0.5),
        pj_per_byte: Some(30.0),
        name: None,
        ..full.clone()
    }
    .resolve("chip", &c)
    .unwrap();
    assert_eq!(d.name, "chip");
    assert_eq!((d.flops_eff, d.bw_eff), (0.5, 0.9));
    assert_eq!((d.tdp_w, d.idle_w), (500.0, 50.0));
    assert_eq!((d.pj_per_flop, d.pj_per_byte), (0.5, 30.0));
    for (field, clear) in [
        (
            "peak_tflops",
            (|d: &mut CustomDevice| d.peak_tflops = None) as fn(&mut CustomDevice),
        ),
        ("mem_bw_tb_s", |d| d.mem_bw_tb_s = None),
        ("mem_gb", |d| d.mem_gb = None),
    ] {
        let mut x = full.clone();
        clear(&mut x);
        assert_eq!(
            x.resolve("chip", &c).unwrap_err().to_string(),
            format!(
                "device 'chip': missing '{field}' (give it, or start from a preset with base = \
                 \"...\")"
            )
        );
    }
    // From the A100 preset: everything of it, the formats and scale-up link included.
    let a = c.device("a100").unwrap();
    let d = CustomDevice {
        base: Some("a100".into()),
        mem_gb: Some(40.0),
        ..Default::default()
    }
    .resolve("a100-small", &c)
    .unwrap();
    assert_eq!(d.mem_capacity, 40e9);
    assert_eq!(
        Device {
            key: a.key.clone(),
            name: a.name.clone(),
            mem_capacity: a.mem_capacity,
            ..d.clone()
        },
        *a
    );
    // An invalid result is rejected.
    let e = CustomDevice {
        idle_w: Some(800.0),
        ..full.clone()
    }
    .resolve("chip", &c)
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "device 'chip' idle_w: 800 W is not below the TDP of 700 W"
    );
    assert!(CustomDevice {
        base: Some("tpu".into()),
        ..Default::default()
    }
    .resolve("x", &c)
    .is_err());
}

#[test]
fn links() {
    let c = cat();
    let l = CustomLink {
        bandwidth_gb_s: Some(25.0),
        ..Default::default()
    }
    .resolve("wire", &c)
    .unwrap();
    assert_eq!(l.key, "wire");
    assert_eq!(l.name, "wire");
    assert_eq!(l.bandwidth_bps, 25.0 * 1e9);
    // Defaults: 10 µs, 1 channel, 10 pJ/bit.
    assert_eq!(l.latency_s, 10e-6);
    assert_eq!(l.channels, 1);
    assert_eq!(l.pj_per_bit, 10.0);
    let l = CustomLink {
        name: Some("Wire".into()),
        bandwidth_gb_s: Some(25.0),
        latency_us: Some(3.0),
        pj_per_bit: Some(2.5),
        channels: Some(8),
        ..Default::default()
    }
    .resolve("wire", &c)
    .unwrap();
    assert_eq!(l.name, "Wire");
    assert_eq!(l.latency_s, 3.0 * 1e-6);
    assert_eq!(l.pj_per_bit, 2.5);
    assert_eq!(l.channels, 8);
    assert_eq!(
        CustomLink::default()
            .resolve("wire", &c)
            .unwrap_err()
            .to_string(),
        "link 'wire': missing 'bandwidth_gb_s' (give it, or start from a preset with base = \
         \"...\")"
    );
    // From a preset: its bandwidth, latency, channels and energy.
    let l = CustomLink {
        base: Some("eth-100g".into()),
        channels: Some(4),
        ..Default::default()
    }
    .resolve("eth-x4", &c)
    .unwrap();
    assert_eq!(l.bandwidth_bps, 12.5e9);
    assert_eq!(l.latency_s, 20e-6);
    assert_eq!(l.pj_per_bit, 15.0);
    assert_eq!(l.channels, 4);
    let mut c2 = c.clone();
    let mut four = c.link("ib-ndr").unwrap().clone();
    four.key = "ib4".into();
    four.channels = 4;
    c2.put_link(four).unwrap();
    let l = CustomLink {
        base: Some("ib4".into()),
        ..Default::default()
    }
    .resolve("ib4b", &c2)
    .unwrap();
    assert_eq!(l.channels, 4);
    let e = CustomLink {
        bandwidth_gb_s: Some(25.0),
        channels: Some(0),
        ..Default::default()
    }
    .resolve("wire", &c)
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "link 'wire' channels: must be between 1 and 4096, got 0"
    );
}

#[test]
fn emptiness() {
    assert!(CustomModel::default().is_empty());
    assert!(CustomModel {
        base: Some("llama3-8b".into()),
        ..Default::default()
    }
    .is_empty());
    assert!(!CustomModel {
        base: Some("llama3-8b".into()),
        layers: Some(2),
        ..Default::default()
    }
    .is_empty());
    assert!(!CustomModel {
        name: Some("x".into()),
        ..Default::default()
    }
    .is_empty());
    assert!(CustomDevice::default().is_empty());
    assert!(CustomDevice {
        base: Some("h100".into()),
        ..Default::default()
    }
    .is_empty());
    assert!(!CustomDevice {
        base: Some("h100".into()),
        tdp_w: Some(500.0),
        ..Default::default()
    }
    .is_empty());
    assert!(CustomLink::default().is_empty());
    assert!(CustomLink {
        base: Some("pcie5".into()),
        ..Default::default()
    }
    .is_empty());
    assert!(!CustomLink {
        base: Some("pcie5".into()),
        channels: Some(2),
        ..Default::default()
    }
    .is_empty());
}

#[test]
fn catalogue_files() {
    let mut c = cat();
    let mut f = CatalogueFile::default();
    f.models.insert(
        "llama3-8b".into(),
        CustomModel {
            base: Some("llama3-8b".into()),
            name: Some("Mine".into()),
            layers: Some(16),
            ..Default::default()
        },
    );
    // BTreeMap order: "llama3-8b" before "zz": a model may start from one added just before it.
    f.models.insert(
        "zz".into(),
        CustomModel {
            base: Some("llama3-8b".into()),
            ..Default::default()
        },
    );
    f.devices.insert(
        "h100".into(),
        CustomDevice {
            base: Some("h100".into()),
            tdp_w: Some(650.0),
            ..Default::default()
        },
    );
    f.devices.insert(
        "chip".into(),
        CustomDevice {
            base: Some("b200".into()),
            ..Default::default()
        },
    );
    f.links.insert(
        "eth-25g".into(),
        CustomLink {
            base: Some("eth-25g".into()),
            channels: Some(2),
            ..Default::default()
        },
    );
    f.links.insert(
        "wire".into(),
        CustomLink {
            bandwidth_gb_s: Some(1.0),
            ..Default::default()
        },
    );
    assert_eq!(
        f.replaced(&c),
        ["models.llama3-8b", "devices.h100", "links.eth-25g"]
    );
    assert!(CatalogueFile::default().replaced(&c).is_empty());
    f.apply(&mut c).unwrap();
    assert_eq!(c.model("llama3-8b").unwrap().name, "Mine");
    assert_eq!(c.models[0].key, "llama3-8b");
    // "zz" resolved after the replaced llama3-8b, so it has the replacement's 16 layers (not the
    // preset's 32); its name is its key.
    assert_eq!(c.model("zz").unwrap().n_layers, 16);
    assert_eq!(c.model("zz").unwrap().name, "zz");
    assert_eq!(c.models.len(), 32);
    assert_eq!(c.device("h100").unwrap().tdp_w, 650.0);
    assert_eq!(c.device("chip").unwrap().tdp_w, 1000.0);
    assert_eq!(c.devices.len(), 9);
    assert_eq!(c.link("eth-25g").unwrap().channels, 2);
    assert_eq!(c.link("wire").unwrap().bandwidth_bps, 1e9);
    assert_eq!(c.links.len(), 10);
    // After applying, every entry is a replacement.
    assert_eq!(f.replaced(&c).len(), 6);

    // An error in any table stops the file.
    for bad in [
        CatalogueFile {
            models: [("m".to_string(), CustomModel::default())].into(),
            ..Default::default()
        },
        CatalogueFile {
            devices: [("d".to_string(), CustomDevice::default())].into(),
            ..Default::default()
        },
        CatalogueFile {
            links: [("l".to_string(), CustomLink::default())].into(),
            ..Default::default()
        },
    ] {
        let mut c = cat();
        assert!(bad.apply(&mut c).is_err(), "{bad:?}");
        assert_eq!(c, cat());
    }
}

#[test]
fn errors() {
    let e = Error::invalid("opt", "why not");
    assert_eq!(
        e,
        Error::Invalid {
            what: "opt".into(),
            why: "why not".into()
        }
    );
    assert_eq!(e.to_string(), "opt: why not");
    let e = Error::unknown("thing", "x", ["a", "b"]);
    assert_eq!(
        e,
        Error::UnknownName {
            kind: "thing",
            name: "x".into(),
            valid: vec!["a".into(), "b".into()]
        }
    );
    assert_eq!(e.to_string(), "unknown thing 'x'; valid: a, b");
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert_eq!(boxed.to_string(), "unknown thing 'x'; valid: a, b");

    for ok in [1e-300, 0.5, 3.0, f64::MAX] {
        assert_eq!(positive("v", ok), Ok(ok));
    }
    for bad in [0.0, -0.0, -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        assert_eq!(
            positive("v", bad).unwrap_err().to_string(),
            format!("v: must be a positive number, got {bad}")
        );
    }
    for ok in [0.0, 1e-300, 2.5] {
        assert_eq!(non_negative("w", ok), Ok(ok));
    }
    for bad in [-1e-300, -1.0, f64::INFINITY, f64::NAN] {
        assert_eq!(
            non_negative("w", bad).unwrap_err().to_string(),
            format!("w: must be a finite number >= 0, got {bad}")
        );
    }
}

/// A custom model in TOML may be an MoE, FFT-mixing or CED model (`docs/cost-model.md#catalogue`): fields
/// inherit from the base, a field given replaces it, and the construction checks apply.
#[test]
fn custom_models_with_experts_mixers_and_encoders() {
    let c = cat();
    let resolve = |toml_text: &str| -> Result<ModelSpec, String> {
        let m: CustomModel = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        m.resolve("mine", &c).map_err(|e| e.to_string())
    };
    // An MoE from a dense base: 16 experts, top-2, one shared.
    let m =
        resolve("base = 'llama3-8b'\nn_experts = 16\ntop_k = 2\nn_shared_experts = 1\n").unwrap();
    let x = m.moe.unwrap();
    assert_eq!((x.n_experts, x.top_k, x.n_shared_experts), (16, 2, 1));
    // Active: attention (2*4096*4096 + 2*4096*1024 = 41,943,040) + router 4096*16 = 65,536 +
    // (2 + 1) * 3*4096*14336 = 528,482,304 -> 570,490,880 per layer.
    assert_eq!(m.params_per_layer(), 570_490_880);
    // Mixtral keeps its experts and may change top-k; n_experts = 0 makes it dense.
    let m = resolve("base = 'mixtral-8x7b'\ntop_k = 1\n").unwrap();
    assert_eq!(m.moe.unwrap().n_experts, 8);
    assert!(resolve("base = 'mixtral-8x7b'\nn_experts = 0\n")
        .unwrap()
        .moe
        .is_none());
    assert!(resolve("base = 'llama3-8b'\ntop_k = 2\n")
        .unwrap_err()
        .contains("needs n_experts"));
    assert!(resolve("base = 'mixtral-8x7b'\ntop_k = 9\n")
        .unwrap_err()
        .contains("top_k"));
    // A hybrid from a dense base, every 2nd layer attention: 16 attention layers of 32.
    let m = resolve("base = 'llama3-8b'\nmixer = 'hybrid'\nattn_every = 2\n").unwrap();
    let f = m.fft.clone().unwrap();
    assert_eq!(
        (f.mixer, f.attn_every, f.n_attn(32)),
        (Mixer::Hybrid, 2, 16)
    );
    // KV per token: 2*16*8*128 = 32,768 attention values + 16*2*4096 = 131,072 cached
    // projection inputs, 163,840 values x 2 bytes.
    assert_eq!(m.kv_bytes_per_token(), 327_680.0);
    // The Hyena preset with a distilled decode and a state of 8 values per channel:
    // 32 * 2 * 4096 * 8 * 4 bytes = 8,388,608 bytes per sequence, the hand-off whatever P.
    let m = resolve("base = 'llama3-8b-hyena'\ndecode_style = 'distilled'\ndistill_state = 8\n")
        .unwrap();
    assert_eq!(m.state_bytes_per_seq(), 8_388_608.0);
    assert_eq!(m.handoff_bytes(10), m.handoff_bytes(100_000));
    assert_eq!(m.kv_bytes_per_token(), 0.0);
    // The base's FFT fields carry over only with its mixer: the block-circulant Hyena preset
    // keeps its 256-blocks as a Hyena, and as a hybrid starts from the hybrid's defaults (no
    // blocks, which a hybrid may not have).
    let f = resolve("base = 'llama3-8b-hyena-circ'\nmixer = 'hyena'\n")
        .unwrap()
        .fft
        .unwrap();
    assert_eq!((f.mixer, f.circulant_block), (Mixer::Hyena, 256));
    let f = resolve("base = 'llama3-8b-hyena-circ'\nmixer = 'hybrid'\n")
        .unwrap()
        .fft
        .unwrap();
    assert_eq!(f, FftMixing::new(Mixer::Hybrid));
    // mixer = 'attention' drops the mixer; Hyena fields then make no sense.
    assert!(resolve("base = 'llama3-8b-hyena'\nmixer = 'attention'\n")
        .unwrap()
        .fft
        .is_none());
    for bad in [
        "base = 'llama3-8b'\nhyena_order = 3\n",
        "base = 'llama3-8b'\nmixer = 'mamba'\n",
        "base = 'llama3-8b'\nmixer = 'hybrid'\ncirculant_block = 64\n",
        "base = 'llama3-8b'\nmixer = 'hybrid'\ndecode_style = 'distilled'\n",
        "base = 'llama3-8b-hyena'\ndecode_style = 'recurrent'\n",
        "base = 'llama3-8b-hyena'\nact_format = 'fp16'\n",
        "base = 'llama3-8b-hyena'\ncirculant_block = 100\n",
        "base = 'llama3-8b-hyena'\nhyena_order = 0\n",
        "base = 'llama3-8b'\nmixer = 'hybrid'\nattn_every = 0\n",
    ] {
        assert!(resolve(bad).is_err(), "{bad}");
    }
    // CED: the 8B preset with 8 encoder layers and a replay of 64 on decode.
    let m = resolve("base = 'llama3-8b-ced'\nced_encoder_layers = 8\nced_replay = 64\nced_replay_on = 'decode'\n")
        .unwrap();
    let e = m.ced.unwrap();
    assert_eq!(
        (e.encoder_layers, e.replay, e.replay_on),
        (8, 64, ReplayOn::Decode)
    );
    assert!(resolve("base = 'llama3-8b-ced'\nced_encoder_layers = 0\n")
        .unwrap()
        .ced
        .is_none());
    for bad in [
        "base = 'llama3-8b'\nced_replay = 64\n",
        "base = 'llama3-8b'\nced_encoder_layers = 32\n",
        "base = 'llama3-8b-ced'\nced_replay = 0\n",
        "base = 'llama3-8b-ced'\nced_replay_on = 'both'\n",
        "base = 'llama3-8b-hyena'\nced_encoder_layers = 4\n",
        "base = 'mixtral-8x7b'\nced_encoder_layers = 4\n",
        "base = 'llama3-8b-hyena'\nn_experts = 8\ntop_k = 2\n",
    ] {
        assert!(resolve(bad).is_err(), "{bad}");
    }
}
