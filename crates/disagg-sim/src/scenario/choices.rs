//! The named choices of the hand-off and serving mode (`--mode`, `--link-topology`, ...) and the
//! instance roles. `--link-sharing` is [`disagg_model::Sharing`], the one enum of the link
//! disciplines (the simulator's link and the calculator share it).

use disagg_model::SendMode;
use serde::{Deserialize, Serialize};

/// `--link-sharing`: how transfers share a KV link (the link disciplines of [`crate::link`]).
pub use disagg_model::Sharing as LinkSharing;

disagg_model::named_enum! {
    /// Which hand-offs share a KV link (`--link-topology`).
    pub enum LinkTopology: "--link-topology" {
        /// One link for everything (the reference).
        #[default]
        Shared = "shared",
        /// One link per prefill instance (its NIC).
        PerPrefill = "per-prefill",
        /// One link per prefill-decode pair.
        PerPair = "per-pair",
    }
}

disagg_model::named_enum! {
    /// When the decode side reserves a request's KV (`--reserve-kv-on`).
    pub enum ReserveKvOn: "--reserve-kv-on" {
        /// At decode admission, after the KV landed (the reference).
        #[default]
        Arrival = "arrival",
        /// Before the transfer starts, on the decode instance it goes to.
        Transfer = "transfer",
    }
}

disagg_model::named_enum! {
    /// Which first token TTFT and TPOT are measured from (`--first-token`).
    pub enum FirstToken: "--first-token" {
        /// The end of the prefill step (the reference).
        #[default]
        Prefill = "prefill",
        /// Decode admission after the KV landed (llm-d, Dynamo).
        Decode = "decode",
    }
}

/// The five hand-off options, resolved (echoed in the summary as `options`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HandoffOptions {
    /// `--send`.
    pub send: SendMode,
    /// `--link-sharing`.
    pub link_sharing: LinkSharing,
    /// `--link-topology`.
    pub link_topology: LinkTopology,
    /// `--reserve-kv-on`.
    pub reserve_kv_on: ReserveKvOn,
    /// `--first-token`.
    pub first_token: FirstToken,
}

disagg_model::named_enum! {
    /// Serving mode (`--mode`).
    pub enum Mode: "--mode" {
        /// Prefill and decode pools joined by a KV link (the reference's default).
        #[default]
        Disagg = "disagg",
        /// Instances that do both phases (prefill priority).
        Colocated = "colocated",
    }
}

/// The role of an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Prefill pool.
    Prefill,
    /// Decode pool.
    Decode,
    /// Colocated instance.
    Colocated,
}

impl Role {
    /// `prefill`, `decode` or `colocated` (also the instance name prefix).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Prefill => "prefill",
            Role::Decode => "decode",
            Role::Colocated => "colocated",
        }
    }
}
