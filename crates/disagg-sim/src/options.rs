//! Every [`Scenario`] option, described once.
//!
//! [`OPTIONS`] has one row per field of [`Scenario`]: its serde key, CLI flag, kind of value
//! (taken from the field's type, so the two cannot disagree), help text, help heading, value name
//! and the default the help shows. Everything that reads options from text derives from it:
//! [`Scenario::set`] (one key from a string, errors naming the flag and the valid choices),
//! [`Scenario::from_flags`], the CLI's scenario flags (built row by row with clap's builder API)
//! and `disagg sweep --vary` / `compare --variant`. Numeric bounds stay in [`crate::ranges`]
//! (which also covers flags that are not scenario options); [`Opt::range`] links a row to its
//! entry by key. Scenario files and the web API read a [`Scenario`] with serde, whose names are
//! the same keys and the same enum names.

use disagg_model::variants::Named;
use disagg_model::{
    CompressAt, Detection, Error, LmHead, QuantFormat, ReplayOn, Retention, SendMode,
};
use disagg_trace::TraceFormat;

use crate::levers::{BatchPolicy, DecodeRouter, KvPolicy, Preemption, SwapIn};
use crate::prefix_cache::PrefixEviction;
use crate::ranges::{Num, NumRange};
use crate::scenario::{FirstToken, LinkSharing, LinkTopology, Mode, ReserveKvOn, Scenario};

/// What values an option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A free name (a catalogue key, a file).
    Name,
    /// One of a fixed set of names (the first listed is the canonical default spelling).
    Choice(&'static [&'static str]),
    /// A whole number up to `u32::MAX`.
    U32,
    /// A whole number up to `u64::MAX`.
    U64,
    /// A real number.
    F64,
    /// A switch: present or not (`true`/`false` where a value is written out).
    Switch,
}

impl Kind {
    /// Whether the value is a number.
    pub fn is_numeric(self) -> bool {
        matches!(self, Kind::U32 | Kind::U64 | Kind::F64)
    }
}

/// One scenario option.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Opt {
    /// The [`Scenario`] field and serde key (`link_channels`).
    pub key: &'static str,
    /// The CLI flag (`--link-channels`).
    pub flag: &'static str,
    /// Its kind of value.
    pub kind: Kind,
    /// A choice's canonical names, one per value (what a menu offers; [`Kind::Choice`] also
    /// lists the aliases errors name); empty for other kinds.
    pub choices: &'static [&'static str],
    /// Whether it may be left unset (an `Option` field).
    pub optional: bool,
    /// One line of help, without the default.
    pub help: &'static str,
    /// The help section it is listed under.
    pub heading: &'static str,
    /// Whether outputs leave it out while it holds its default (the options added after the
    /// reference's: a run that does not use them echoes what it echoed before they existed).
    pub quiet: bool,
    /// The group of the web page's form it is shown in (one of [`PAGE_GROUPS`]); `None`: not on
    /// the page's form.
    pub page: Option<&'static str>,
    /// The value's placeholder in help (`N`, `MODEL`); `None` for a switch.
    pub value_name: Option<&'static str>,
    /// The default as help shows it, in brackets after the text (`4`, `--device`, `TDP`).
    pub shown_default: Option<&'static str>,
}

impl Opt {
    /// The help line as `--help` prints it: the text, then the default in brackets.
    pub fn help_text(&self) -> String {
        match self.shown_default {
            Some(d) => format!("{} [{d}]", self.help),
            None => self.help.to_string(),
        }
    }

    /// The option's entry in [`crate::ranges::RANGES`], for numeric options.
    pub fn range(&self) -> Option<&'static NumRange> {
        crate::ranges::for_key(self.key)
    }

    /// The row as the web page reads it (`/api/catalogue`'s `options`): key, flag, kind, whether
    /// it may be unset, its page group (`null`: not on the page's form), the default help shows,
    /// and a choice's canonical names or a number's bounds and unit.
    pub fn describe(&self) -> serde_json::Value {
        let kind = match self.kind {
            Kind::Name => "name",
            Kind::Choice(_) => "choice",
            Kind::U32 | Kind::U64 => "integer",
            Kind::F64 => "number",
            Kind::Switch => "switch",
        };
        let mut v = serde_json::json!({
            "key": self.key,
            "flag": self.flag,
            "kind": kind,
            "optional": self.optional,
            "group": self.page,
            "default": self.shown_default,
        });
        let o = v.as_object_mut().expect("object");
        if let Kind::Choice(_) = self.kind {
            o.insert("choices".into(), serde_json::json!(self.choices));
        }
        if let Some(r) = self.range() {
            o.insert("bounds".into(), serde_json::json!(r.bounds));
            o.insert("unit".into(), serde_json::json!(r.unit));
        }
        v
    }
}

/// Every option as the web page reads it ([`Opt::describe`]), in table order.
pub fn describe_all() -> Vec<serde_json::Value> {
    OPTIONS.iter().map(Opt::describe).collect()
}

/// The keys outputs leave out while they hold their defaults (the "quiet at default" column).
pub fn quiet_default_keys() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().filter(|o| o.quiet).map(|o| o.key)
}

/// The row of scenario key `key`.
pub fn for_key(key: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.key == key)
}

/// The row of CLI flag `flag` (`--rate`).
pub fn for_flag(flag: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.flag == flag)
}

/// A field type of [`Scenario`] as an option: its kind, how it reads from text, and its value as a
/// number (for the range checks).
pub trait OptValue: Sized {
    /// Its kind of value.
    const KIND: Kind;
    /// Whether it may be unset.
    const OPTIONAL: bool = false;
    /// A choice's canonical names, one per value, in order (what a menu offers); empty for
    /// other kinds.
    const CHOICES: &'static [&'static str] = &[];
    /// Reads `raw` as given to `flag` (errors name the flag).
    fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error>;
    /// The value as a number (`None` for a non-number or an unset option).
    fn num(&self) -> Option<Num> {
        None
    }
}

impl OptValue for String {
    const KIND: Kind = Kind::Name;
    fn from_raw(_: &'static str, raw: &str) -> Result<Self, Error> {
        Ok(raw.to_string())
    }
}

impl OptValue for bool {
    const KIND: Kind = Kind::Switch;
    fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error> {
        match raw.trim() {
            "true" | "yes" | "on" => Ok(true),
            "false" | "no" | "off" => Ok(false),
            other => Err(Error::invalid(
                flag,
                format!("expected true or false, got '{other}'"),
            )),
        }
    }
}

fn whole<T: std::str::FromStr>(flag: &'static str, raw: &str) -> Result<T, Error> {
    raw.trim()
        .parse::<T>()
        .map_err(|_| Error::invalid(flag, format!("expected a whole number, got '{raw}'")))
}

impl OptValue for u32 {
    const KIND: Kind = Kind::U32;
    fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error> {
        whole(flag, raw)
    }
    fn num(&self) -> Option<Num> {
        Some(Num::Int((*self).into()))
    }
}

impl OptValue for u64 {
    const KIND: Kind = Kind::U64;
    fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error> {
        whole(flag, raw)
    }
    fn num(&self) -> Option<Num> {
        Some(Num::Int(*self))
    }
}

impl OptValue for f64 {
    const KIND: Kind = Kind::F64;
    fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error> {
        raw.trim()
            .parse::<f64>()
            .map_err(|_| Error::invalid(flag, format!("expected a number, got '{raw}'")))
    }
    fn num(&self) -> Option<Num> {
        Some(Num::Float(*self))
    }
}

impl<T: OptValue> OptValue for Option<T> {
    const KIND: Kind = T::KIND;
    const OPTIONAL: bool = true;
    const CHOICES: &'static [&'static str] = T::CHOICES;
    fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error> {
        T::from_raw(flag, raw).map(Some)
    }
    fn num(&self) -> Option<Num> {
        self.as_ref().and_then(T::num)
    }
}

/// An option whose value is one of a fixed set of names: the flag its errors name.
pub trait Choice: OptValue {
    /// The CLI flag (`--send`).
    const FLAG: &'static str;
}

/// The choice options: each [`Named`] enum and the flag its errors name. A type's names, parser
/// and canonical spelling come from its [`disagg_model::named_enum!`] declaration.
macro_rules! choices {
    ($($t:ty => $flag:literal),+ $(,)?) => {$(
        impl OptValue for $t {
            const KIND: Kind = Kind::Choice(<$t as Named>::NAMES);
            const CHOICES: &'static [&'static str] = <$t as Named>::CANONICAL;
            fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error> {
                <$t as Named>::parse(raw)
                    .map_err(|_| Error::unknown(flag, raw, <$t as Named>::NAMES.iter().copied()))
            }
        }
        impl Choice for $t {
            const FLAG: &'static str = $flag;
        }
    )+};
}

/// The scheduling choices written by hand in [`crate::levers`], seen as [`Named`] (until they
/// are declared with [`disagg_model::named_enum!`] too).
macro_rules! named_by_hand {
    ($($t:ty => $what:literal),+ $(,)?) => {$(
        impl Named for $t {
            const WHAT: &'static str = $what;
            const NAMES: &'static [&'static str] = &<$t>::NAMES;
            const CANONICAL: &'static [&'static str] = &<$t>::NAMES;
            fn parse(s: &str) -> Result<Self, Error> {
                <$t>::parse(s)
            }
            fn as_str(self) -> &'static str {
                <$t>::as_str(self)
            }
        }
    )+};
}

named_by_hand! {
    BatchPolicy => "--batch-policy",
    Preemption => "--preemption",
    DecodeRouter => "--decode-router",
    SwapIn => "--swap-in",
}

choices! {
    Mode => "--mode",
    LinkSharing => "--link-sharing",
    LinkTopology => "--link-topology",
    ReserveKvOn => "--reserve-kv-on",
    FirstToken => "--first-token",
    BatchPolicy => "--batch-policy",
    KvPolicy => "--kv-policy",
    Preemption => "--preemption",
    DecodeRouter => "--decode-router",
    SwapIn => "--swap-in",
    SendMode => "--send",
    CompressAt => "--kv-compress-at",
    QuantFormat => "--weight-format",
    Detection => "--ft-detection",
    LmHead => "--prefill-lm-head",
    Retention => "--kv-retention",
    ReplayOn => "--ced-replay-on",
    PrefixEviction => "--prefix-eviction",
}

/// The trace formats' names, in [`TraceFormat::ALL`]'s order (the trace reader's own parser reads
/// them; a unit test checks the two agree).
const TRACE_FORMATS: &[&str] = &["azure", "mooncake", "burstgpt", "reference"];

impl OptValue for TraceFormat {
    const KIND: Kind = Kind::Choice(TRACE_FORMATS);
    const CHOICES: &'static [&'static str] = TRACE_FORMATS;
    fn from_raw(flag: &'static str, raw: &str) -> Result<Self, Error> {
        // The trace reader's own message (it quotes the name safely and lists the formats).
        TraceFormat::parse(raw).map_err(|e| Error::invalid(flag, e.to_string()))
    }
}

impl Choice for TraceFormat {
    const FLAG: &'static str = "--trace-format";
}

/// Reads `--kv-format` from a scenario file or the web API (errors name that flag).
pub fn kv_format_by_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<QuantFormat, D::Error> {
    let name = <String as serde::Deserialize>::deserialize(d)?;
    read_name_as("--kv-format", &name)
}

/// Reads `--compute-format` from a scenario file or the web API (errors name that flag).
pub fn compute_format_by_name<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<QuantFormat, D::Error> {
    let name = <String as serde::Deserialize>::deserialize(d)?;
    read_name_as("--compute-format", &name)
}

/// Reads a [`Choice`] field of [`Scenario`] (serde `deserialize_with`): a name, read as its flag
/// reads it, so scenario files and the web API accept the same names and aliases and an unknown
/// one is the flag's one-line error (`unknown --send 'x'; valid: whole, layerwise`).
/// A switch that is left out of the scenario's JSON when off: `null` (how a sweep fills an
/// absent key) reads as off.
pub fn switch_or_null<'de, D>(d: D) -> Result<bool, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <Option<bool> as serde::Deserialize>::deserialize(d).map(|b| b.unwrap_or(false))
}

pub fn by_name<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Choice,
{
    let name = <String as serde::Deserialize>::deserialize(d)?;
    read_name(&name)
}

/// `name` read as [`Choice`] `T`'s flag reads it. The error quotes the name with its control
/// characters escaped (`'a\nb'`): a file's message stays on one line whoever prints it.
fn read_name<T: Choice, E: serde::de::Error>(name: &str) -> Result<T, E> {
    read_name_as(T::FLAG, name)
}

/// `name` read as option type `T` given to `flag` (for a type several flags share).
fn read_name_as<T: OptValue, E: serde::de::Error>(flag: &'static str, name: &str) -> Result<T, E> {
    T::from_raw(flag, name).map_err(|e| {
        let e = match e {
            Error::UnknownName { kind, name, valid } => Error::UnknownName {
                kind,
                name: name.escape_debug().to_string(),
                valid,
            },
            other => other,
        };
        E::custom(e)
    })
}

/// [`by_name`] for a choice left out of the scenario's JSON at its default: `null` (how a sweep
/// fills an absent key) reads as the default.
pub fn by_name_or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Choice + Default,
{
    match <Option<String> as serde::Deserialize>::deserialize(d)? {
        None => Ok(T::default()),
        Some(name) => read_name(&name),
    }
}

/// [`by_name`] for an optional field (`null` leaves it unset).
pub fn by_name_opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Choice,
{
    match <Option<String> as serde::Deserialize>::deserialize(d)? {
        None => Ok(None),
        Some(name) => read_name(&name).map(Some),
    }
}

/// Help headings.
const SCENARIO: &str = "Scenario";
const HARDWARE: &str = "Model and hardware";
const POOLS: &str = "Pools and link";
const BEYOND: &str = "Beyond the reference";
/// The heading of the cost levers (`docs/cost-model.md#parallelism`, `docs/cost-model.md#quantisation`).
pub const PARALLEL: &str = "Parallelism and formats";
/// The heading of the FFT-mixing, optical engine and PPA options (`docs/levers.md#fft-mixing`-`docs/levers.md#ppa`).
pub const OPTICAL: &str = "FFT-mixing models, optical engine and PPA";
/// The heading of the scheduling levers (`docs/levers.md#scheduled-instances`).
pub const LEVERS: &str = "Scheduling and KV memory";
const WORKLOAD: &str = "Workload";
const TRACE: &str = "Trace replay";
const SLOS: &str = "SLOs";
const POWER: &str = "Power";
/// The heading of the custom model shape flags.
pub const CUSTOM_MODEL: &str = "Custom model shape (overrides the --model preset)";
/// The heading of the custom link flags.
pub const CUSTOM_LINK: &str = "Custom link (overrides the --link preset)";
/// The heading of the custom device flags.
pub const CUSTOM_DEVICE: &str = "Custom device (overrides the device preset)";

/// The "quiet at default" column: left out of outputs while at its default.
const QUIET: bool = true;
/// The "quiet at default" column: always echoed.
const ECHOED: bool = false;

/// The groups of the web page's form, in the page's order (the "page group" column).
pub const PAGE_GROUPS: &[&str] = &[
    "Workload",
    "Pools",
    "Link",
    "Scheduling and KV memory",
    "Parallelism and formats",
    "Models and engines",
    "SLOs",
];
const PAGE_WORKLOAD: Option<&str> = Some(PAGE_GROUPS[0]);
const PAGE_POOLS: Option<&str> = Some(PAGE_GROUPS[1]);
const PAGE_LINK: Option<&str> = Some(PAGE_GROUPS[2]);
const PAGE_SCHEDULING: Option<&str> = Some(PAGE_GROUPS[3]);
const PAGE_PARALLEL: Option<&str> = Some(PAGE_GROUPS[4]);
const PAGE_ENGINES: Option<&str> = Some(PAGE_GROUPS[5]);
const PAGE_SLOS: Option<&str> = Some(PAGE_GROUPS[6]);
/// Not on the page's form.
const OFF_PAGE: Option<&str> = None;

macro_rules! options {
    ($( $key:ident : $ty:ty, $flag:literal, $heading:expr, $quiet:expr, $page:expr, $vn:expr,
        $def:expr, $help:expr; )*) => {
        /// Every scenario option, in the order the CLI lists them.
        pub const OPTIONS: &[Opt] = &[$(Opt {
            key: stringify!($key),
            flag: $flag,
            kind: <$ty as OptValue>::KIND,
            choices: <$ty as OptValue>::CHOICES,
            optional: <$ty as OptValue>::OPTIONAL,
            help: $help,
            heading: $heading,
            quiet: $quiet,
            page: $page,
            value_name: $vn,
            shown_default: $def,
        }),*];

        impl Scenario {
            /// Sets option `key` (a serde key of [`Scenario`]) from the text `raw`, as its flag
            /// would. Errors are one line naming the flag (and, for a fixed set of names, the valid
            /// ones). An optional option becomes set.
            pub fn set(&mut self, key: &str, raw: &str) -> Result<(), Error> {
                match key {
                    $(stringify!($key) => {
                        self.$key = <$ty as OptValue>::from_raw($flag, raw)?;
                    })*
                    other => {
                        return Err(Error::unknown(
                            "option",
                            other,
                            OPTIONS.iter().map(|o| o.key),
                        ))
                    }
                }
                Ok(())
            }

            /// The value of numeric option `key`; `None` for an option left unset, or a key that is
            /// not a numeric option.
            pub fn numeric(&self, key: &str) -> Option<Num> {
                match key {
                    $(stringify!($key) => self.$key.num(),)*
                    _ => None,
                }
            }
        }
    };
}

options! {
    model: String, "--model", HARDWARE, ECHOED, PAGE_WORKLOAD, Some("MODEL"), Some("llama3-70b"), "Model";
    device: String, "--device", HARDWARE, ECHOED, OFF_PAGE, Some("DEVICE"), Some("h100"), "Device of every instance";
    devices_per_instance: u32, "--devices-per-instance", HARDWARE, ECHOED, PAGE_POOLS, Some("N"), Some("4"),
        "Devices per instance, tensor parallel";
    prefill_device: Option<String>, "--prefill-device", HARDWARE, ECHOED, PAGE_POOLS, Some("PREFILL_DEVICE"), Some("--device"),
        "Device of the prefill pool";
    decode_device: Option<String>, "--decode-device", HARDWARE, ECHOED, PAGE_POOLS, Some("DECODE_DEVICE"), Some("--device"),
        "Device of the decode pool";
    prefill_devices_per_instance: Option<u32>, "--prefill-devices-per-instance", HARDWARE, ECHOED, OFF_PAGE,
        Some("N"), Some("--devices-per-instance"), "Devices per prefill instance";
    decode_devices_per_instance: Option<u32>, "--decode-devices-per-instance", HARDWARE, ECHOED, OFF_PAGE,
        Some("N"), Some("--devices-per-instance"), "Devices per decode instance";
    prefill_lm_head: Option<LmHead>, "--prefill-lm-head", HARDWARE, ECHOED, OFF_PAGE, Some("all|last"), Some("all"),
        "Where the prefill step runs the LM head: all (every prompt token) or last";
    kv_retention: Option<Retention>, "--kv-retention", HARDWARE, QUIET, OFF_PAGE, Some("window|strict"),
        Some("window"),
        "Sliding-window and chunked layers (gpt-oss, Gemma 3, Llama 4): window keeps what the \
         last token attended to (min(n, W); the current chunk), strict only what the next token \
         will (min(n, W-1); n mod C), as vLLM frees them";
    ced_encoder_layers: Option<u64>, "--ced-encoder-layers", HARDWARE, QUIET, OFF_PAGE, Some("E"),
        Some("the model's"),
        "Causal encoder-decoder (CED): the bottom E layers are a causal encoder (0: no CED)";
    ced_replay: Option<u64>, "--ced-replay", HARDWARE, QUIET, OFF_PAGE, Some("W"), Some("the model's, 128"),
        "CED: prompt tokens (the last W) replayed through the whole model";
    ced_replay_on: Option<ReplayOn>, "--ced-replay-on", HARDWARE, QUIET, PAGE_ENGINES, Some("prefill|decode"),
        Some("prefill"),
        "CED: where the replay runs: prefill (the prefill instance emits the first token) or \
         decode (the prefill pool runs the encoder only; the decode instance replays and emits \
         the first token; --mode disagg, not --fast)";
    mode: Mode, "--mode", POOLS, ECHOED, PAGE_POOLS, Some("MODE"), Some("disagg"), "disagg or colocated";
    prefill: u32, "--prefill", POOLS, ECHOED, PAGE_POOLS, Some("N"), Some("1"),
        "Prefill instances (colocated: instances = prefill + decode)";
    decode: u32, "--decode", POOLS, ECHOED, PAGE_POOLS, Some("N"), Some("1"), "Decode instances";
    link: String, "--link", POOLS, ECHOED, PAGE_LINK, Some("LINK"), Some("ib-ndr"), "KV link";
    link_channels: u32, "--link-channels", POOLS, ECHOED, PAGE_LINK, Some("N"), Some("1"),
        "Concurrent transfers on the link";
    kv_compress: Option<String>, "--kv-compress", POOLS, ECHOED, PAGE_LINK, Some("NAME"), Some("no compression"),
        "KV compression preset (none, fp8, fp4-block, freq-keep-k, ...)";
    kv_compress_at: CompressAt, "--kv-compress-at", POOLS, ECHOED, PAGE_LINK, Some("WHERE"), Some("transit"),
        "Where to compress: transit (in the link) or endpoint (on the prefill GPU)";
    send: SendMode, "--send", BEYOND, ECHOED, PAGE_LINK, Some("whole|layerwise"), Some("whole"),
        "How the KV cache leaves prefill: whole (after the step, the reference) or layerwise \
         (each layer's slice as soon as that layer is done)";
    link_sharing: LinkSharing, "--link-sharing", BEYOND, ECHOED, PAGE_LINK, Some("fifo|fair"), Some("fifo"),
        "fifo (C independent FIFO channels, the reference) or fair (processor sharing: active \
         transfers split the bandwidth equally)";
    link_topology: LinkTopology, "--link-topology", BEYOND, ECHOED, PAGE_LINK, Some("TOPOLOGY"), Some("shared"),
        "shared (one link for everything, the reference), per-prefill (one per prefill \
         instance: its NIC) or per-pair (one per prefill-decode pair)";
    reserve_kv_on: ReserveKvOn, "--reserve-kv-on", BEYOND, ECHOED, PAGE_LINK, Some("arrival|transfer"),
        Some("arrival"),
        "When decode KV memory is reserved: arrival (when the KV lands, the reference) or \
         transfer (before the transfer starts, so decode memory throttles hand-offs)";
    first_token: FirstToken, "--first-token", BEYOND, ECHOED, PAGE_SLOS, Some("prefill|decode"), Some("prefill"),
        "Who emits the first token: prefill (at the end of prefill, DistServe's accounting, the \
         reference) or decode (after the KV lands, llm-d/Dynamo: the hand-off shows in TTFT)";
    batch_policy: BatchPolicy, "--batch-policy", LEVERS, QUIET, PAGE_SCHEDULING, Some("POLICY"),
        Some("prefill-priority"),
        BatchPolicy::HELP;
    max_num_batched_tokens: Option<u64>, "--max-num-batched-tokens", LEVERS, QUIET, PAGE_SCHEDULING, Some("TOKENS"),
        Some("8192"),
        "Token budget of one step, tokens (given, even 8192, it switches the scheduled \
         instances on)";
    kv_policy: KvPolicy, "--kv-policy", LEVERS, QUIET, PAGE_SCHEDULING, Some("POLICY"), Some("oracle"),
        "KV reservation: oracle (prompt + output, known in advance), pow2 (output rounded up \
         to a power of two), max (at least --max-seq-len tokens) or paged (blocks allocated as \
         sequences grow, with preemption)";
    kv_block_size: u64, "--kv-block-size", LEVERS, QUIET, PAGE_SCHEDULING, Some("TOKENS"), Some("16"),
        "Tokens per KV block (--kv-policy paged)";
    max_seq_len: u64, "--max-seq-len", LEVERS, QUIET, PAGE_SCHEDULING, Some("TOKENS"), Some("2048"),
        "Reservation floor of --kv-policy max, tokens";
    max_decode_batch: u32, "--max-decode-batch", LEVERS, QUIET, PAGE_SCHEDULING, Some("N"), Some("256"),
        "Most sequences running on a colocated or decode instance";
    preemption: Preemption, "--preemption", LEVERS, QUIET, PAGE_SCHEDULING, Some("recompute|swap"), Some("recompute"),
        "Paged KV out of blocks: recompute the victim later, or swap its blocks to host memory \
         over --host-link";
    swap_in: SwapIn, "--swap-in", LEVERS, QUIET, PAGE_SCHEDULING, Some("own-blocks|next-step"), Some("own-blocks"),
        "Swap preemption: a swapped-out row comes back when its own blocks fit (own-blocks, the \
         reference, which can swap it straight out again) or only when its next step's blocks \
         fit too (next-step: no swap thrash)";
    host_link: String, "--host-link", LEVERS, QUIET, PAGE_SCHEDULING, Some("LINK"), Some("pcie5"),
        "Host link of swap preemption (a link key: pcie5, pcie4, ...)";
    prefix_caching: bool, "--prefix-caching", LEVERS, QUIET, PAGE_SCHEDULING, None, None,
        "Cache prompt prefixes on colocated and prefill instances (radix tree, LRU eviction)";
    prefix_eviction: PrefixEviction, "--prefix-eviction", LEVERS, QUIET, PAGE_SCHEDULING,
        Some("lru|lfu|fifo"), Some("lru"),
        "Beyond the reference: the prefix cache's eviction order: lru (least recently used, the \
         reference), lfu (fewest hits first, ties least recently used) or fifo (oldest insertion \
         first)";
    speculative: Option<String>, "--speculative", LEVERS, QUIET, PAGE_SCHEDULING, Some("DRAFT"), Some("off"),
        "Speculative decoding with draft mtp (a one-layer multi-token-prediction head) or a \
         model key";
    gamma: u32, "--gamma", LEVERS, QUIET, PAGE_SCHEDULING, Some("N"), Some("3"),
        "Drafted tokens per verify pass (with --speculative)";
    alpha: f64, "--alpha", LEVERS, QUIET, PAGE_SCHEDULING, Some("P"), Some("0.7"),
        "Acceptance probability of each drafted token, 0 to 1 (with --speculative)";
    spec_seed: u64, "--spec-seed", LEVERS, QUIET, PAGE_SCHEDULING, Some("N"), Some("0"),
        "Seed of the acceptance draws (with --speculative)";
    prefix_handoff: bool, "--prefix-handoff", LEVERS, QUIET, PAGE_SCHEDULING, None, None,
        "Beyond the reference: decode instances keep their own prefix cache and a hand-off \
         sends only the KV of the prompt tokens the chosen decode instance does not hold \
         (needs --prefix-caching, disaggregated mode)";
    decode_router: DecodeRouter, "--decode-router", LEVERS, QUIET, PAGE_SCHEDULING, Some("least-loaded|prefix"),
        Some("least-loaded"),
        "Beyond the reference: the decode instance of a hand-off: least-loaded (the reference) \
         or prefix (the longest cached prefix of the request, ties least-loaded; needs \
         --prefix-handoff)";
    prefix_from_trace: bool, "--prefix-from-trace", LEVERS, QUIET, OFF_PAGE, None, None,
        "Beyond the reference: on a Mooncake trace, each request's hash_ids (512-token block \
         hashes) become its prefix chain (needs --prefix-caching)";
    handoff_ranks: bool, "--handoff-ranks", BEYOND, QUIET, OFF_PAGE, None, None,
        "Beyond the reference: each hand-off's stream time is the busiest NIC of the rank-aware \
         plan (each prefill rank sends its KV shard over its own NIC to the decode ranks that \
         own those heads and layers; the pools' --tp/--pp layouts, else TP = devices per \
         instance); the link's queueing still applies to whole hand-offs";
    nics_per_instance: Option<u32>, "--nics-per-instance", BEYOND, QUIET, OFF_PAGE, Some("N"),
        Some("one per GPU"),
        "NICs per instance with --handoff-ranks, each with the link's bandwidth and latency; \
         rank i uses NIC i % N";
    tp: Option<u32>, "--tp", PARALLEL, QUIET, PAGE_PARALLEL, Some("N"), Some("1"),
        "Tensor-parallel degree of every pool's instances (devices per instance must equal \
         tp x pp; ring all-reduces on the scale-up link)";
    pp: Option<u32>, "--pp", PARALLEL, QUIET, PAGE_PARALLEL, Some("N"), Some("1"),
        "Pipeline stages per instance (GPipe micro-batches, one activation hop per stage)";
    ep: Option<u32>, "--ep", PARALLEL, QUIET, OFF_PAGE, Some("N"), Some("1"),
        "Expert parallelism of an MoE model: 1 (experts split by TP) or tp (whole experts per \
         GPU, all-to-all dispatch)";
    microbatches: Option<u32>, "--microbatches", PARALLEL, QUIET, OFF_PAGE, Some("N"), Some("pp"),
        "Micro-batches per step on a pipeline";
    expert_imbalance: Option<f64>, "--expert-imbalance", PARALLEL, QUIET, OFF_PAGE, Some("X"), Some("1.0"),
        "The busiest GPU's expert load over the mean (with --ep)";
    scale_up_link: Option<String>, "--scale-up-link", PARALLEL, QUIET, OFF_PAGE, Some("LINK"),
        Some("the device's"),
        "Link of the tensor/pipeline/expert traffic inside an instance (a link key)";
    prefill_tp: Option<u32>, "--prefill-tp", PARALLEL, QUIET, OFF_PAGE, Some("N"), None,
        "The prefill pool's own tensor-parallel degree (does not inherit --tp/--pp)";
    prefill_pp: Option<u32>, "--prefill-pp", PARALLEL, QUIET, OFF_PAGE, Some("N"), None,
        "The prefill pool's own pipeline stages";
    decode_tp: Option<u32>, "--decode-tp", PARALLEL, QUIET, OFF_PAGE, Some("N"), None,
        "The decode pool's own tensor-parallel degree (does not inherit --tp/--pp)";
    decode_pp: Option<u32>, "--decode-pp", PARALLEL, QUIET, OFF_PAGE, Some("N"), None,
        "The decode pool's own pipeline stages";
    devices_from_layout: bool, "--devices-from-layout", PARALLEL, QUIET, OFF_PAGE, None, None,
        "Beyond the reference: a pool with a layout gets tp x pp devices per instance (the \
         reference requires --devices-per-instance to match), so a sweep over tp needs no \
         matching devices axis";
    weight_format: QuantFormat, "--weight-format", PARALLEL, QUIET, PAGE_PARALLEL, Some("FORMAT"), Some("bf16"),
        "Weight format: bf16, fp8, int8, int4 (FP16 scale per 128) or fp4 (MXFP4); accuracy is \
         not simulated";
    kv_format: QuantFormat, "--kv-format", PARALLEL, QUIET, PAGE_PARALLEL, Some("FORMAT"), Some("bf16"),
        "KV cache format (also the hand-off's bytes): bf16, fp8, int8, int4 or fp4";
    compute_format: QuantFormat, "--compute-format", PARALLEL, QUIET, PAGE_PARALLEL, Some("FORMAT"), Some("bf16"),
        "Matmul format: bf16 (weight-only quantisation) or the weight format (W8A8, W4A4: the \
         device's native units)";
    fft_efficiency: Option<f64>, "--fft-efficiency", OPTICAL, QUIET, PAGE_ENGINES, Some("X"), Some("the device's"),
        "Speed of FFT work on the digital units relative to dense FLOPs (every device given); \
         FFT-mixing models only";
    ft_samples_per_s: Option<f64>, "--ft-samples-per-s", OPTICAL, QUIET, OFF_PAGE, Some("X"), Some("1e12"),
        "Optical transform engine: converter samples per second";
    ft_enob: Option<u32>, "--ft-enob", OPTICAL, QUIET, PAGE_ENGINES, Some("N"), Some("8"),
        "Optical transform engine: effective bits of the converters";
    ft_static_w: Option<f64>, "--ft-static-w", OPTICAL, QUIET, OFF_PAGE, Some("W"), Some("20"),
        "Optical transform engine: static power per device, W (laser and tuning W/2 each)";
    ft_mask_rate: Option<f64>, "--ft-mask-rate", OPTICAL, QUIET, PAGE_ENGINES, Some("HZ"), Some("1031"),
        "Optical transform engine: Fourier-plane mask rewrites per second";
    ft_detection: Option<Detection>, "--ft-detection", OPTICAL, QUIET, OFF_PAGE, Some("coherent|intensity"),
        Some("coherent"), "Optical transform engine: detection (intensity doubles the passes)";
    ft_overlap: bool, "--ft-overlap", OPTICAL, QUIET, PAGE_ENGINES, None, None,
        "Optical transform engine: optical and GPU work overlap within a step";
    ppa: bool, "--ppa", OPTICAL, QUIET, PAGE_ENGINES, None, None,
        "Add die area, silicon cost and performance per W / mm2 / $ to the summary";
    workload: Option<String>, "--workload", WORKLOAD, ECHOED, OFF_PAGE, Some("NAME"), None,
        "A named workload: chat, coding-agent, offline-batch, long-rag, voice (its lengths, \
         sessions and SLOs; a shared prefix is sent and computed like any prompt: no prefix \
         caching)";
    turns: u32, "--turns", WORKLOAD, ECHOED, OFF_PAGE, Some("N"), Some("1"),
        "Turns per session; turns after the first are closed-loop";
    think: f64, "--think", WORKLOAD, ECHOED, OFF_PAGE, Some("S"), Some("0"),
        "Mean think time between a reply and the next turn, s";
    system_prompts: u64, "--system-prompts", WORKLOAD, ECHOED, OFF_PAGE, Some("N"), Some("0"),
        "Distinct shared system prompts";
    system_len: u64, "--system-len", WORKLOAD, ECHOED, OFF_PAGE, Some("TOKENS"), Some("0"),
        "System prompt length, tokens";
    prefix_share: f64, "--prefix-share", WORKLOAD, ECHOED, OFF_PAGE, Some("F"), Some("1.0"),
        "Fraction of sessions with a system prompt";
    trace_file: Option<String>, "--trace-file", TRACE, ECHOED, OFF_PAGE, Some("FILE"), None,
        "Replay a request trace instead of generating requests: Azure LLM inference CSV, \
         Mooncake JSONL, BurstGPT CSV or the reference's JSON rows, detected from the content. \
         Timestamps out of order are rejected unless --sort is given";
    max_context: Option<u64>, "--max-context", TRACE, ECHOED, OFF_PAGE, Some("TOKENS"),
        Some("the model's context; reported, never silent"),
        "Clip replayed prompts to this many tokens";
    trace_format: Option<TraceFormat>, "--trace-format", TRACE, ECHOED, OFF_PAGE, Some("FORMAT"), None,
        "Force the format instead of detecting it: azure, mooncake, burstgpt, reference";
    time_scale: f64, "--time-scale", TRACE, ECHOED, OFF_PAGE, Some("X"), None,
        "Multiply every inter-arrival gap by X (0.5 replays twice as fast)";
    trace_start: Option<f64>, "--start", TRACE, ECHOED, OFF_PAGE, Some("S"), None,
        "Start of the replayed window, seconds after the first arrival";
    trace_duration: Option<f64>, "--duration", TRACE, ECHOED, OFF_PAGE, Some("S"), None,
        "Length of the replayed window, seconds";
    max_requests: Option<u64>, "--max-requests", TRACE, ECHOED, OFF_PAGE, Some("N"), None,
        "Replay at most N requests (the first after the window)";
    skip_bad_lines: bool, "--skip-bad-lines", TRACE, ECHOED, OFF_PAGE, None, None,
        "Skip (and count) malformed lines instead of stopping at the first";
    sort_trace: bool, "--sort", TRACE, ECHOED, OFF_PAGE, None, None,
        "Timestamps out of order: sort them (stable, with a warning) instead of rejecting the file";
    rate: f64, "--rate", WORKLOAD, ECHOED, PAGE_WORKLOAD, Some("R"), Some("4"), "Poisson arrival rate, requests/s";
    requests: u64, "--requests", WORKLOAD, ECHOED, PAGE_WORKLOAD, Some("N"), Some("800"), "Number of requests";
    prompt: f64, "--prompt", WORKLOAD, ECHOED, OFF_PAGE, Some("TOKENS"), Some("2048"), "Mean prompt length, tokens";
    prompt_cv: f64, "--prompt-cv", WORKLOAD, ECHOED, OFF_PAGE, Some("CV"), Some("0.5"),
        "Coefficient of variation of prompt lengths (log-normal)";
    output: f64, "--output", WORKLOAD, ECHOED, OFF_PAGE, Some("TOKENS"), Some("256"), "Mean output length, tokens";
    output_cv: f64, "--output-cv", WORKLOAD, ECHOED, OFF_PAGE, Some("CV"), Some("0.5"),
        "Coefficient of variation of output lengths";
    prompt_min: u64, "--prompt-min", WORKLOAD, QUIET, PAGE_WORKLOAD, Some("TOKENS"), Some("1"),
        "Shortest generated prompt: shorter draws are raised to it, tokens";
    prompt_max: u64, "--prompt-max", WORKLOAD, QUIET, PAGE_WORKLOAD, Some("TOKENS"), Some("32768"),
        "Longest generated prompt: longer draws are clipped to it, tokens";
    output_min: u64, "--output-min", WORKLOAD, QUIET, PAGE_WORKLOAD, Some("TOKENS"), Some("1"),
        "Shortest generated output, tokens";
    output_max: u64, "--output-max", WORKLOAD, QUIET, PAGE_WORKLOAD, Some("TOKENS"), Some("32768"),
        "Longest generated output, tokens";
    seed: u64, "--seed", WORKLOAD, ECHOED, OFF_PAGE, Some("N"), Some("1"),
        "Workload seed (CPython-compatible Mersenne Twister)";
    ttft_slo: Option<f64>, "--ttft-slo", SLOS, ECHOED, PAGE_SLOS, Some("S"), Some("1.0"), "TTFT SLO, seconds";
    tpot_slo: Option<f64>, "--tpot-slo", SLOS, ECHOED, PAGE_SLOS, Some("S"), Some("0.025"),
        "TPOT SLO, seconds per output token";
    power_cap: Option<f64>, "--power-cap", POWER, ECHOED, OFF_PAGE, Some("W"), Some("TDP"), "Power cap per device, W";
    prefill_power_cap: Option<f64>, "--prefill-power-cap", POWER, ECHOED, OFF_PAGE, Some("W"), Some("--power-cap"),
        "Power cap per prefill device, W";
    decode_power_cap: Option<f64>, "--decode-power-cap", POWER, ECHOED, OFF_PAGE, Some("W"), Some("--power-cap"),
        "Power cap per decode device, W";
    dvfs: bool, "--dvfs", POWER, ECHOED, OFF_PAGE, None, None, "Lower the clock on memory-bound steps";
    fast: bool, "--fast", SCENARIO, ECHOED, PAGE_SCHEDULING, None, None,
        "The exact macro-step decode path (same numbers, much faster)";
    layers: Option<u64>, "--layers", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("N"), None, "Transformer layers";
    d_model: Option<u64>, "--d-model", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("N"), None, "Hidden size";
    heads: Option<u64>, "--heads", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("N"), None, "Query heads";
    kv_heads: Option<u64>, "--kv-heads", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("N"), None, "Key/value heads";
    head_dim: Option<u64>, "--head-dim", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("N"), None,
        "Head dimension (default d_model / heads)";
    d_ff: Option<u64>, "--d-ff", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("N"), None, "MLP width";
    vocab: Option<u64>, "--vocab", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("N"), None, "Vocabulary size";
    weight_bytes: Option<f64>, "--weight-bytes", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("B"), None,
        "Bytes per weight (2 = BF16)";
    kv_bytes: Option<f64>, "--kv-bytes", CUSTOM_MODEL, ECHOED, OFF_PAGE, Some("B"), None,
        "Bytes per cached K or V value (2 = BF16, 1 = FP8)";
    link_bandwidth_gb_s: Option<f64>, "--link-bandwidth-gb-s", CUSTOM_LINK, ECHOED, OFF_PAGE, Some("GB/s"), None,
        "Bandwidth per channel and direction, GB/s";
    link_latency_us: Option<f64>, "--link-latency-us", CUSTOM_LINK, ECHOED, OFF_PAGE, Some("US"), None,
        "Latency per transfer, µs";
    link_pj_per_bit: Option<f64>, "--link-pj-per-bit", CUSTOM_LINK, ECHOED, OFF_PAGE, Some("PJ"), None,
        "Link energy, pJ per bit";
    device_peak_tflops: Option<f64>, "--device-peak-tflops", CUSTOM_DEVICE, ECHOED, OFF_PAGE, Some("TFLOPS"), None,
        "Dense BF16 peak, TFLOP/s";
    device_mem_bw_tb_s: Option<f64>, "--device-mem-bw-tb-s", CUSTOM_DEVICE, ECHOED, OFF_PAGE, Some("TB/s"), None,
        "HBM bandwidth, TB/s";
    device_mem_gb: Option<f64>, "--device-mem-gb", CUSTOM_DEVICE, ECHOED, OFF_PAGE, Some("GB"), None,
        "HBM capacity, GB";
    device_tdp_w: Option<f64>, "--device-tdp-w", CUSTOM_DEVICE, ECHOED, OFF_PAGE, Some("W"), None, "TDP per device, W";
    device_idle_w: Option<f64>, "--device-idle-w", CUSTOM_DEVICE, ECHOED, OFF_PAGE, Some("W"), None,
        "Idle power per device, W";
}

/// The rows under the three custom-hardware headings (`--layers`, `--link-*`, `--device-*`).
pub fn hardware() -> impl Iterator<Item = &'static Opt> {
    OPTIONS
        .iter()
        .filter(|o| [CUSTOM_MODEL, CUSTOM_LINK, CUSTOM_DEVICE].contains(&o.heading))
}

/// The rows that say how a trace file is read (`--trace-format` ... `--sort`: `disagg trace-stats`
/// takes these too).
pub fn trace_reading() -> impl Iterator<Item = &'static Opt> {
    OPTIONS
        .iter()
        .filter(|o| o.heading == TRACE && !matches!(o.key, "trace_file" | "max_context"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The custom-hardware keys of [`Scenario`], written out by hand (unset ones are left out of
    /// its serialised form).
    const HARDWARE_KEYS: [&str; 17] = [
        "layers",
        "d_model",
        "heads",
        "kv_heads",
        "head_dim",
        "d_ff",
        "vocab",
        "weight_bytes",
        "kv_bytes",
        "link_bandwidth_gb_s",
        "link_latency_us",
        "link_pj_per_bit",
        "device_peak_tflops",
        "device_mem_bw_tb_s",
        "device_mem_gb",
        "device_tdp_w",
        "device_idle_w",
    ];

    /// The serde keys of a scenario: every key of the default's JSON, plus the custom-hardware
    /// keys (left out of the JSON while unset).
    fn serde_keys() -> Vec<String> {
        let v = serde_json::to_value(Scenario::default()).unwrap();
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.extend(HARDWARE_KEYS.iter().map(|k| k.to_string()));
        // Left out of the echo at their defaults too (`--handoff-ranks` off).
        keys.extend(
            [
                "handoff_ranks",
                "nics_per_instance",
                "kv_retention",
                "prefix_eviction",
            ]
            .map(String::from),
        );
        keys.sort();
        keys
    }

    /// A valid, non-default text for option `o`, and the JSON value it must give (written out
    /// by hand for the names; numbers in range for every numeric option).
    fn sample(o: &Opt) -> (Option<&'static str>, Value) {
        let choice = |raw: &'static str| (Some(raw), json!(raw));
        match o.kind {
            Kind::Switch => (None, json!(true)),
            Kind::Name => (Some("x-name"), json!("x-name")),
            Kind::U32 | Kind::U64 => (Some("7"), json!(7)),
            Kind::F64 => {
                // 1.5 where the range allows it (and it is not the default), else 0.5.
                let ok = |x: f64| o.range().is_none_or(|r| r.contains(Num::Float(x)));
                if ok(1.5) {
                    (Some("1.5"), json!(1.5))
                } else {
                    assert!(ok(0.5), "{}", o.key);
                    (Some("0.5"), json!(0.5))
                }
            }
            Kind::Choice(_) => match o.key {
                "mode" => choice("colocated"),
                "kv_compress_at" => choice("endpoint"),
                "prefill_lm_head" => choice("last"),
                "kv_retention" => choice("strict"),
                "ced_replay_on" => choice("decode"),
                "send" => choice("layerwise"),
                "link_sharing" => choice("fair"),
                "link_topology" => choice("per-pair"),
                "reserve_kv_on" => choice("transfer"),
                "first_token" => choice("decode"),
                "batch_policy" => choice("chunked"),
                "kv_policy" => choice("paged"),
                "preemption" => choice("swap"),
                "decode_router" => choice("prefix"),
                "swap_in" => choice("next-step"),
                "trace_format" => choice("mooncake"),
                "weight_format" => choice("fp8"),
                "kv_format" => choice("int4"),
                "compute_format" => choice("fp4"),
                "ft_detection" => choice("intensity"),
                "prefix_eviction" => choice("lfu"),
                other => panic!("no sample for choice option {other}"),
            },
        }
    }

    /// The keys where two scenarios' JSON forms differ.
    fn changed(a: &Scenario, b: &Scenario) -> Vec<(String, Value)> {
        let a = serde_json::to_value(a).unwrap();
        let b = serde_json::to_value(b).unwrap();
        let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
        b.iter()
            .filter(|(k, v)| a.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    #[test]
    fn every_serde_key_has_exactly_one_row() {
        let mut table: Vec<String> = OPTIONS.iter().map(|o| o.key.to_string()).collect();
        table.sort();
        assert_eq!(table, serde_keys());
        let mut flags: Vec<&str> = OPTIONS.iter().map(|o| o.flag).collect();
        flags.sort();
        flags.dedup();
        assert_eq!(flags.len(), OPTIONS.len(), "a flag is listed twice");
    }

    #[test]
    fn from_flags_accepts_every_option_and_sets_only_it() {
        for o in OPTIONS {
            let (raw, want) = sample(o);
            let mut args = vec![o.flag.to_string()];
            args.extend(raw.map(str::to_string));
            let s = Scenario::from_flags(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(
                changed(&Scenario::default(), &s),
                vec![(o.key.to_string(), want.clone())],
                "{args:?}"
            );
            // `--flag=value` and the setter give the same scenario.
            if let Some(raw) = raw {
                let inline = Scenario::from_flags([format!("{}={raw}", o.flag)]).unwrap();
                assert_eq!(inline, s, "{}", o.flag);
                let mut set = Scenario::default();
                set.set(o.key, raw).unwrap();
                assert_eq!(set, s, "{}", o.key);
            }
        }
    }

    #[test]
    fn numeric_reads_every_ranged_option() {
        // Each numeric scenario option has a range, and `numeric` reads the value set.
        for o in OPTIONS.iter().filter(|o| o.kind.is_numeric()) {
            assert!(o.range().is_some(), "{} has no range", o.key);
            let (raw, _) = sample(o);
            let mut s = Scenario::default();
            s.set(o.key, raw.unwrap()).unwrap();
            let want = match o.kind {
                Kind::F64 => Num::Float(raw.unwrap().parse().unwrap()),
                _ => Num::Int(7),
            };
            assert_eq!(s.numeric(o.key), Some(want), "{}", o.key);
        }
        assert_eq!(Scenario::default().numeric("layers"), None);
        assert_eq!(Scenario::default().numeric("model"), None);
    }

    #[test]
    fn aliases_read_as_the_canonical_name() {
        for (key, raw, want) in [
            ("send", "layer-wise", "layerwise"),
            ("send", "layer", "layerwise"),
            ("kv_compress_at", "gpu", "endpoint"),
            ("kv_compress_at", "link", "transit"),
            ("trace_format", " Mooncake ", "mooncake"),
        ] {
            let mut s = Scenario::default();
            s.set(key, raw).unwrap();
            assert_eq!(serde_json::to_value(&s).unwrap()[key], json!(want), "{raw}");
            // Scenario files and the web API read the same names.
            let obj: serde_json::Map<String, Value> =
                [(key.to_string(), json!(raw))].into_iter().collect();
            let from_json: Scenario =
                serde_json::from_value(Value::Object(obj)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(from_json, s, "{key}={raw}");
        }
    }

    #[test]
    fn errors_name_the_flag_and_the_valid_choices() {
        let mut s = Scenario::default();
        let e = |s: &mut Scenario, k: &str, raw: &str| s.set(k, raw).unwrap_err().to_string();
        assert_eq!(
            e(&mut s, "send", "sideways"),
            "unknown --send 'sideways'; valid: whole, layerwise"
        );
        assert_eq!(
            e(&mut s, "mode", "both"),
            "unknown --mode 'both'; valid: disagg, colocated"
        );
        assert_eq!(
            e(&mut s, "link_topology", "mesh"),
            "unknown --link-topology 'mesh'; valid: shared, per-prefill, per-pair"
        );
        assert_eq!(
            e(&mut s, "trace_start", "soon"),
            "--start: expected a number, got 'soon'"
        );
        assert_eq!(
            e(&mut s, "prefill", "-1"),
            "--prefill: expected a whole number, got '-1'"
        );
        assert_eq!(
            e(&mut s, "dvfs", "maybe"),
            "--dvfs: expected true or false, got 'maybe'"
        );
        assert!(e(&mut s, "warp", "9").starts_with("unknown option 'warp'; valid: model, "));
        assert_eq!(s, Scenario::default(), "a failed set changes nothing");
        // The same message from a scenario file or a web request (serde).
        let json = serde_json::from_value::<Scenario>(json!({"send": "sideways"}));
        assert_eq!(
            json.unwrap_err().to_string(),
            "unknown --send 'sideways'; valid: whole, layerwise"
        );
        let json = serde_json::from_value::<Scenario>(json!({"prefill_lm_head": "first"}));
        assert_eq!(
            json.unwrap_err().to_string(),
            "unknown --prefill-lm-head 'first'; valid: all, last"
        );
    }

    #[test]
    fn the_trace_formats_are_the_readers() {
        let names: Vec<&str> = TraceFormat::ALL.iter().map(|f| f.as_str()).collect();
        assert_eq!(names, TRACE_FORMATS);
    }

    #[test]
    fn describe_gives_each_choice_its_menu_and_each_number_its_bounds() {
        let all = describe_all();
        assert_eq!(all.len(), OPTIONS.len());
        let find = |k: &str| all.iter().find(|v| v["key"] == k).unwrap().clone();
        let at = find("kv_compress_at");
        assert_eq!(at["choices"], json!(["transit", "endpoint"]));
        assert_eq!(at["group"], json!("Link"));
        assert_eq!(
            find("prefix_eviction")["choices"],
            json!(["lru", "lfu", "fifo"])
        );
        assert_eq!(find("rate")["bounds"]["type"], json!("float"));
        assert_eq!(find("layers")["group"], Value::Null);
        for v in &all {
            let o = for_key(v["key"].as_str().unwrap()).unwrap();
            assert_eq!(
                v.get("choices").is_some(),
                matches!(o.kind, Kind::Choice(_))
            );
            assert_eq!(v.get("bounds").is_some(), o.kind.is_numeric(), "{}", o.key);
            if let Some(g) = o.page {
                assert!(PAGE_GROUPS.contains(&g));
            }
        }
    }

    #[test]
    fn from_flags_errors() {
        let e = |a: &[&str]| Scenario::from_flags(a).unwrap_err().to_string();
        assert_eq!(e(&["--warp", "9"]), "--warp: unknown option");
        assert_eq!(e(&["--fast=yes"]), "--fast: takes no value");
        assert_eq!(e(&["--sort=1"]), "--sort: takes no value");
        assert_eq!(e(&["--rate"]), "--rate: expects a value");
        assert_eq!(e(&["rate"]), "rate: expected an option starting with --");
        // A later flag wins.
        let s = Scenario::from_flags(["--rate", "2", "--rate=3"]).unwrap();
        assert_eq!(s.rate, 3.0);
    }

    #[test]
    fn build_errors_name_the_flag_that_chose_the_device() {
        let cat = disagg_model::Catalogue::builtin();
        for (flag, key) in [
            ("--device", "device"),
            ("--prefill-device", "prefill_device"),
            ("--decode-device", "decode_device"),
        ] {
            // With and without a custom-device override (the overlay path and the plain one).
            for tdp in [None, Some("500")] {
                let mut s = Scenario::default();
                s.set(key, "nosuch").unwrap();
                if let Some(w) = tdp {
                    s.set("device_tdp_w", w).unwrap();
                }
                let e = s.build(&cat).unwrap_err().to_string();
                assert!(
                    e.starts_with(&format!("unknown {flag} 'nosuch'; valid: h100")),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn the_scheduling_rows_parse_their_shown_defaults() {
        // `docs/levers.md#scheduled-instances`'s flags, in its order, under one heading (with
        // --max-decode-batch, a SimConfig field `docs/levers.md#scheduled-instances`'s CLI does not expose).
        let rows: Vec<&Opt> = OPTIONS.iter().filter(|o| o.heading == LEVERS).collect();
        let flags: Vec<&str> = rows.iter().map(|o| o.flag).collect();
        assert_eq!(
            flags,
            [
                "--batch-policy",
                "--max-num-batched-tokens",
                "--kv-policy",
                "--kv-block-size",
                "--max-seq-len",
                "--max-decode-batch",
                "--preemption",
                "--swap-in",
                "--host-link",
                "--prefix-caching",
                "--prefix-eviction",
                "--speculative",
                "--gamma",
                "--alpha",
                "--spec-seed",
                // Beyond the reference: the prefix-aware hand-off.
                "--prefix-handoff",
                "--decode-router",
                "--prefix-from-trace"
            ]
        );
        for o in rows {
            let mut s = Scenario::default();
            match (o.optional, o.shown_default) {
                // An unset option: its default is no value.
                (true, _) => assert_eq!(s.numeric(o.key), None, "{}", o.key),
                (false, Some(d)) => s.set(o.key, d).unwrap(),
                (false, None) => s.set(o.key, "false").unwrap(),
            }
            assert_eq!(s, Scenario::default(), "{} {:?}", o.flag, o.shown_default);
        }
        assert_eq!(
            for_key("batch_policy").unwrap().kind,
            Kind::Choice(&["prefill-priority", "decode-priority", "chunked"])
        );
        assert_eq!(
            for_key("kv_policy").unwrap().kind,
            Kind::Choice(&["oracle", "pow2", "max", "paged"])
        );
        assert_eq!(
            for_key("preemption").unwrap().kind,
            Kind::Choice(&["recompute", "swap"])
        );
        assert_eq!(for_key("max_num_batched_tokens").unwrap().kind, Kind::U64);
        assert!(for_key("max_num_batched_tokens").unwrap().optional);
        assert_eq!(for_key("gamma").unwrap().kind, Kind::U32);
        assert_eq!(for_key("alpha").unwrap().kind, Kind::F64);
        assert_eq!(for_key("host_link").unwrap().kind, Kind::Name);
        assert_eq!(for_key("prefix_caching").unwrap().kind, Kind::Switch);
    }

    #[test]
    fn help_text_shows_the_default_in_brackets() {
        let o = for_key("devices_per_instance").unwrap();
        assert_eq!(o.help_text(), "Devices per instance, tensor parallel [4]");
        assert_eq!(for_key("layers").unwrap().help_text(), "Transformer layers");
        assert_eq!(for_flag("--start").unwrap().key, "trace_start");
        assert_eq!(hardware().count(), HARDWARE_KEYS.len());
        let trace: Vec<&str> = trace_reading().map(|o| o.flag).collect();
        assert_eq!(
            trace,
            [
                "--trace-format",
                "--time-scale",
                "--start",
                "--duration",
                "--max-requests",
                "--skip-bad-lines",
                "--sort"
            ]
        );
    }
}
