//! Commands on a switch, over gRPC: `apply`, `get`, `show`, `clear`, `pfcwd`, `fdb`, `hold`, `watch`.

use crate::*;
use anyhow::{Context, bail};
use lossless_controlplane::headroom::{self};
use lossless_controlplane::{diff, show, snapshot};
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
        Command::Show { what } => crate::shows::show_cmd(&mut client, endpoint, json, what).await,
        Command::Clear { what } => crate::shows::clear_cmd(&mut client, endpoint, what).await,
        Command::Pfcwd { cmd } => crate::pfcwd::pfcwd_cmd(&mut client, endpoint, json, cmd).await,
        Command::Watch { counters_ms, filter } => {
            crate::watch::watch(&mut client, json, counters_ms, &filter).await
        }
        Command::Hold { port, queue, release } => {
            client.set_hold(pb::SetHoldRequest { port, queue, hold: !release }).await.map_err(status)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Fdb { cmd } => fdb_cmd(&mut client, json, cmd).await,
        Command::Capture { ports, write, count, drops, snaplen } => {
            capture_cmd(
                &mut client,
                lossless_controlplane::capture::CaptureOptions { ports, drops, count, snaplen },
                write,
            )
            .await
        }
        Command::Mmuconfig { list: _ } => {
            crate::shows::show_cmd(&mut client, endpoint, json, Show::Mmu).await
        }
        Command::Demo
        | Command::Validate { .. }
        | Command::Import { .. }
        | Command::QosParams { .. }
        | Command::Headroom { .. }
        | Command::Lab { .. }
        | Command::Sim { .. }
        | Command::Score { .. }
        | Command::DeadlockCheck { .. }
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
        .get_watermarks(pb::GetWatermarksRequest { persistent, clear, clear_tables: vec![] })
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

pub(crate) async fn fdb_cmd(
    client: &mut SwitchClient<Channel>,
    json: bool,
    cmd: Fdb,
) -> anyhow::Result<ExitCode> {
    match cmd {
        Fdb::Show => {
            let entries = client.dump_fdb(pb::DumpFdbRequest {}).await.map_err(status)?.into_inner().entries;
            emit(json, show::mac(&entries), || show::mac_json(&entries));
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
/// `swctl capture`: to a file, or stdout; a summary on stderr.
async fn capture_cmd(
    client: &mut SwitchClient<Channel>,
    options: lossless_controlplane::capture::CaptureOptions,
    write: Option<std::path::PathBuf>,
) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let to_stdout = match &write {
        Some(path) => path.as_os_str() == "-",
        None => !std::io::stdout().is_terminal(),
    };
    if write.is_none() && !to_stdout {
        anyhow::bail!(
            "capture: give -w FILE.pcapng, or -w - to stream pcapng to stdout (e.g. | tshark -r -)"
        );
    }
    // SIGINT or SIGTERM ends the capture cleanly (the pcapng is flushed), as in every other process.
    let signals = lossless_dataplane::shutdown::Shutdown::install()
        .context("installing the SIGTERM/SIGINT handlers")?;
    let interrupted = async {
        signals.requested().await;
    };
    let (written, lost) = if to_stdout {
        lossless_controlplane::capture::capture(client, &options, std::io::stdout().lock(), interrupted)
            .await?
    } else {
        let path = write.expect("a file when not stdout");
        let file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        lossless_controlplane::capture::capture(client, &options, std::io::BufWriter::new(file), interrupted)
            .await?
    };
    let lost =
        if lost > 0 { format!(" ({lost} not delivered: the reader was behind)") } else { String::new() };
    eprintln!("{written} frame(s) captured{lost}");
    Ok(ExitCode::SUCCESS)
}
