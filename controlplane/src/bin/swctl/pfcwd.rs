//! `swctl pfcwd ...`: SONiC's `pfcwd` command (sonic-utilities `pfcwd/main.py`) over gRPC. Configuration
//! commands edit the running configuration's `PFC_WD` table and apply it at the same generation.

use crate::args::*;
use crate::online::{counters_since, edit_running, emit, status};
use anyhow::bail;
use lossless_controlplane::show;
use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::server::config_db_from_proto;
use lossless_proto::v1::{self as pb, switch_client::SwitchClient};
use std::process::ExitCode;
use tonic::transport::Channel;

/// pfcwd/main.py's defaults (`DEFAULT_DETECTION_TIME`, `DEFAULT_RESTORATION_TIME`, `DEFAULT_POLL_INTERVAL`,
/// `DEFAULT_PORT_NUM`): scaled up by one step per 32 ports.
const DEFAULT_DETECTION_MS: u32 = 200;
const DEFAULT_RESTORATION_MS: u32 = 200;
const DEFAULT_POLL_INTERVAL_MS: u32 = 200;
const DEFAULT_PORT_NUM: usize = 32;
const MAX_POLL_INTERVAL_MS: u32 = 1000;

fn all_ports(db: &ConfigDb) -> Vec<String> {
    db.tables.get("PORT").map(|t| t.keys().cloned().collect()).unwrap_or_default()
}

/// The ports with `pfc_enable` in `PORT_QOS_MAP` (whose keys may join several ports with commas).
fn lossless_ports(db: &ConfigDb) -> Vec<String> {
    let map = db.tables.get("PORT_QOS_MAP").into_iter().flatten();
    map.filter(|(_, f)| f.get("pfc_enable").is_some_and(|v| !v.is_empty()))
        .flat_map(|(k, _)| k.split(',').map(|p| p.trim().to_owned()).collect::<Vec<_>>())
        .collect()
}

/// The ports a PORTS argument names: none or `all` → every port; each item may join several with commas
/// (swctl's older form). A name the configuration does not have is an error.
fn named_ports(db: &ConfigDb, ports: &[String]) -> anyhow::Result<Vec<String>> {
    let every = all_ports(db);
    let names: Vec<String> =
        ports.iter().flat_map(|p| p.split(',')).filter(|p| !p.is_empty()).map(str::to_owned).collect();
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(every);
    }
    if let Some(bad) = names.iter().find(|n| !every.contains(n)) {
        bail!("Failed to run command, invalid options: {bad} is not a port of the running configuration");
    }
    Ok(names)
}

/// Sets `fields` on each port's `PFC_WD` entry, replacing it (pfcwd's overwrite), for the ports with PFC
/// enabled; the others are skipped with SONiC's warning.
fn configure(db: &mut ConfigDb, ports: &[String], fields: &[(&str, String)]) -> usize {
    let lossless = lossless_ports(db);
    let mut configured = 0;
    for port in ports {
        if !lossless.contains(port) {
            println!("SKIPPED: PFC is not enabled on port: {port}");
            continue;
        }
        // Keep the port's pfc_stat_history unless this command sets it (pfcwd/main.py does the same).
        let history = db
            .tables
            .get("PFC_WD")
            .and_then(|t| t.get(port))
            .and_then(|f| f.get("pfc_stat_history"))
            .cloned();
        if let Some(t) = db.tables.get_mut("PFC_WD") {
            t.remove(port);
        }
        for (field, value) in fields {
            db.set("PFC_WD", port, field, value.clone());
        }
        if let Some(h) = history.filter(|_| !fields.iter().any(|(f, _)| *f == "pfc_stat_history")) {
            db.set("PFC_WD", port, "pfc_stat_history", h);
        }
        configured += 1;
    }
    configured
}

pub(crate) async fn pfcwd_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    json: bool,
    cmd: Pfcwd,
) -> anyhow::Result<ExitCode> {
    match cmd {
        Pfcwd::Show { what: PfcwdShow::Config } => {
            let r = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
            let db = config_db_from_proto(r.config.unwrap_or_default());
            emit(json, show::pfcwd_config(&db), || show::pfcwd_config_json(&db));
            Ok(ExitCode::SUCCESS)
        }
        Pfcwd::Show { what: PfcwdShow::Stats { all, check_storm, queues } } => {
            let mut c = counters_since(client, endpoint, "pfcwd").await?;
            if !queues.is_empty() {
                // pfcwd show stats QUEUES...: the other queues are left out, of the table and of the storm check.
                for p in &mut c.ports {
                    for (i, w) in p.pfc_wd.iter_mut().enumerate() {
                        if !queues.contains(&format!("{}:{i}", p.name)) {
                            w.status.clear();
                        }
                    }
                }
            }
            emit(json, show::pfcwd_stats(&c, all), || show::pfcwd_stats_json(&c));
            Ok(if check_storm && show::pfcwd_any_stormed(&c) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Pfcwd::Start { action, restoration_time, pfc_stat_history, ports_then_detection_ms } => {
            let Some((last, ports)) = ports_then_detection_ms.split_last() else {
                bail!("pfcwd start: give the ports and then the detection time (ms)");
            };
            let detection_ms: u32 = match last.parse() {
                Ok(ms) if (100..=5000).contains(&ms) => ms,
                _ => bail!(
                    "pfcwd start: the detection time (the last argument) must be 100..=5000 ms, not {last:?}"
                ),
            };
            if let Some(r) = restoration_time.filter(|r| !(100..=60000).contains(r)) {
                bail!("pfcwd start: --restoration-time {r}: must be 100..=60000 ms");
            }
            let restoration_ms = restoration_time.unwrap_or_else(|| {
                println!(
                    "restoration time not defined; default to 2 times detection time: {} ms",
                    2 * detection_ms
                );
                2 * detection_ms
            });
            let ports = ports.to_vec();
            edit_running(client, |db| {
                let names = named_ports(db, &ports)?;
                let mut fields = vec![
                    ("detection_time", detection_ms.to_string()),
                    ("restoration_time", restoration_ms.to_string()),
                ];
                if let Some(a) = &action {
                    fields.push(("action", a.clone()));
                }
                if pfc_stat_history {
                    fields.push(("pfc_stat_history", "enable".into()));
                }
                configure(db, &names, &fields);
                Ok(())
            })
            .await
        }
        Pfcwd::Stop { ports } => {
            edit_running(client, |db| {
                let names = named_ports(db, &ports)?;
                if let Some(t) = db.tables.get_mut("PFC_WD") {
                    t.retain(|k, _| !names.contains(k));
                }
                Ok(())
            })
            .await
        }
        Pfcwd::StartDefault => {
            edit_running(client, |db| {
                let enabled = db
                    .tables
                    .get("DEVICE_METADATA")
                    .and_then(|t| t.get("localhost"))
                    .and_then(|f| f.get("default_pfcwd_status"))
                    .is_some_and(|v| v.eq_ignore_ascii_case("enable"));
                if !enabled {
                    // pfcwd/main.py returns silently; say why nothing changed.
                    eprintln!(
                        "DEVICE_METADATA|localhost|default_pfcwd_status is not enable: nothing started"
                    );
                    return Ok(());
                }
                let port_num = all_ports(db).len();
                let multiply =
                    u32::try_from(port_num.saturating_sub(1) / DEFAULT_PORT_NUM + 1).unwrap_or(1).max(1);
                // SONiC starts it on the ports with a DEVICE_NEIGHBOR (and backplane ports); a configuration
                // without that table means every port.
                let active: Vec<String> = match db.tables.get("DEVICE_NEIGHBOR") {
                    Some(t) if !t.is_empty() => t.keys().cloned().collect(),
                    _ => all_ports(db),
                };
                let fields = [
                    ("detection_time", (DEFAULT_DETECTION_MS * multiply).to_string()),
                    ("restoration_time", (DEFAULT_RESTORATION_MS * multiply).to_string()),
                    ("action", "drop".to_owned()),
                    ("pfc_stat_history", "disable".to_owned()),
                ];
                configure(db, &active, &fields);
                let poll = (DEFAULT_POLL_INTERVAL_MS * multiply).min(MAX_POLL_INTERVAL_MS);
                db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", poll.to_string());
                Ok(())
            })
            .await
        }
        Pfcwd::CounterPoll { state } => {
            edit_running(client, |db| {
                db.set("FLEX_COUNTER_TABLE", "PFCWD", "FLEX_COUNTER_STATUS", state);
                Ok(())
            })
            .await
        }
        Pfcwd::PfcStatHistory { state, ports } => {
            edit_running(client, |db| {
                for port in named_ports(db, &ports)? {
                    db.set("PFC_WD", &port, "pfc_stat_history", state.clone());
                }
                Ok(())
            })
            .await
        }
        Pfcwd::Interval { ms } => {
            edit_running(client, |db| {
                db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", ms.to_string());
                Ok(())
            })
            .await
        }
        Pfcwd::BigRedSwitch { state } => {
            edit_running(client, |db| {
                db.set("PFC_WD", "GLOBAL", "BIG_RED_SWITCH", state);
                Ok(())
            })
            .await
        }
        Pfcwd::DebugStorm { port, queue, state } => {
            let request = pb::SetDebugStormRequest { port, queue, enabled: state == "enable" };
            client.set_debug_storm(request).await.map_err(status)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
