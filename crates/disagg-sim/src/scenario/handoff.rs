//! Build steps of the KV link and hand-off: the link, the KV transit stage, the hand-off options
//! and the rank-aware NIC plan.

use disagg_model::custom::{CustomLink, Overlay};
use disagg_model::{
    Catalogue, Error, KvTransit, Link, ModelSpec, PortLoads, RankLayout, RankOptions, SendMode,
};

use super::{
    rename, HandoffOptions, LinkSharing, LinkTopology, Mode, Pool, ReserveKvOn, Role, Scenario,
    MAX_LINKS, SEND_FLAG,
};

impl Scenario {
    /// Step 3: the `link` preset with the `link_*` overrides and `link_channels` applied.
    pub(super) fn resolve_link(&self, cat: &Catalogue) -> Result<Link, Error> {
        let mut link = self
            .custom_link()
            .overlay(cat)
            .map_err(|e| rename(e, "--link"))?;
        link.channels = self.link_channels;
        Ok(link)
    }

    /// The custom link the scenario's keys describe on top of `link`.
    pub fn custom_link(&self) -> CustomLink {
        CustomLink {
            base: Some(self.link.clone()),
            bandwidth_gb_s: self.link_bandwidth_gb_s,
            latency_us: self.link_latency_us,
            pj_per_bit: self.link_pj_per_bit,
            ..Default::default()
        }
    }

    /// Step 5: the KV compression on the hand-off (`kv_compress` at `kv_compress_at`), if any:
    /// from a BF16 cache, in disaggregated mode only.
    pub(super) fn kv_transit(
        &self,
        cat: &Catalogue,
        model: &ModelSpec,
    ) -> Result<Option<KvTransit>, Error> {
        let Some(key) = &self.kv_compress else {
            return Ok(None);
        };
        let c = cat
            .compression(key)
            .map_err(|e| rename(e, "--kv-compress"))?
            .for_model(model);
        if model.kv_bytes != 2.0 {
            return Err(Error::invalid(
                "--kv-compress",
                format!(
                    "KV compression starts from a BF16 cache (2 bytes per value); {} stores {}",
                    model.name, model.kv_bytes
                ),
            ));
        }
        if self.mode != Mode::Disagg {
            return Err(Error::invalid(
                "--kv-compress",
                "compresses the prefill-to-decode hand-off: disaggregated mode only",
            ));
        }
        Ok(Some(KvTransit::new(c, self.kv_compress_at)))
    }

    /// Step 6: the hand-off options. In colocated mode the four that shape the KV link must be at
    /// their defaults; `per-pair` must not give more than [`MAX_LINKS`] links.
    pub(super) fn resolve_handoff(&self) -> Result<HandoffOptions, Error> {
        let handoff = self.handoff_options();
        if self.mode == Mode::Colocated {
            let d = HandoffOptions::default();
            for (flag, given, default) in [
                (SEND_FLAG, handoff.send.as_str(), d.send.as_str()),
                (
                    <LinkSharing as crate::options::Choice>::FLAG,
                    handoff.link_sharing.as_str(),
                    d.link_sharing.as_str(),
                ),
                (
                    LinkTopology::WHAT,
                    handoff.link_topology.as_str(),
                    d.link_topology.as_str(),
                ),
                (
                    ReserveKvOn::WHAT,
                    handoff.reserve_kv_on.as_str(),
                    d.reserve_kv_on.as_str(),
                ),
            ] {
                if given != default {
                    return Err(Error::invalid(
                        flag,
                        format!(
                            "'{given}' shapes the prefill-to-decode KV hand-off: disaggregated \
                             mode only (colocated mode has no KV link)"
                        ),
                    ));
                }
            }
        }
        let pairs = self.prefill as u64 * self.decode as u64;
        if handoff.link_topology == LinkTopology::PerPair && pairs > MAX_LINKS as u64 {
            return Err(Error::invalid(
                "--link-topology",
                format!(
                    "per-pair gives {} x {} = {pairs} links; at most {MAX_LINKS}",
                    self.prefill, self.decode,
                ),
            ));
        }
        Ok(handoff)
    }

    /// The five hand-off options (echoed in the summary as `options`).
    pub fn handoff_options(&self) -> HandoffOptions {
        HandoffOptions {
            send: self.send,
            link_sharing: self.link_sharing,
            link_topology: self.link_topology,
            reserve_kv_on: self.reserve_kv_on,
            first_token: self.first_token,
        }
    }

    /// `--handoff-ranks` and `--nics-per-instance`: the rank-aware plan's NICs between the
    /// prefill and decode pools' layouts (`layout_for`, else TP = devices per instance), on the
    /// KV link, the decode device pricing nothing but naming its scale-up link. It models an
    /// uncompressed hand-off of attention KV sent after the prefill, without a draft's KV. A
    /// model described by layer kinds hands off kind by kind (`disagg_model::ranks`): its ports
    /// are recomputed for each prompt length (sliding windows and chunks capped, linear states
    /// fixed, an MLA latent sent once per decode TP rank); only the stream time follows the
    /// ports, the transfer's bytes and energy stay the logical hand-off's.
    pub(super) fn resolve_rank_ports(
        &self,
        model: &ModelSpec,
        link: &Link,
        pools: &[Pool],
        cat: &Catalogue,
    ) -> Result<Option<PortLoads>, Error> {
        const FLAG: &str = "--handoff-ranks";
        if !self.handoff_ranks {
            return match self.nics_per_instance {
                Some(_) => Err(Error::invalid(
                    "--nics-per-instance",
                    "applies only with --handoff-ranks",
                )),
                None => Ok(None),
            };
        }
        let why = |what: &str| {
            Error::invalid(
                FLAG,
                format!(
                    "the rank-aware hand-off models one uncompressed KV cache sent after the \
                     prefill: not with {what}"
                ),
            )
        };
        if self.mode != Mode::Disagg {
            return Err(Error::invalid(
                FLAG,
                "shapes the prefill-to-decode KV hand-off: disaggregated mode only",
            ));
        }
        if self.kv_compress.as_deref().is_some_and(|k| k != "none") {
            return Err(why("--kv-compress"));
        }
        if self.send != SendMode::Whole {
            return Err(why("--send layerwise"));
        }
        if self.speculative.is_some() {
            return Err(why("--speculative (the draft's KV)"));
        }
        let pool = |role: Role| pools.iter().find(|p| p.role == role).expect("a pool");
        let layout = |role: Role| match self.layout_for(role) {
            Some(par) => RankLayout::new(par.tp, par.pp),
            None => RankLayout::new(pool(role).devices, 1),
        };
        let mut opts = RankOptions::new(layout(Role::Prefill), layout(Role::Decode));
        opts.nics_per_instance = self.nics_per_instance.map(u64::from);
        let device = &pool(Role::Decode).device;
        let scale_up = match &self.scale_up_link {
            Some(k) => cat.link(k).ok(),
            None => cat.link(&device.scale_up).ok(),
        };
        PortLoads::new(model, link, scale_up, device, &opts)
            .map(Some)
            .map_err(|e| Error::invalid(FLAG, e.to_string()))
    }
}
