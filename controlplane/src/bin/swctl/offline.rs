//! Commands on files, without a switch: `validate`, `headroom`, and the headroom options they share.

use anyhow::{Context, bail};
use clap::ValueEnum;
use lossless_controlplane::headroom::{
    self, Asic, FormulaOptions, HeadroomModel, ModelChoice, ModelRequest, PortParams, Selection,
    TrafficPattern,
};
use lossless_dataplane::model::config::{ConfigDb, compile};
use std::path::Path;
use std::process::ExitCode;

/// How headroom is computed (`swctl headroom`, and `NULL` BUFFER_PG profiles in validate/apply).
#[derive(clap::Args, Clone)]
pub(crate) struct HeadroomArgs {
    /// auto: the shipped lookup table of the hwsku (DEVICE_METADATA or --hwsku) unless the buffer model is
    /// dynamic, else the dynamic formula with the ASIC of the platform or hwsku, else with sonic-vs's;
    /// lookup (a pg_profile_lookup.ini); dynamic (SONiC's formula); ieee (worst case).
    #[arg(long = "model", value_enum, default_value_t = ModelKind::Auto)]
    model: ModelKind,
    /// The SKU, instead of DEVICE_METADATA|localhost|hwsku (e.g. Force10-S6100, ACS-MSN3800).
    #[arg(long)]
    hwsku: Option<String>,
    /// The platform, instead of DEVICE_METADATA|localhost|platform (e.g. x86_64-mlnx_msn3800-r0).
    #[arg(long)]
    platform: Option<String>,
    /// A lookup table: a shipped one (th, sn2700, th-6100-BALANCED, or a hwsku such as Force10-S6100) or a
    /// pg_profile_lookup.ini file. With --model auto, giving one chooses it.
    #[arg(long)]
    lookup: Option<String>,
    /// The dynamic formula's ASIC_TABLE: vs, spectrum1 … spectrum6 (default: the platform's or hwsku's,
    /// else vs). With --model auto, giving one chooses the formula.
    #[arg(long)]
    asic: Option<String>,
    /// The formula's revision: master (sonic-swss today), swss-3235, swss-1930, swss-1781, mellanox-tables.
    #[arg(long, default_value = "master")]
    formula: String,
    /// Gearbox delay, ns (PERIPHERAL_TABLE gearbox_delay; default: the platform's, 400 on the SN3800).
    #[arg(long)]
    gearbox_delay: Option<u32>,
    /// Largest lossless packet, bytes (LOSSLESS_TRAFFIC_PATTERN mtu; a config's own value wins).
    #[arg(long, default_value_t = 1024)]
    lossless_mtu: u32,
    /// Small-packet percentage (LOSSLESS_TRAFFIC_PATTERN; a config's own value wins); 50 as
    /// buffers_config.j2 writes it.
    #[arg(long, default_value_t = 50)]
    small_packet_percentage: u32,
    /// Shared headroom pool on: size = xon (xoff comes from the pool).
    #[arg(long)]
    shp: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ModelKind {
    Auto,
    Lookup,
    Dynamic,
    Ieee,
}

impl HeadroomArgs {
    pub(crate) fn request(&self) -> anyhow::Result<ModelRequest> {
        let asic = match &self.asic {
            None => None,
            Some(name) => Some(Asic::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Asic::ALL.iter().map(|a| a.cli_name()).collect();
                anyhow::anyhow!("--asic {name}: use one of {}", names.join(", "))
            })?),
        };
        let formula = FormulaOptions::from_name(&self.formula).ok_or_else(|| {
            let names: Vec<&str> = FormulaOptions::NAMED.iter().map(|(n, _)| *n).collect();
            anyhow::anyhow!("--formula {}: use one of {}", self.formula, names.join(", "))
        })?;
        if self.small_packet_percentage > 100 {
            bail!("--small-packet-percentage {}: a percentage is 0..=100", self.small_packet_percentage);
        }
        Ok(ModelRequest {
            choice: match self.model {
                ModelKind::Auto => ModelChoice::Auto,
                ModelKind::Lookup => ModelChoice::Lookup,
                ModelKind::Dynamic => ModelChoice::Dynamic,
                ModelKind::Ieee => ModelChoice::Ieee,
            },
            hwsku: self.hwsku.clone(),
            platform: self.platform.clone(),
            lookup: self.lookup.clone(),
            asic,
            formula,
            gearbox_delay_ns: self.gearbox_delay,
            pattern: TrafficPattern {
                lossless_mtu: self.lossless_mtu,
                small_packet_percentage: self.small_packet_percentage,
            },
            shp: self.shp,
        })
    }

    /// The model and why, for a configuration (or none).
    pub(crate) fn selection(&self, db: Option<&ConfigDb>) -> anyhow::Result<Selection> {
        self.request()?.select(db).map_err(anyhow::Error::msg)
    }

    pub(crate) fn model(&self, db: Option<&ConfigDb>) -> anyhow::Result<HeadroomModel> {
        Ok(self.selection(db)?.model)
    }
}

/// `swctl headroom`: one port's headroom, the model and source it came from, as text or JSON.
pub(crate) fn headroom_cmd(
    speed: &str,
    cable: &str,
    port: (u32, u32),
    config: Option<&Path>,
    args: &HeadroomArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (mtu, lanes) = port;
    let speed_mbps = headroom::parse_speed_mbps(speed).map_err(anyhow::Error::msg)?;
    let cable_m = headroom::parse_cable_arg(cable).map_err(anyhow::Error::msg)?;
    let db = config.map(read_config).transpose()?;
    let selection = args.selection(db.as_ref())?;
    let port = PortParams::new(speed_mbps, cable_m, mtu).with_lanes(lanes);
    let report = selection.report(&port).map_err(anyhow::Error::msg)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a configuration and fills `NULL` BUFFER_PG profiles with computed headroom, as SONiC's buffer
/// manager does (`pg_lossless_<speed>_<cable>_profile`).
pub(crate) fn read_config_with_headroom(
    path: &Path,
    headroom: &HeadroomArgs,
) -> anyhow::Result<Result<ConfigDb, Vec<lossless_dataplane::model::config::ConfigIssue>>> {
    let mut db = read_config(path)?;
    let model = headroom.model(Some(&db))?;
    Ok(headroom::generate_lossless_profiles(&mut db, &model).map(|_| db))
}

/// Reads a YAML or JSON configuration file, with the file and the parser's line/column in the error.
pub(crate) fn read_config(path: &Path) -> anyhow::Result<ConfigDb> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    ConfigDb::from_yaml_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub(crate) fn validate(file: &Path, headroom: &HeadroomArgs, json: bool) -> anyhow::Result<ExitCode> {
    let (errors, warnings) = match read_config_with_headroom(file, headroom)? {
        Err(errors) => (errors, Vec::new()),
        Ok(db) => match compile(&db) {
            Ok(c) => {
                let mut warnings = c.warnings;
                warnings.extend(headroom::check_headroom(&db, &headroom.model(Some(&db))?));
                (Vec::new(), warnings)
            }
            Err(e) => (e.errors, e.warnings),
        },
    };
    if json {
        let report = lossless_controlplane::validate::ValidateReport::new(&errors, &warnings);
        println!("{}", serde_json::to_string(&report)?);
    } else {
        for e in &errors {
            println!("error: {e}");
        }
        for w in &warnings {
            println!("warning: {w}");
        }
        if errors.is_empty() {
            println!("{}: valid ({} warning(s))", file.display(), warnings.len());
        } else {
            println!(
                "{}: invalid ({} error(s), {} warning(s))",
                file.display(),
                errors.len(),
                warnings.len()
            );
        }
    }
    Ok(if errors.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
