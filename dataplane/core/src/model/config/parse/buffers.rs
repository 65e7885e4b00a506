//! The MMU tables: `BUFFER_ASIC`, `BUFFER_POOL`, `BUFFER_PROFILE`, `BUFFER_PG`, `BUFFER_QUEUE` and the port
//! profile lists (`docs/mmu.md`), and the checks that need all of them at once (`docs/configuration.md`).
//!
//! A pool or profile that cannot be used (no size, no threshold, an unknown pool) is left out of the
//! compiled lists; references to it raise no further error.

use super::{
    Compiler, Entry, Named, PortMap, entries, parse_bytes, parse_dynamic_th, parse_keyword, parse_number,
    thousands,
};
use crate::model::config::asic::{self, AsicFamily};
use crate::model::config::{
    AsicSettings, BufferPool, BufferProfile, ConfigIssue, EcnMarkPoint, PoolDirection, PortBuffers, PortQos,
    ProfileIndex, SwitchConfig, Threshold, ThresholdMode,
};
use std::collections::HashMap;

const ASIC_FIELDS: &[&str] =
    &["cell_size", "mmu_size", "ecn_mark_point", "pfc_pause_quanta", "pfc_refresh_percent", "random_seed"];
/// `percentage` (the dynamic buffer model's pool sizing) is accepted and reported as not modelled.
const POOL_FIELDS: &[&str] = &["type", "mode", "size", "xoff", "percentage"];
const PROFILE_FIELDS: &[&str] = &[
    "pool",
    "size",
    "dynamic_th",
    "static_th",
    "xon",
    "xoff",
    "xon_offset",
    // Known to SONiC, meaningless to the model.
    "headroom_type",
    "packet_discard_action",
];
/// The headroom fields of a profile, which only ingress (PG) profiles use.
const HEADROOM_FIELDS: [&str; 3] = ["xon", "xoff", "xon_offset"];

fn direction_name(direction: PoolDirection) -> &'static str {
    match direction {
        PoolDirection::Ingress => "ingress",
        PoolDirection::Egress => "egress",
    }
}

fn parse_pool_type(text: &str) -> Result<PoolDirection, String> {
    if text == "both" {
        return Err("type both is not supported: a pool is ingress or egress".into());
    }
    parse_keyword(text, &[("ingress", PoolDirection::Ingress), ("egress", PoolDirection::Egress)])
}

/// A `BUFFER_PG` / `BUFFER_QUEUE` / profile-list reference to a profile, which must use a pool of
/// `direction`. `Ok(None)`: the profile exists but was rejected.
fn directed_profile(
    value: &str,
    direction: PoolDirection,
    user: &str,
    pools: &Named<BufferPool>,
    profiles: &Named<BufferProfile>,
) -> Result<Option<ProfileIndex>, String> {
    if value == "NULL" {
        return Err("NULL (computed) profiles need the control plane's headroom calculator; \
                    name a BUFFER_PROFILE instead"
            .into());
    }
    let Some(index) = profiles.resolve(value)? else { return Ok(None) };
    let profile = &profiles.items[index];
    let pool = &pools.items[profile.pool];
    if pool.direction != direction {
        return Err(format!(
            "BUFFER_PROFILE|{} uses {} pool {}; {user} needs a profile of an {} pool",
            profile.name,
            direction_name(pool.direction),
            pool.name,
            direction_name(direction)
        ));
    }
    Ok(Some(index))
}

/// The bytes a PG or queue may hold in its pool's shared space: `static_th` (0 = no limit, so the pool), or
/// for `dynamic_th` n the single-consumer steady state alpha/(1+alpha) × pool size with alpha = 2^n
/// (`docs/mmu.md`; the limit is alpha × free space, so one consumer settles where usage = alpha × (pool − usage)).
pub(super) fn shared_limit_bytes(profile: &BufferProfile, pool: &BufferPool) -> u64 {
    let pool_bytes = u128::from(pool.size_bytes);
    let limit = match profile.threshold {
        Threshold::Static(0) => pool_bytes,
        Threshold::Static(bytes) => u128::from(bytes),
        Threshold::Dynamic(n) if n >= 0 => {
            let alpha = 1u128 << n;
            pool_bytes * alpha / (alpha + 1)
        }
        // alpha = 1/2^m: alpha/(1+alpha) = 1/(2^m + 1).
        Threshold::Dynamic(n) => pool_bytes / ((1u128 << n.unsigned_abs()) + 1),
    };
    u64::try_from(limit).unwrap_or(u64::MAX)
}

/// The lossless PGs of a port: `pfc_to_pg[p]` for every priority p in `pfc_enable` (as a bit mask).
fn lossless_pgs(qos: &PortQos) -> u8 {
    (0..8).filter(|p| qos.pfc_enable & 1 << p != 0).fold(0, |mask, p| mask | 1 << qos.pfc_to_pg[p])
}

fn bits(mask: u8) -> impl Iterator<Item = usize> {
    (0..8).filter(move |i| mask & 1 << i != 0)
}

impl<'a> Compiler<'a> {
    /// The ASIC: the family's personality from `DEVICE_METADATA|localhost`, then `BUFFER_ASIC|global`
    /// (Lossless extension) over it.
    pub(super) fn buffer_asic(&mut self) -> AsicSettings {
        let mut asic = AsicSettings::of(self.asic_family());
        for e in entries(self.db, "BUFFER_ASIC") {
            if e.key != "global" {
                let message = format!("{:?} is not a BUFFER_ASIC key: the only one is global", e.key);
                self.error(e, "", e.key, message);
                continue;
            }
            self.check_fields(e, ASIC_FIELDS);
            let cell = self.optional(e, "cell_size", |v| parse_number(v, "a number of bytes", 1, 16384));
            asic.cell_bytes = cell.unwrap_or(asic.cell_bytes);
            asic.mmu_size_bytes = self.optional(e, "mmu_size", parse_bytes).or(asic.mmu_size_bytes);
            let points = [("enqueue", EcnMarkPoint::Enqueue), ("dequeue", EcnMarkPoint::Dequeue)];
            let point = self.optional(e, "ecn_mark_point", |v| parse_keyword(v, &points));
            asic.ecn_mark_point = point.unwrap_or(asic.ecn_mark_point);
            let quanta = self
                .optional(e, "pfc_pause_quanta", |v| parse_number(v, "a number of pause quanta", 1, 65535));
            asic.pfc_pause_quanta = quanta.unwrap_or(asic.pfc_pause_quanta);
            let refresh =
                self.optional(e, "pfc_refresh_percent", |v| parse_number(v, "a percentage", 1, 100));
            asic.pfc_refresh_percent = refresh.unwrap_or(asic.pfc_refresh_percent);
            let seed = self.optional(e, "random_seed", |v| parse_number(v, "a 64-bit number", 0, u64::MAX));
            asic.random_seed = seed.unwrap_or(asic.random_seed);
        }
        asic
    }

    /// `DEVICE_METADATA|localhost`: `asic` (Lossless extension: a family keyword), else the `hwsku`, else
    /// the `platform`. A hwsku or platform the model does not know runs the generic personality, with a
    /// warning that says so.
    fn asic_family(&mut self) -> AsicFamily {
        let Some(e) = entries(self.db, "DEVICE_METADATA").find(|e| e.key == "localhost") else {
            return AsicFamily::Generic;
        };
        let asic = self.optional(e, "asic", |v| {
            AsicFamily::from_keyword(v).ok_or_else(|| {
                let words: Vec<&str> = AsicFamily::ALL.iter().map(|f| f.keyword()).collect();
                format!("{v:?} is not an ASIC family the model knows ({})", words.join(", "))
            })
        });
        let (family, chosen) = asic::family_of(asic, e.get("hwsku"), e.get("platform"));
        if let asic::Chosen::Unknown(name) = chosen {
            let field = if e.get("hwsku") == Some(name.as_str()) { "hwsku" } else { "platform" };
            let message = format!(
                "no ASIC personality for {name}: running the generic one (one buffer, 208-byte cells); set \
                 DEVICE_METADATA|localhost|asic to one of th, th2, td2, td3, spc1, spc2, spc3"
            );
            self.warn(e, field, &name, message);
        }
        family
    }

    pub(super) fn buffer_pools(&mut self) -> Named<'a, BufferPool> {
        Named::compile(self, "BUFFER_POOL", Compiler::buffer_pool)
    }

    /// `BUFFER_POOL|<name>`: `type` and `size` are required (SAI creates no pool without them).
    fn buffer_pool(&mut self, e: Entry<'a>) -> Option<BufferPool> {
        self.check_fields(e, POOL_FIELDS);
        let direction = self.required(e, "type", parse_pool_type);
        let modes = [("static", ThresholdMode::Static), ("dynamic", ThresholdMode::Dynamic)];
        let mode = self.optional(e, "mode", |v| parse_keyword(v, &modes)).unwrap_or(ThresholdMode::Dynamic);
        let size_bytes = self.required(e, "size", parse_bytes);
        let mut xoff_bytes = self.optional(e, "xoff", parse_bytes).unwrap_or(0);
        if let Some(value) = e.get("percentage") {
            let message = "percentage (the dynamic buffer model's share of the free buffer) is not modelled: \
                           the pool has its size";
            self.warn(e, "percentage", value, message);
        }
        let direction = direction?;
        if direction == PoolDirection::Egress && xoff_bytes > 0 {
            let message = "xoff (the shared headroom pool) is only allowed on ingress pools: \
                           headroom absorbs what arrives after an ingress PG sends XOFF";
            self.field_error(e, "xoff", message);
            xoff_bytes = 0;
        }
        if let Some(size) = size_bytes
            && xoff_bytes > size
        {
            let message = format!(
                "xoff {} (the shared headroom pool) is larger than the pool's size {}: SONiC carves the \
                 headroom pool out of the pool",
                thousands(xoff_bytes),
                thousands(size)
            );
            self.field_error(e, "xoff", message);
        }
        Some(BufferPool { name: e.key.to_owned(), direction, mode, size_bytes: size_bytes?, xoff_bytes })
    }

    pub(super) fn buffer_profiles(&mut self, pools: &Named<BufferPool>) -> Named<'a, BufferProfile> {
        Named::compile(self, "BUFFER_PROFILE", |cx, e| cx.buffer_profile(e, pools))
    }

    /// `BUFFER_PROFILE|<name>`: exactly one of `dynamic_th` / `static_th`. The threshold mode is the
    /// profile's own, whatever its pool's `mode` (SAI's `SAI_BUFFER_PROFILE_ATTR_THRESHOLD_MODE`, which
    /// bufferorch sets from the field present): SONiC's Arista templates put a `static_th` lossy profile on
    /// the dynamic ingress_lossless_pool.
    fn buffer_profile(&mut self, e: Entry<'a>, pools: &Named<BufferPool>) -> Option<BufferProfile> {
        self.check_fields(e, PROFILE_FIELDS);
        let pool_index = self.required(e, "pool", |v| pools.resolve(v)).flatten();
        let size_bytes = self.optional(e, "size", parse_bytes).unwrap_or(0);
        let dynamic_th = self.optional(e, "dynamic_th", parse_dynamic_th);
        let static_th = self.optional(e, "static_th", parse_bytes);
        let mut headroom = [0; 3];
        for (bytes, field) in headroom.iter_mut().zip(HEADROOM_FIELDS) {
            *bytes = self.optional(e, field, parse_bytes).unwrap_or(0);
        }
        self.optional(e, "headroom_type", |v| parse_keyword(v, &[("static", ()), ("dynamic", ())]));
        self.optional(e, "packet_discard_action", |v| parse_keyword(v, &[("drop", ()), ("trim", ())]));
        let threshold = match (e.get("dynamic_th"), e.get("static_th")) {
            (Some(_), Some(_)) => {
                self.error(e, "", e.key, "dynamic_th and static_th are both set; a profile has exactly one");
                None
            }
            (None, None) => {
                if !self.is_misspelled(e, "dynamic_th") && !self.is_misspelled(e, "static_th") {
                    self.error(e, "", e.key, "a profile needs dynamic_th or static_th (exactly one)");
                }
                None
            }
            (Some(_), None) => dynamic_th.map(Threshold::Dynamic),
            (None, Some(_)) => static_th.map(Threshold::Static),
        };
        let (pool_index, threshold) = (pool_index?, threshold?);
        let pool = &pools.items[pool_index];
        if size_bytes > pool.size_bytes {
            let message = format!(
                "size {} is larger than pool {} ({} bytes)",
                thousands(size_bytes),
                pool.name,
                thousands(pool.size_bytes)
            );
            self.field_error(e, "size", message);
        }
        if let Threshold::Static(bytes) = threshold
            && bytes > pool.size_bytes
        {
            let message = format!(
                "static_th {} is larger than pool {} ({} bytes), which caps it",
                thousands(bytes),
                pool.name,
                thousands(pool.size_bytes)
            );
            self.warn(e, "static_th", e.get("static_th").unwrap_or_default(), message);
        }
        if pool.direction == PoolDirection::Egress {
            for (bytes, field) in headroom.iter_mut().zip(HEADROOM_FIELDS) {
                if *bytes > 0 {
                    let message = format!("{field} ignored on egress profiles (egress queues send no PFC)");
                    self.warn(e, field, e.get(field).unwrap_or_default(), message);
                    *bytes = 0;
                }
            }
        }
        let [xon_bytes, xoff_bytes, xon_offset_bytes] = headroom;
        Some(BufferProfile {
            name: e.key.to_owned(),
            pool: pool_index,
            size_bytes,
            threshold,
            xon_bytes,
            xoff_bytes,
            xon_offset_bytes,
        })
    }

    /// `BUFFER_PG`, `BUFFER_QUEUE` and the port profile lists, into each port's [`PortBuffers`].
    pub(super) fn buffer_bindings(
        &mut self,
        ports: &PortMap,
        pools: &Named<BufferPool>,
        profiles: &Named<BufferProfile>,
        buffers: &mut [PortBuffers],
    ) {
        for (table, what, direction) in
            [("BUFFER_PG", "PG", PoolDirection::Ingress), ("BUFFER_QUEUE", "queue", PoolDirection::Egress)]
        {
            for (e, slots) in self.indexed_entries(table, what, ports) {
                self.check_fields(e, &["profile"]);
                let profile =
                    self.required(e, "profile", |v| directed_profile(v, direction, table, pools, profiles));
                let Some(profile) = profile.flatten() else { continue };
                for (port, index) in slots {
                    let port_buffers = &mut buffers[port.index()];
                    let slot = match direction {
                        PoolDirection::Ingress => &mut port_buffers.pg_profile[index],
                        PoolDirection::Egress => &mut port_buffers.queue_profile[index],
                    };
                    *slot = Some(profile);
                }
            }
        }
        for (table, direction) in [
            ("BUFFER_PORT_INGRESS_PROFILE_LIST", PoolDirection::Ingress),
            ("BUFFER_PORT_EGRESS_PROFILE_LIST", PoolDirection::Egress),
        ] {
            let mut owners = HashMap::new();
            for e in entries(self.db, table) {
                let targets = self.unique_key_ports(e, ports, &mut owners);
                self.check_fields(e, &["profile_list"]);
                let Some(list) = self.profile_list(e, table, direction, pools, profiles) else { continue };
                for port in targets {
                    let port_buffers = &mut buffers[port.index()];
                    match direction {
                        PoolDirection::Ingress => port_buffers.ingress_profile_list = list.clone(),
                        PoolDirection::Egress => port_buffers.egress_profile_list = list.clone(),
                    }
                }
            }
        }
    }

    /// `profile_list`: profiles of pools of `direction`, one per pool at most (each caps the port's shared
    /// usage of its pool). `None` when any item is unusable.
    fn profile_list(
        &mut self,
        e: Entry<'a>,
        table: &str,
        direction: PoolDirection,
        pools: &Named<BufferPool>,
        profiles: &Named<BufferProfile>,
    ) -> Option<Vec<ProfileIndex>> {
        let text = self.require(e, "profile_list")?;
        let mut list: Vec<ProfileIndex> = Vec::new();
        let mut usable = true;
        let items = if text.is_empty() { Vec::new() } else { text.split(',').collect() };
        for item in items {
            match directed_profile(item, direction, table, pools, profiles) {
                Err(message) => {
                    self.field_error(e, "profile_list", message);
                    usable = false;
                }
                Ok(None) => usable = false,
                Ok(Some(profile)) => {
                    let pool = profiles.items[profile].pool;
                    if let Some(&other) = list.iter().find(|&&other| profiles.items[other].pool == pool) {
                        let message = format!(
                            "{} and {} both use pool {}; a port has one profile per pool",
                            profiles.items[other].name, profiles.items[profile].name, pools.items[pool].name
                        );
                        self.field_error(e, "profile_list", message);
                        usable = false;
                    } else {
                        list.push(profile);
                    }
                }
            }
        }
        usable.then_some(list)
    }

    /// The checks that need several tables at once: the UCloud inequality and lossless PGs without a
    /// profile (warnings), and the total against `mmu_size` (an error).
    pub(super) fn check_buffers(&mut self, config: &SwitchConfig) {
        self.check_lossless_pgs_have_profiles(config);
        self.check_lossless_headroom(config);
        self.check_ucloud_inequality(config);
        self.check_mmu_size(config);
    }

    /// A lossless PG needs headroom: the bytes still arriving after it sends XOFF. Its profile must have
    /// an `xoff`, and a shared headroom pool must be able to give a PG all of it.
    ///
    /// - a PFC priority whose PG has a lossy profile (no `xon`, `xoff` or `xon_offset` at all) is refused at
    ///   `PORT_QOS_MAP|<port>|pfc_enable`: PFC would be negotiated for a class the buffer drops;
    /// - a headroom profile with `xoff` 0 on a lossless PG is refused at `BUFFER_PROFILE|<name>|xoff`;
    /// - `xoff` above its pool's shared headroom pool (pool `xoff` > 0) is refused there too.
    fn check_lossless_headroom(&mut self, config: &SwitchConfig) {
        let (pools, profiles) = (&config.pools, &config.profiles);
        let mut reported = vec![false; profiles.len()];
        for ((port, qos), buffers) in config.ports.iter().zip(&config.qos).zip(&config.port_buffers) {
            for priority in bits(qos.pfc_enable) {
                let pg = usize::from(qos.pfc_to_pg[priority]);
                let Some(index) = buffers.pg_profile[pg] else { continue };
                let profile = &profiles[index];
                if self.headroom_fields_written(&profile.name).is_empty() {
                    let message = format!(
                        "priority {priority} is PFC-enabled but its PG {pg} has the lossy profile {} (no xoff \
                         headroom): frames in flight after XOFF would be dropped",
                        profile.name
                    );
                    let (key, value) = self.port_qos_written(&port.name, "pfc_enable");
                    self.errors.push(ConfigIssue::new("PORT_QOS_MAP", &key, "pfc_enable", &value, message));
                    continue;
                }
                if reported[index] {
                    continue;
                }
                let pool = &pools[profile.pool];
                let message = if profile.xoff_bytes == 0 {
                    format!(
                        "xoff 0 on a lossless profile ({}|{pg} is PFC-enabled): no headroom for what arrives \
                         after XOFF",
                        port.name
                    )
                } else if pool.xoff_bytes > 0 && profile.xoff_bytes > pool.xoff_bytes {
                    format!(
                        "xoff {} is more than the shared headroom pool of {} can ever give ({} bytes)",
                        thousands(profile.xoff_bytes),
                        pool.name,
                        thousands(pool.xoff_bytes)
                    )
                } else {
                    continue;
                };
                reported[index] = true;
                let value = self.written("BUFFER_PROFILE", &profile.name, "xoff");
                self.errors.push(ConfigIssue::new("BUFFER_PROFILE", &profile.name, "xoff", &value, message));
            }
        }
    }

    /// The headroom fields (`xon`, `xoff`, `xon_offset`) written for a profile.
    fn headroom_fields_written(&self, name: &str) -> Vec<&'static str> {
        let fields = self.db.tables.get("BUFFER_PROFILE").and_then(|t| t.get(name));
        HEADROOM_FIELDS
            .iter()
            .copied()
            .filter(|f| fields.is_some_and(|fields| fields.contains_key(*f)))
            .collect()
    }

    /// The value written at `TABLE|key|field` (empty when absent).
    fn written(&self, table: &str, key: &str, field: &str) -> String {
        let fields = self.db.tables.get(table).and_then(|t| t.get(key));
        fields.and_then(|f| f.get(field)).cloned().unwrap_or_default()
    }

    /// The `PORT_QOS_MAP` key that configures a port (it may join several ports with commas) and the
    /// value of `field` there.
    fn port_qos_written(&self, port: &str, field: &str) -> (String, String) {
        match entries(self.db, "PORT_QOS_MAP").find(|e| e.key.split(',').any(|p| p == port)) {
            Some(e) => (e.key.to_owned(), e.get(field).unwrap_or_default().to_owned()),
            None => (port.to_owned(), String::new()),
        }
    }

    /// A lossless PG without a profile is admitted without limit and never reaches an XOFF point. Only on
    /// ports that have buffer tables at all: a port with none is outside the buffer model on purpose.
    fn check_lossless_pgs_have_profiles(&mut self, config: &SwitchConfig) {
        for ((port, qos), buffers) in config.ports.iter().zip(&config.qos).zip(&config.port_buffers) {
            let managed = buffers.pg_profile.iter().chain(&buffers.queue_profile).any(Option::is_some)
                || !buffers.ingress_profile_list.is_empty()
                || !buffers.egress_profile_list.is_empty();
            if !managed {
                continue;
            }
            for pg in bits(lossless_pgs(qos)).filter(|&pg| buffers.pg_profile[pg].is_none()) {
                let key = format!("{}|{pg}", port.name);
                let message = "lossless PG has no buffer profile: admitted without limit, never sends PFC";
                self.warnings.push(ConfigIssue::new("BUFFER_PG", &key, "", "", message));
            }
        }
    }

    /// UCloud's buffer inequality: a lossless egress queue must be able to take everything the lossless
    /// ingress PGs feeding it can hold, or it drops lossless packets before ingress ever pauses a sender.
    ///
    /// ```text
    /// For egress port E, its lossless queue q = E.pfc_to_queue[p] (p in E.pfc_enable) with profile Q, and
    /// every other port P with p in P.pfc_enable and a profile G on its PG g = P.pfc_to_pg[p]:
    ///     hold(P)   = G.size + shared_limit(G) + G.xoff
    ///     take(E,q) = Q.size + shared_limit(Q)
    ///     warning when  Σ_P hold(P) > take(E,q)
    /// shared_limit = static_th (0: the pool size), or for dynamic_th n the single-consumer steady state
    ///                alpha/(1+alpha) × pool size, alpha = 2^n
    /// ```
    ///
    /// One refinement: the PGs share their pool, so per ingress pool the sum of their shared parts is capped
    /// at the pool's size, and the sum of their xoff at the pool's `xoff` when it has a shared headroom pool
    /// (Broadcom's egress_lossless_pool is sized for exactly that bound, not for the sum of the PGs').
    fn check_ucloud_inequality(&mut self, config: &SwitchConfig) {
        // The pools as the ASIC sees them: its personality may carve reservations out of a pool's shared
        // space (Trident) or split it into partitions (Tomahawk: the whole is the sum of the parts).
        let cell = u64::from(config.asic.cell_bytes.max(1));
        let personality = config.asic.personality;
        let partitions = personality.partitions() as u64;
        let as_written =
            personality.pool_share == asic::PoolShare::AsWritten && !personality.one_egress_service_pool;
        let pools: Vec<BufferPool> = config
            .pools
            .iter()
            .zip(asic::pool_shares(config, cell))
            .map(|(pool, (shared, _))| {
                let size_bytes = if as_written { pool.size_bytes } else { shared * cell * partitions };
                BufferPool { size_bytes, ..pool.clone() }
            })
            .collect();
        let (pools, profiles) = (&pools, &config.profiles);
        // One warning per (queue profile, finding), naming the first queue and how many more share it.
        let mut findings: Vec<(ConfigIssue, usize)> = Vec::new();
        for (egress, (egress_qos, egress_buffers)) in config.qos.iter().zip(&config.port_buffers).enumerate()
        {
            let mut lossless_queues = 0u8;
            for p in bits(egress_qos.pfc_enable) {
                lossless_queues |= 1 << egress_qos.pfc_to_queue[p];
            }
            for queue in bits(lossless_queues) {
                let Some(queue_profile) = egress_buffers.queue_profile[queue] else { continue };
                let queue_profile = &profiles[queue_profile];
                let queue_pool = &pools[queue_profile.pool];
                let take = queue_profile.size_bytes + shared_limit_bytes(queue_profile, queue_pool);
                let priorities =
                    bits(egress_qos.pfc_enable).filter(|&p| usize::from(egress_qos.pfc_to_queue[p]) == queue);
                // (ingress port, PG) → profile, each PG once however many priorities share it.
                let mut feeding: Vec<(usize, usize, ProfileIndex)> = Vec::new();
                for p in priorities {
                    for (ingress, (qos, buffers)) in config.qos.iter().zip(&config.port_buffers).enumerate() {
                        let pg = usize::from(qos.pfc_to_pg[p]);
                        if ingress == egress || qos.pfc_enable & 1 << p == 0 {
                            continue;
                        }
                        if let Some(profile) = buffers.pg_profile[pg]
                            && !feeding.iter().any(|&(i, g, _)| (i, g) == (ingress, pg))
                        {
                            feeding.push((ingress, pg, profile));
                        }
                    }
                }
                let holds: Vec<u64> = feeding
                    .iter()
                    .map(|&(_, _, g)| {
                        let pg = &profiles[g];
                        pg.size_bytes + shared_limit_bytes(pg, &pools[pg.pool]) + pg.xoff_bytes
                    })
                    .collect();
                let uncapped: u64 = holds.iter().sum();
                // Per ingress pool: Σ reserved + min(Σ shared, pool) + Σ xoff (capped by a shared headroom pool).
                let mut by_pool: HashMap<usize, (u64, u64, u64)> = HashMap::new();
                for &(_, _, g) in &feeding {
                    let pg = &profiles[g];
                    let sums = by_pool.entry(pg.pool).or_default();
                    sums.0 += pg.size_bytes;
                    sums.1 += shared_limit_bytes(pg, &pools[pg.pool]);
                    sums.2 += pg.xoff_bytes;
                }
                let mut capping_pools: Vec<&str> = Vec::new();
                let mut hold = 0;
                for (&pool, &(reserved, shared, xoff)) in &by_pool {
                    let pool = &pools[pool];
                    let shared_cap = shared.min(pool.size_bytes);
                    let xoff_cap = if pool.xoff_bytes > 0 { xoff.min(pool.xoff_bytes) } else { xoff };
                    if shared_cap < shared || xoff_cap < xoff {
                        capping_pools.push(&pool.name);
                    }
                    hold += reserved + shared_cap + xoff_cap;
                }
                if hold <= take {
                    continue;
                }
                let sum = match holds.as_slice() {
                    [first, rest @ ..] if rest.iter().all(|h| h == first) => {
                        format!("{} × {} = {}", holds.len(), thousands(*first), thousands(uncapped))
                    }
                    _ => format!("{} ({} lossless PGs)", thousands(uncapped), holds.len()),
                };
                let can_hold = if capping_pools.is_empty() {
                    format!("{sum} bytes")
                } else {
                    capping_pools.sort_unstable();
                    format!("{} bytes ({sum}, capped by pool {})", thousands(hold), capping_pools.join(", "))
                };
                let message = format!(
                    "UCloud check: ingress can hold {can_hold} for this queue but it can take only {}",
                    thousands(take)
                );
                let key = format!("{}|{queue}", config.ports[egress].name);
                match findings.iter_mut().find(|(i, _)| i.value == queue_profile.name && i.message == message)
                {
                    Some((_, more)) => *more += 1,
                    None => findings.push((
                        ConfigIssue::new("BUFFER_QUEUE", &key, "profile", &queue_profile.name, message),
                        0,
                    )),
                }
            }
        }
        for (mut issue, more) in findings {
            if more > 0 {
                issue.message.push_str(&format!(" (and on {more} more lossless queue(s) with this profile)"));
            }
            self.warnings.push(issue);
        }
    }

    /// With `BUFFER_ASIC|global|mmu_size`: pools, shared headroom pools, the reserved sizes of every PG
    /// and queue, and the private headroom (xoff) of lossless PGs whose pool has no shared headroom pool
    /// must fit in it. Without it, the family's buffer bounds the pools: ingress and egress pools are two
    /// accountings of the same cells (Broadcom and NVIDIA alike), so the ingress pools together, and each
    /// egress pool, must fit in it.
    fn check_mmu_size(&mut self, config: &SwitchConfig) {
        let written =
            entries(self.db, "BUFFER_ASIC").find(|e| e.key == "global").and_then(|e| e.get("mmu_size"));
        if written.is_none() {
            self.check_pools_fit_the_asic(config);
            return;
        }
        let Some(mmu_size) = config.asic.mmu_size_bytes else { return };
        let (pools, profiles) = (&config.pools, &config.profiles);
        let pool_bytes: u64 = pools.iter().map(|p| p.size_bytes).sum();
        let shared_headroom: u64 = pools.iter().map(|p| p.xoff_bytes).sum();
        let mut reserved = 0;
        let mut private_headroom = 0;
        for (qos, buffers) in config.qos.iter().zip(&config.port_buffers) {
            let lossless = lossless_pgs(qos);
            for (pg, profile) in buffers.pg_profile.iter().enumerate() {
                let Some(profile) = profile.map(|p| &profiles[p]) else { continue };
                reserved += profile.size_bytes;
                if lossless & 1 << pg != 0 && pools[profile.pool].xoff_bytes == 0 {
                    private_headroom += profile.xoff_bytes;
                }
            }
            reserved += buffers.queue_profile.iter().flatten().map(|&p| profiles[p].size_bytes).sum::<u64>();
        }
        let total = pool_bytes + shared_headroom + reserved + private_headroom;
        if total > mmu_size {
            let message = format!(
                "pools {} + shared headroom {} + reserved {} + private headroom {} = {} bytes exceed mmu_size {}",
                thousands(pool_bytes),
                thousands(shared_headroom),
                thousands(reserved),
                thousands(private_headroom),
                thousands(total),
                thousands(mmu_size)
            );
            let value = entries(self.db, "BUFFER_ASIC")
                .find(|e| e.key == "global")
                .and_then(|e| e.get("mmu_size"))
                .unwrap_or_default();
            self.errors.push(ConfigIssue::new("BUFFER_ASIC", "global", "mmu_size", value, message));
        }
    }

    /// The pools against the family's buffer (see [`Compiler::check_mmu_size`]); the pool that goes over
    /// is named.
    fn check_pools_fit_the_asic(&mut self, config: &SwitchConfig) {
        let personality = config.asic.personality;
        let Some(buffer) = personality.buffer_bytes else { return };
        let mut ingress = 0;
        for pool in &config.pools {
            let (total, what) = match pool.direction {
                PoolDirection::Ingress => {
                    ingress += pool.size_bytes;
                    (ingress, "the ingress pools together")
                }
                PoolDirection::Egress => (pool.size_bytes, "the pool"),
            };
            if total > buffer {
                let message = format!(
                    "{} bytes in {what}: more than the {} buffer of {} bytes",
                    thousands(total),
                    personality.name,
                    thousands(buffer)
                );
                let value = self.written("BUFFER_POOL", &pool.name, "size");
                self.errors.push(ConfigIssue::new("BUFFER_POOL", &pool.name, "size", &value, message));
                return;
            }
        }
    }
}
