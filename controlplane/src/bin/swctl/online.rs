//! Commands on a switch, over gRPC: `apply`, `get`, `show`, `clear`, `pfcwd`, `fdb`, `hold`, `watch`.

use crate::*;
use anyhow::bail;
use lossless_controlplane::headroom::{self};
use lossless_controlplane::{diff, show, snapshot};
use lossless_dataplane::clock;
use lossless_dataplane::model::config::{ConfigDb, compile};
use lossless_dataplane::server::{self, config_db_from_proto, config_db_to_proto};
use lossless_proto::v1::{self as pb, switch_client::SwitchClient};
use std::path::Path;
use std::process::ExitCode;
use tonic::transport::Channel;

pub(crate) async fn connect(endpoint: &str) -> anyhow::Result<SwitchClient<Channel>> {
    server::connect(endpoint)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the switch at {endpoint}: {e:#}"))
}

pub(crate) fn status(e: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("the switch refused the request: {}", lossless_dataplane::server::describe_status(&e))
}

pub(crate) async fn online(endpoint: &str, json: bool, command: Command) -> anyhow::Result<ExitCode> {
    let mut client = connect(endpoint).await?;
    match command {
        Command::Apply { file, dry_run, replace, headroom } => {
            apply(&mut client, &file, dry_run, replace, &headroom).await
        }
        Command::Get => {
            let r = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
            let db = config_db_from_proto(r.config.unwrap_or_default());
            if json {
                eprintln!("generation {}", r.generation);
                println!("{}", serde_json::to_string_pretty(&db)?);
            } else {
                println!("# generation {}", r.generation);
                print!("{}", serde_yaml::to_string(&db)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { what } => show_cmd(&mut client, endpoint, json, what).await,
        Command::Clear { what } => clear_cmd(&mut client, endpoint, what).await,
        Command::Pfcwd { cmd } => pfcwd_cmd(&mut client, endpoint, json, cmd).await,
        Command::Watch { counters_ms } => watch(&mut client, json, counters_ms).await,
        Command::Hold { port, queue, release } => {
            client.set_hold(pb::SetHoldRequest { port, queue, hold: !release }).await.map_err(status)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Fdb { cmd } => fdb_cmd(&mut client, json, cmd).await,
        Command::Demo
        | Command::Validate { .. }
        | Command::Import { .. }
        | Command::QosParams { .. }
        | Command::Headroom { .. }
        | Command::Lab { .. }
        | Command::Sim { .. }
        | Command::Topology { .. } => {
            unreachable!("handled offline")
        }
    }
}

pub(crate) async fn apply(
    client: &mut SwitchClient<Channel>,
    file: &Path,
    dry_run: bool,
    replace: bool,
    headroom: &HeadroomArgs,
) -> anyhow::Result<ExitCode> {
    let new = match read_config_with_headroom(file, headroom)? {
        Ok(db) => db,
        Err(errors) => {
            for err in &errors {
                println!("error: {err}");
            }
            println!(
                "{}: headroom could not be computed ({} error(s)); nothing pushed",
                file.display(),
                errors.len()
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    // Validate locally first: every error at once, without a round trip.
    if let Err(e) = compile(&new) {
        for err in &e.errors {
            println!("error: {err}");
        }
        println!("{}: invalid ({} error(s)); nothing pushed", file.display(), e.errors.len());
        return Ok(ExitCode::FAILURE);
    }
    for w in headroom::check_headroom(&new, &headroom.model(Some(&new))?) {
        println!("warning: {w}");
    }
    let running = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
    let old = config_db_from_proto(running.config.unwrap_or_default());
    let changes = diff::diff(&old, &new);
    for c in &changes {
        println!("{c}");
    }
    if changes.is_empty() {
        println!("no changes");
    }
    let reply = client
        .apply(pb::ApplyRequest {
            config: Some(config_db_to_proto(&new)),
            dry_run,
            expected_generation: running.generation,
            replace,
        })
        .await
        .map_err(status)?
        .into_inner();
    for issue in &reply.issues {
        let loc = issue.location.clone().unwrap_or_default();
        let kind =
            if issue.severity == pb::config_issue::Severity::Error as i32 { "error" } else { "warning" };
        let location = if loc.field.is_empty() {
            format!("{}|{}", loc.table, loc.key)
        } else {
            format!("{}|{}|{}", loc.table, loc.key, loc.field)
        };
        println!("{kind}: {location}: {}", issue.message);
    }
    match (reply.accepted, dry_run) {
        (true, true) => {
            println!("dry run: {} change(s) would apply on generation {}", changes.len(), reply.generation);
            Ok(ExitCode::SUCCESS)
        }
        (true, false) => {
            println!("applied: generation {}", reply.generation);
            Ok(ExitCode::SUCCESS)
        }
        (false, _) => {
            println!("refused: the running configuration (generation {}) is unchanged", reply.generation);
            Ok(ExitCode::FAILURE)
        }
    }
}

pub(crate) async fn counters(client: &mut SwitchClient<Channel>) -> anyhow::Result<pb::GetCountersResponse> {
    Ok(client.get_counters(pb::GetCountersRequest {}).await.map_err(status)?.into_inner())
}

/// Counters minus the `clear` snapshot of that kind, if any.
pub(crate) async fn counters_since(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    kind: &str,
) -> anyhow::Result<pb::GetCountersResponse> {
    let now = counters(client).await?;
    Ok(match snapshot::load(endpoint, kind) {
        Some(base) => show::subtract_counters(&now, &base),
        None => now,
    })
}

pub(crate) async fn watermarks(
    client: &mut SwitchClient<Channel>,
    persistent: bool,
    clear: bool,
) -> anyhow::Result<pb::GetWatermarksResponse> {
    Ok(client
        .get_watermarks(pb::GetWatermarksRequest { persistent, clear })
        .await
        .map_err(status)?
        .into_inner())
}

/// queuestat's answer to an unknown port.
pub(crate) fn check_port(c: &pb::GetCountersResponse, port: Option<&str>) -> anyhow::Result<()> {
    match port {
        Some(p) if !c.ports.iter().any(|x| x.name == p) => bail!("Port doesn't exist! {p}"),
        _ => Ok(()),
    }
}

pub(crate) fn emit(json: bool, table: String, value: impl FnOnce() -> serde_json::Value) {
    if json {
        println!("{}", serde_json::to_string_pretty(&value()).unwrap_or_default());
    } else {
        print!("{table}");
        if !table.ends_with('\n') {
            println!();
        }
    }
}

pub(crate) async fn show_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    json: bool,
    what: Show,
) -> anyhow::Result<ExitCode> {
    match what {
        Show::Interfaces { what: InterfacesWhat::Counters { period } } => {
            // Rates need two samples: take one, wait the period, take another (as portstat -p does).
            let first = if period > 0 {
                let first = counters_since(client, endpoint, "counters").await?;
                tokio::time::sleep(std::time::Duration::from_secs(period)).await;
                Some(first)
            } else {
                None
            };
            let c = counters_since(client, endpoint, "counters").await?;
            emit(json, show::interfaces_counters(&c, first.as_ref()), || {
                show::interfaces_counters_json(&c, first.as_ref())
            });
        }
        Show::Interfaces { what: InterfacesWhat::Status } => {
            let c = client.get_counters(pb::GetCountersRequest {}).await.map_err(status)?.into_inner();
            let running = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
            let db = config_db_from_proto(running.config.unwrap_or_default());
            emit(json, show::interfaces_status(&c, &db), || show::interfaces_status_json(&c, &db));
        }
        Show::Queue { what: QueueWhat::Counters { port } } => {
            let c = counters_since(client, endpoint, "queue").await?;
            check_port(&c, port.as_deref())?;
            emit(json, show::queue_counters(&c, port.as_deref()), || {
                show::queue_counters_json(&c, port.as_deref())
            });
        }
        Show::Queue { what: QueueWhat::Wredcounters { port } } => {
            let c = counters_since(client, endpoint, "wred").await?;
            check_port(&c, port.as_deref())?;
            emit(json, show::queue_wredcounters(&c, port.as_deref()), || {
                show::queue_wredcounters_json(&c, port.as_deref())
            });
        }
        Show::Queue { what: QueueWhat::Watermark { which: QueueWatermark::Unicast } } => {
            let w = watermarks(client, false, false).await?;
            emit(json, show::queue_watermark_unicast(&w), || show::watermarks_json(&w));
        }
        Show::Pfc { what: PfcWhat::Counters { history } } => {
            let c = counters_since(client, endpoint, "pfc").await?;
            let table = if history { show::pfc_counters_history(&c) } else { show::pfc_counters(&c) };
            emit(json, table, || show::pfc_counters_json(&c));
        }
        Show::PriorityGroup { what: PgWhat::Watermark { kind } } => {
            let w = watermarks(client, false, false).await?;
            let kind = match kind {
                PgKind::Shared => show::PgWatermarkKind::Shared,
                PgKind::Headroom => show::PgWatermarkKind::Headroom,
            };
            emit(json, show::pg_watermark(&w, kind), || show::watermarks_json(&w));
        }
        Show::PriorityGroup { what: PgWhat::Drop { what: DropWhat::Counters } } => {
            let c = counters_since(client, endpoint, "pg-drop").await?;
            emit(json, show::pg_drop_counters(&c), || show::pg_drop_counters_json(&c));
        }
        Show::BufferPool { what: WatermarkOnly::Watermark } => {
            let w = watermarks(client, false, false).await?;
            emit(json, show::buffer_pool_watermark(&w), || show::watermarks_json(&w));
        }
        Show::HeadroomPool { what: WatermarkOnly::Watermark } => {
            let w = watermarks(client, false, false).await?;
            emit(json, show::headroom_pool_watermark(&w), || show::watermarks_json(&w));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn clear_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    what: Clear,
) -> anyhow::Result<ExitCode> {
    let kinds: &[&str] = match what {
        Clear::Counters => &["counters"],
        Clear::Queue { what: ClearQueue::Counters } => &["queue"],
        Clear::Queue { what: ClearQueue::Wredcounters } => &["wred"],
        Clear::Pfc => &["pfc"],
        Clear::PriorityGroup { what: ClearPg::Drop } => &["pg-drop"],
        Clear::Pfcwd => &["pfcwd"],
        Clear::Queue { what: ClearQueue::Watermark }
        | Clear::PriorityGroup { what: ClearPg::Watermark }
        | Clear::BufferPool => {
            // Watermarks live in the switch: its user copy is read-and-cleared.
            watermarks(client, false, true).await?;
            println!("Cleared watermarks");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let c = counters(client).await?;
    for kind in kinds {
        snapshot::save(endpoint, kind, &c)?;
    }
    println!("Cleared counters");
    Ok(ExitCode::SUCCESS)
}

/// Reads the running config, lets `edit` change it, and applies it at the same generation.
pub(crate) async fn edit_running(
    client: &mut SwitchClient<Channel>,
    edit: impl FnOnce(&mut ConfigDb) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    let running = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
    let mut db = config_db_from_proto(running.config.unwrap_or_default());
    edit(&mut db)?;
    let reply = client
        .apply(pb::ApplyRequest {
            config: Some(config_db_to_proto(&db)),
            dry_run: false,
            expected_generation: running.generation,
            replace: false,
        })
        .await
        .map_err(status)?
        .into_inner();
    if reply.accepted {
        Ok(ExitCode::SUCCESS)
    } else {
        for issue in &reply.issues {
            let loc = issue.location.clone().unwrap_or_default();
            println!("error: {}|{}|{}: {}", loc.table, loc.key, loc.field, issue.message);
        }
        Ok(ExitCode::FAILURE)
    }
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
        Pfcwd::Show { what: PfcwdShow::Stats { all, check_storm } } => {
            let c = counters_since(client, endpoint, "pfcwd").await?;
            emit(json, show::pfcwd_stats(&c, all), || show::pfcwd_stats_json(&c));
            Ok(if check_storm && show::pfcwd_any_stormed(&c) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Pfcwd::Start { action, restoration_time, ports, detection_time } => {
            edit_running(client, |db| {
                let names: Vec<String> = if ports == "all" {
                    db.tables.get("PORT").map(|t| t.keys().cloned().collect()).unwrap_or_default()
                } else {
                    ports.split(',').map(str::to_owned).collect()
                };
                if names.is_empty() {
                    bail!("no ports to start the watchdog on");
                }
                for p in names {
                    db.set("PFC_WD", &p, "action", action.clone());
                    db.set("PFC_WD", &p, "detection_time", detection_time.to_string());
                    if let Some(r) = restoration_time {
                        db.set("PFC_WD", &p, "restoration_time", r.to_string());
                    }
                }
                Ok(())
            })
            .await
        }
        Pfcwd::Stop => {
            edit_running(client, |db| {
                if let Some(t) = db.tables.get_mut("PFC_WD") {
                    t.retain(|k, _| k == "GLOBAL");
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

pub(crate) async fn fdb_cmd(
    client: &mut SwitchClient<Channel>,
    json: bool,
    cmd: Fdb,
) -> anyhow::Result<ExitCode> {
    match cmd {
        Fdb::Show => {
            let entries = client.dump_fdb(pb::DumpFdbRequest {}).await.map_err(status)?.into_inner().entries;
            if json {
                let rows: Vec<serde_json::Value> = entries
                    .iter()
                    .map(|e| {
                        let kind = if e.is_static { "Static" } else { "Dynamic" };
                        serde_json::json!({"Vlan": e.vlan, "MacAddress": e.mac, "Port": e.port, "Type": kind})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                println!("{:>5}  {:>6}  {:<17}  {:<12}  Type", "No.", "Vlan", "MacAddress", "Port");
                println!("-----  ------  -----------------  ------------  -------");
                for (i, e) in entries.iter().enumerate() {
                    let kind = if e.is_static { "Static" } else { "Dynamic" };
                    println!("{:>5}  {:>6}  {:<17}  {:<12}  {kind}", i + 1, e.vlan, e.mac, e.port);
                }
                println!("Total number of entries {}", entries.len());
            }
        }
        Fdb::Flush { vlan, port } => {
            let request = pb::FlushFdbRequest { vlan, port };
            let flushed = client.flush_fdb(request).await.map_err(status)?.into_inner().flushed;
            if json {
                println!("{}", serde_json::json!({ "flushed": flushed }));
            } else {
                println!("Flushed {flushed} FDB entries");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn watch(
    client: &mut SwitchClient<Channel>,
    json: bool,
    counters_ms: u32,
) -> anyhow::Result<ExitCode> {
    let mut stream = client
        .subscribe(pb::SubscribeRequest { counters_interval_ms: counters_ms, events: true })
        .await
        .map_err(status)?
        .into_inner();
    while let Some(item) = stream.message().await.map_err(status)? {
        match item.item {
            Some(pb::subscribe_response::Item::Event(e)) => {
                // A switchd older than the wall_time field sends 0: no wall-clock time to show.
                let wall = (e.wall_time_unix_ns > 0).then(|| clock::format_unix_ns(e.wall_time_unix_ns));
                if json {
                    let wall = wall.as_ref().map_or_else(|| "null".to_owned(), |w| format!("{w:?}"));
                    println!(
                        "{{\"timestamp_ns\":{},\"kind\":{:?},\"message\":{:?},\"port\":{:?},\"index\":{},\
                         \"wall_time_unix_ns\":{},\"wall_time\":{wall}}}",
                        e.timestamp_ns, e.kind, e.message, e.port, e.index, e.wall_time_unix_ns
                    );
                } else {
                    let wall = wall.unwrap_or_default();
                    println!("{wall:<27} {:>14.6} {:<20} {}", e.timestamp_ns as f64 / 1e9, e.kind, e.message);
                }
            }
            Some(pb::subscribe_response::Item::Counters(c)) => {
                let (rx, tx, drp): (u64, u64, u64) = c
                    .ports
                    .iter()
                    .fold((0, 0, 0), |(a, b, d), p| (a + p.rx_ok, b + p.tx_ok, d + p.rx_drp + p.tx_drp));
                println!(
                    "{:<27} {:>14.6} counters             rx_ok {rx} tx_ok {tx} drops {drp}",
                    "",
                    c.timestamp_ns as f64 / 1e9
                );
            }
            None => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}
