//! Which headroom model applies to a switch: its `DEVICE_METADATA|localhost` hwsku, platform and
//! `buffer_model`, or what the operator asks for.

use lossless_dataplane::model::config::ConfigDb;
use serde::Serialize;
use std::fmt;

use super::{
    Asic, FormulaOptions, Headroom, HeadroomModel, LookupTable, PortParams, TrafficPattern, field,
    shp_enabled_in_config, skus,
};

/// How the model is chosen (`swctl --model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelChoice {
    /// A shipped lookup table when the hwsku has one (and the buffer model is not `dynamic`), else the
    /// dynamic formula with the ASIC of the platform or hwsku, else with sonic-vs's ASIC.
    #[default]
    Auto,
    Lookup,
    Dynamic,
    Ieee,
}

/// What the operator said; everything unset comes from the configuration or SONiC's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub choice: ModelChoice,
    /// Instead of `DEVICE_METADATA|localhost|hwsku`.
    pub hwsku: Option<String>,
    /// Instead of `DEVICE_METADATA|localhost|platform`.
    pub platform: Option<String>,
    /// A shipped table (its name, an alias or a hwsku) or a `pg_profile_lookup.ini` file; with `Auto`,
    /// giving one chooses the lookup.
    pub lookup: Option<String>,
    /// The dynamic formula's ASIC; with `Auto`, giving one chooses the formula.
    pub asic: Option<Asic>,
    pub formula: FormulaOptions,
    /// Instead of the platform's gearbox delay.
    pub gearbox_delay_ns: Option<u32>,
    /// `LOSSLESS_TRAFFIC_PATTERN` when the configuration has none.
    pub pattern: TrafficPattern,
    /// The shared headroom pool on, whatever the configuration says.
    pub shp: bool,
}

impl Default for ModelRequest {
    fn default() -> ModelRequest {
        ModelRequest {
            choice: ModelChoice::Auto,
            hwsku: None,
            platform: None,
            lookup: None,
            asic: None,
            formula: FormulaOptions::MASTER,
            gearbox_delay_ns: None,
            pattern: TrafficPattern::BUFFERS_CONFIG,
            shp: false,
        }
    }
}

/// A chosen model and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub model: HeadroomModel,
    pub reason: String,
}

impl Selection {
    /// `lookup: sonic-buildimage device/…/pg_profile_lookup.ini`, `dynamic: Spectrum-2 parameters (…)`.
    pub fn source_line(&self) -> String {
        format!("{}: {}", self.model.kind(), self.model.source())
    }

    /// One port's headroom under this model, with the model's description.
    pub fn report(&self, port: &PortParams) -> Result<Report, String> {
        let headroom = self.model.headroom(port)?;
        Ok(Report {
            model: self.model.kind(),
            source: self.model.source(),
            reason: self.reason.clone(),
            port: *port,
            headroom,
        })
    }
}

/// What `swctl headroom` prints: as text ([`fmt::Display`]) or JSON (serde).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `lookup`, `dynamic` or `ieee`.
    pub model: &'static str,
    /// Where the figures come from.
    pub source: String,
    /// Why this model.
    pub reason: String,
    pub port: PortParams,
    #[serde(flatten)]
    pub headroom: Headroom,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {}", self.model, self.source)?;
        writeln!(f, "why: {}", self.reason)?;
        let lanes = if self.port.lanes > 0 { format!(", {} lanes", self.port.lanes) } else { String::new() };
        writeln!(
            f,
            "port: {} Mb/s, cable {}m, MTU {}{lanes}",
            self.port.speed_mbps, self.port.cable_m, self.port.mtu
        )?;
        write!(f, "{}", self.headroom)
    }
}

impl ModelRequest {
    /// The model for a configuration (or for none: `swctl headroom` without `--config`).
    pub fn select(&self, db: Option<&ConfigDb>) -> Result<Selection, String> {
        let metadata = |name: &str| db.and_then(|db| field(db, "DEVICE_METADATA", "localhost", name));
        let hwsku = self.hwsku.as_deref().or(metadata("hwsku").map(String::as_str)).filter(|h| !h.is_empty());
        // The platform: given, configured, or the one a SKU with a shipped table is under.
        let platform = self
            .platform
            .as_deref()
            .or(metadata("platform").map(String::as_str))
            .or_else(|| hwsku.and_then(skus::sku).map(|entry| entry.platform));
        let hwsku_from = if self.hwsku.is_some() { "--hwsku" } else { "DEVICE_METADATA" };
        match self.choice {
            ModelChoice::Ieee => Ok(Selection { model: HeadroomModel::Ieee, reason: "--model ieee".into() }),
            ModelChoice::Dynamic => {
                let (asic, why) = self.asic_of(platform, hwsku).unwrap_or((Asic::Vs, "no known ASIC".into()));
                self.dynamic(db, asic, platform, format!("--model dynamic; {why}"))
            }
            ModelChoice::Lookup => {
                if let Some(name) = &self.lookup {
                    return Ok(Selection {
                        model: lookup_by_name(name)?,
                        reason: format!("--lookup {name}"),
                    });
                }
                let entry = hwsku.and_then(skus::sku).ok_or_else(|| {
                    format!(
                        "--model lookup needs a table: no shipped table for hwsku {}; name one with --lookup \
                         (a pg_profile_lookup.ini file, or one of {})",
                        hwsku.unwrap_or("(none)"),
                        skus::table_names()
                    )
                })?;
                let reason = format!("--model lookup; hwsku {} ({hwsku_from})", entry.hwsku);
                Ok(Selection { model: HeadroomModel::Lookup(entry.table()), reason })
            }
            ModelChoice::Auto => {
                if let Some(name) = &self.lookup {
                    return Ok(Selection {
                        model: lookup_by_name(name)?,
                        reason: format!("--lookup {name}"),
                    });
                }
                if let Some(asic) = self.asic {
                    return self.dynamic(db, asic, platform, format!("--asic {}", asic.cli_name()));
                }
                let asic = self.asic_of(platform, hwsku);
                if metadata("buffer_model").is_some_and(|m| m == "dynamic") {
                    let (asic, why) = asic.unwrap_or((Asic::Vs, "no known ASIC".into()));
                    return self.dynamic(
                        db,
                        asic,
                        platform,
                        format!("DEVICE_METADATA buffer_model dynamic; {why}"),
                    );
                }
                if let Some(entry) = hwsku.and_then(skus::sku) {
                    let reason = format!("hwsku {} ({hwsku_from}) has a shipped table", entry.hwsku);
                    return Ok(Selection { model: HeadroomModel::Lookup(entry.table()), reason });
                }
                let no_table = match hwsku {
                    Some(h) => format!("no shipped table for hwsku {h} ({hwsku_from})"),
                    None => "no hwsku".to_owned(),
                };
                match asic {
                    Some((asic, why)) => self.dynamic(db, asic, platform, format!("{no_table}; {why}")),
                    None => self.dynamic(
                        db,
                        Asic::Vs,
                        platform,
                        format!("fallback: {no_table} and no known ASIC, so sonic-vs's ASIC_TABLE"),
                    ),
                }
            }
        }
    }

    /// The ASIC: `--asic`, else the platform's (asic_table.j2), else the hwsku's model number's.
    fn asic_of(&self, platform: Option<&str>, hwsku: Option<&str>) -> Option<(Asic, String)> {
        if let Some(asic) = self.asic {
            return Some((asic, format!("--asic {}", asic.cli_name())));
        }
        if let Some(asic) = platform.and_then(Asic::for_platform) {
            return Some((asic, format!("platform {} is {asic}", platform.unwrap_or_default())));
        }
        let hwsku = hwsku?;
        Asic::for_hwsku(hwsku).map(|asic| (asic, format!("hwsku {hwsku} is {asic}")))
    }

    fn dynamic(
        &self,
        db: Option<&ConfigDb>,
        asic: Asic,
        platform: Option<&str>,
        reason: String,
    ) -> Result<Selection, String> {
        let mut params = asic.params();
        params.formula = self.formula;
        params.gearbox_delay_ns =
            self.gearbox_delay_ns.unwrap_or_else(|| platform.map_or(0, Asic::platform_gearbox_delay_ns));
        let configured =
            db.map(TrafficPattern::from_config).transpose().map_err(|e| e.to_string())?.flatten();
        let pattern = configured.unwrap_or(self.pattern);
        let shp = self.shp || db.is_some_and(shp_enabled_in_config);
        Ok(Selection { model: HeadroomModel::Dynamic(params, pattern, shp), reason })
    }
}

/// `--lookup`: a shipped table or alias, a hwsku with one, or a file.
fn lookup_by_name(name: &str) -> Result<HeadroomModel, String> {
    if let Some(shipped) = skus::shipped_table(name) {
        return Ok(HeadroomModel::Lookup(shipped.table()));
    }
    if let Some(entry) = skus::sku(name) {
        return Ok(HeadroomModel::Lookup(entry.table()));
    }
    let text = std::fs::read_to_string(name).map_err(|e| {
        format!(
            "--lookup {name}: neither a shipped table, nor a hwsku with one, nor a readable file ({e}); \
             shipped: {}",
            skus::table_names()
        )
    })?;
    let table = LookupTable::parse(&text).map_err(|e| format!("{name}: {e}"))?;
    Ok(HeadroomModel::Lookup(table.with_source(format!("file {name}"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(fields: &[(&str, &str)]) -> ConfigDb {
        let mut db = ConfigDb::default();
        for (field, value) in fields {
            db.set("DEVICE_METADATA", "localhost", field, *value);
        }
        db
    }

    fn select(request: &ModelRequest, fields: &[(&str, &str)]) -> Selection {
        request.select(Some(&db(fields))).unwrap()
    }

    #[test]
    fn auto_takes_the_hwskus_table() {
        let s = select(&ModelRequest::default(), &[("hwsku", "Force10-S6100")]);
        assert_eq!(
            s.source_line(),
            "lookup: sonic-buildimage device/dell/x86_64-dell_s6100_c2538-r0/Force10-S6100/pg_profile_lookup.ini \
             → device/common/profiles/th/6100/BALANCED/pg_profile_lookup.ini (configs/headroom/th-6100-BALANCED.ini)"
        );
        assert_eq!(s.reason, "hwsku Force10-S6100 (DEVICE_METADATA) has a shipped table");
        let report = s.report(&PortParams::new(100_000, 40, 9100)).unwrap();
        assert_eq!(report.headroom.xoff, 177_632);
        // Every SKU with a shipped table gets it.
        for entry in skus::skus() {
            let s = select(&ModelRequest::default(), &[("hwsku", entry.hwsku)]);
            assert_eq!(s.model, HeadroomModel::Lookup(entry.table()), "{}", entry.hwsku);
        }
    }

    #[test]
    fn auto_without_a_table_takes_the_spectrum_of_the_platform_or_hwsku() {
        // A Spectrum-2 platform whose hwsku has no shipped table; the SN3800's gearbox comes with it.
        let s = select(
            &ModelRequest::default(),
            &[("hwsku", "Mellanox-SN3800-X"), ("platform", "x86_64-mlnx_msn3800-r0")],
        );
        let HeadroomModel::Dynamic(asic, pattern, shp) = &s.model else { panic!("{s:?}") };
        assert_eq!((asic.asic, asic.gearbox_delay_ns, asic.cell_size_bytes), (Asic::Spectrum2, 400, 144));
        assert_eq!((*pattern, *shp), (TrafficPattern::BUFFERS_CONFIG, false));
        assert_eq!(
            s.reason,
            "no shipped table for hwsku Mellanox-SN3800-X (DEVICE_METADATA); platform x86_64-mlnx_msn3800-r0 is \
             Spectrum-2"
        );
        assert!(s.source_line().starts_with(
            "dynamic: Spectrum-2 parameters (sonic-buildimage platform/mellanox/asic_table.j2 \
             ASIC_TABLE|MELLANOX-SPECTRUM-2, gearbox 400 ns), formula of sonic-swss \
             cfgmgr/buffer_headroom_mellanox.lua (master)"
        ));
        // By the hwsku's model number alone.
        let s = select(&ModelRequest::default(), &[("hwsku", "Mellanox-SN5640-C999")]);
        assert!(matches!(s.model, HeadroomModel::Dynamic(a, ..) if a.asic == Asic::Spectrum5), "{s:?}");
        // The dynamic buffer model wins over a table.
        // The SN3800's gearbox follows its hwsku's platform.
        let request = ModelRequest { choice: ModelChoice::Dynamic, ..ModelRequest::default() };
        let s = select(&request, &[("hwsku", "ACS-MSN3800")]);
        assert!(matches!(s.model, HeadroomModel::Dynamic(a, ..) if a.gearbox_delay_ns == 400), "{s:?}");
        assert_eq!(s.reason, "--model dynamic; platform x86_64-mlnx_msn3800-r0 is Spectrum-2");
        let s = select(&ModelRequest::default(), &[("hwsku", "ACS-MSN4700"), ("buffer_model", "dynamic")]);
        assert!(matches!(s.model, HeadroomModel::Dynamic(a, ..) if a.asic == Asic::Spectrum3), "{s:?}");
        assert_eq!(
            s.reason,
            "DEVICE_METADATA buffer_model dynamic; platform x86_64-mlnx_msn4700-r0 is Spectrum-3"
        );
    }

    #[test]
    fn auto_falls_back_to_sonic_vs() {
        for fields in [&[][..], &[("hwsku", "Arista-VM")][..]] {
            let s = select(&ModelRequest::default(), fields);
            assert!(matches!(s.model, HeadroomModel::Dynamic(a, ..) if a.asic == Asic::Vs), "{s:?}");
            assert!(s.reason.starts_with("fallback: "), "{}", s.reason);
        }
        let s = ModelRequest::default().select(None).unwrap();
        assert_eq!(s.reason, "fallback: no hwsku and no known ASIC, so sonic-vs's ASIC_TABLE");
    }

    #[test]
    fn the_operator_overrides() {
        let request = ModelRequest { hwsku: Some("ACS-MSN3800".into()), ..ModelRequest::default() };
        let s = select(&request, &[("hwsku", "Force10-S6100")]);
        assert_eq!(s.reason, "hwsku ACS-MSN3800 (--hwsku) has a shipped table");
        let request = ModelRequest { asic: Some(Asic::Spectrum4), ..ModelRequest::default() };
        let s = select(&request, &[("hwsku", "Force10-S6100")]);
        assert!(matches!(s.model, HeadroomModel::Dynamic(a, ..) if a.asic == Asic::Spectrum4));
        let request = ModelRequest { lookup: Some("th".into()), ..ModelRequest::default() };
        assert_eq!(
            select(&request, &[]).model,
            HeadroomModel::Lookup(skus::shipped_table("th").unwrap().table())
        );
        let request = ModelRequest { choice: ModelChoice::Lookup, ..ModelRequest::default() };
        let error = request.select(None).unwrap_err();
        assert!(
            error.starts_with("--model lookup needs a table: no shipped table for hwsku (none)"),
            "{error}"
        );
        let request = ModelRequest { lookup: Some("/nonexistent/x.ini".into()), ..ModelRequest::default() };
        let error = request.select(None).unwrap_err();
        assert!(error.contains("neither a shipped table") && error.contains("th-6100-BALANCED"), "{error}");
        let request = ModelRequest { choice: ModelChoice::Ieee, ..ModelRequest::default() };
        assert_eq!(request.select(None).unwrap().model, HeadroomModel::Ieee);
    }

    #[test]
    fn the_configs_traffic_pattern_and_shared_headroom_pool_win() {
        let mut config = db(&[]);
        config
            .set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "mtu", "1500")
            .set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "small_packet_percentage", "100")
            .set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "4194112");
        let s = ModelRequest::default().select(Some(&config)).unwrap();
        let HeadroomModel::Dynamic(_, pattern, shp) = s.model else { panic!() };
        assert_eq!((pattern.lossless_mtu, pattern.small_packet_percentage, shp), (1500, 100, true));
        config.set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "mtu", "x");
        let error = ModelRequest::default().select(Some(&config)).unwrap_err();
        assert!(error.contains("LOSSLESS_TRAFFIC_PATTERN|AZURE|mtu"), "{error}");
    }

    #[test]
    fn a_report_prints_model_source_and_terms() {
        let request = ModelRequest { hwsku: Some("Force10-S6100".into()), ..ModelRequest::default() };
        let report = request.select(None).unwrap().report(&PortParams::new(100_000, 40, 9100)).unwrap();
        let text = report.to_string();
        assert!(text.starts_with("lookup: sonic-buildimage device/dell/"), "{text}");
        assert!(text.contains("\nwhy: hwsku Force10-S6100 (--hwsku) has a shipped table\n"), "{text}");
        assert!(text.contains("\nport: 100000 Mb/s, cable 40m, MTU 9100\n"), "{text}");
        assert!(text.contains("xoff        177,632 bytes"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["model"], "lookup");
        assert_eq!(json["xoff"], 177_632);
        assert_eq!(json["port"]["speed_mbps"], 100_000);
        assert!(json["source"].as_str().unwrap().contains("Force10-S6100/pg_profile_lookup.ini"));
        let error = request.select(None).unwrap().report(&PortParams::new(100_000, 7, 9100)).unwrap_err();
        assert!(
            error.starts_with("no row for speed 100000 and cable length 7m in sonic-buildimage device/dell/")
        );
        assert!(
            error.ends_with(
                "5m: 10000 25000 40000 50000 100000; 40m: 10000 25000 40000 50000 100000; \
                                 300m: 10000 25000 40000 50000 100000"
            ),
            "{error}"
        );
    }
}
