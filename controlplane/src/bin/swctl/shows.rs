//! `swctl show ...` and `swctl clear ...`: SONiC's show commands and sonic-clear names over gRPC.

use crate::args::*;
use crate::online::{check_port, counters, counters_since, emit, status, watermarks};
use anyhow::bail;
use lossless_controlplane::{show, snapshot};
use lossless_dataplane::model::config::{ConfigDb, compile};
use lossless_dataplane::server::config_db_from_proto;
use lossless_proto::v1::{self as pb, switch_client::SwitchClient};
use std::process::ExitCode;
use tonic::transport::Channel;

async fn running(client: &mut SwitchClient<Channel>) -> anyhow::Result<ConfigDb> {
    let r = client.get(pb::GetRequest {}).await.map_err(status)?.into_inner();
    Ok(config_db_from_proto(r.config.unwrap_or_default()))
}

/// Two samples `period_s` apart (as portstat -p takes them); the first is `None` for a period of 0.
async fn two_samples(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    period_s: u64,
) -> anyhow::Result<(Option<pb::GetCountersResponse>, pb::GetCountersResponse)> {
    let first = if period_s > 0 {
        let first = counters_since(client, endpoint, "counters").await?;
        tokio::time::sleep(std::time::Duration::from_secs(period_s)).await;
        Some(first)
    } else {
        None
    };
    Ok((first, counters_since(client, endpoint, "counters").await?))
}

fn pg_kind(kind: PgKind) -> show::PgWatermarkKind {
    match kind {
        PgKind::Shared => show::PgWatermarkKind::Shared,
        PgKind::Headroom => show::PgWatermarkKind::Headroom,
    }
}

fn queue_kind(which: QueueWatermark) -> show::QueueWatermarkKind {
    match which {
        QueueWatermark::Unicast => show::QueueWatermarkKind::Unicast,
        QueueWatermark::Multicast => show::QueueWatermarkKind::Multicast,
        QueueWatermark::All => show::QueueWatermarkKind::All,
    }
}

pub(crate) async fn show_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    json: bool,
    what: Show,
) -> anyhow::Result<ExitCode> {
    match what {
        Show::Interfaces { what: InterfacesWhat::Counters { period, interface, view: None } } => {
            let (mut first, mut c) = two_samples(client, endpoint, period).await?;
            if let Some(name) = interface.as_deref() {
                check_port(&c, Some(name))?;
                c.ports.retain(|p| p.name == name);
                if let Some(f) = first.as_mut() {
                    f.ports.retain(|p| p.name == name);
                }
            }
            emit(json, show::interfaces_counters(&c, first.as_ref()), || {
                show::interfaces_counters_json(&c, first.as_ref())
            });
        }
        Show::Interfaces { what: InterfacesWhat::Counters { view: Some(CountersView::Errors), .. } } => {
            let c = counters_since(client, endpoint, "counters").await?;
            emit(json, show::interfaces_counters_errors(&c), || show::interfaces_counters_errors_json(&c));
        }
        Show::Interfaces {
            what: InterfacesWhat::Counters { view: Some(CountersView::Rates { period }), .. },
        } => {
            let (first, c) = two_samples(client, endpoint, period).await?;
            emit(json, show::interfaces_counters_rates(&c, first.as_ref()), || {
                show::interfaces_counters_rates_json(&c, first.as_ref())
            });
        }
        Show::Interfaces {
            what: InterfacesWhat::Counters { view: Some(CountersView::Detailed { port }), .. },
        } => {
            let c = counters_since(client, endpoint, "counters").await?;
            let cleared = snapshot::modified(endpoint, "counters");
            let Some(text) = show::interfaces_counters_detailed(&c, &port, cleared.as_deref()) else {
                bail!("Interface {port} doesn't exist");
            };
            emit(json, text, || show::interfaces_counters_detailed_json(&c, &port).unwrap_or_default());
        }
        Show::Interfaces { what: InterfacesWhat::Status { interfacename } } => {
            let named = match interfacename.as_deref().map(show::parse_interface_filter) {
                None => Vec::new(),
                Some(Ok(named)) => named,
                Some(Err(e)) => bail!("{e}"),
            };
            let c = counters(client).await?;
            if let Some((name, _)) =
                named.iter().find(|(n, written)| *written && !c.ports.iter().any(|p| p.name == *n))
            {
                bail!("Invalid interface name {name}");
            }
            let ports: Vec<String> = named.into_iter().map(|(name, _)| name).collect();
            let db = running(client).await?;
            emit(json, show::interfaces_status(&c, &db, &ports), || {
                show::interfaces_status_json(&c, &db, &ports)
            });
        }
        Show::Queue { what: QueueWhat::Counters { port, nonzero } } => {
            let c = counters_since(client, endpoint, "queue").await?;
            check_port(&c, port.as_deref())?;
            let filter = show::QueueFilter { port: port.as_deref(), nonzero };
            emit(json, show::queue_counters_filtered(&c, filter), || show::queue_counters_json(&c, filter));
        }
        Show::Queue { what: QueueWhat::Wredcounters { port, nonzero } } => {
            let c = counters_since(client, endpoint, "wred").await?;
            check_port(&c, port.as_deref())?;
            let filter = show::QueueFilter { port: port.as_deref(), nonzero };
            emit(json, show::queue_wredcounters_filtered(&c, filter), || {
                show::queue_wredcounters_json(&c, filter)
            });
        }
        Show::Queue { what: QueueWhat::Watermark { which } } => {
            let w = watermarks(client, false, false).await?;
            let kind = queue_kind(which);
            emit(json, show::queue_watermark(&w, kind), || show::queue_watermark_json(&w, kind));
        }
        Show::Queue { what: QueueWhat::PersistentWatermark { which } } => {
            let w = watermarks(client, true, false).await?;
            let kind = queue_kind(which);
            emit(json, show::queue_watermark(&w, kind), || show::queue_watermark_json(&w, kind));
        }
        Show::Pfc { what: PfcWhat::Counters { history } } => {
            let c = counters_since(client, endpoint, "pfc").await?;
            if history {
                emit(json, show::pfc_counters_history(&c), || show::pfc_counters_history_json(&c));
            } else {
                emit(json, show::pfc_counters(&c), || show::pfc_counters_json(&c));
            }
        }
        Show::Pfc { what: PfcWhat::Priority { port } } => {
            let db = running(client).await?;
            emit(json, show::pfc_priority(&db, port.as_deref()), || {
                show::pfc_priority_json(&db, port.as_deref())
            });
        }
        Show::Pfc { what: PfcWhat::Asymmetric { port } } => {
            let db = running(client).await?;
            emit(json, show::pfc_asymmetric(&db, port.as_deref()), || {
                show::pfc_asymmetric_json(&db, port.as_deref())
            });
        }
        Show::PriorityGroup { what: PgWhat::Watermark { kind } } => {
            let w = watermarks(client, false, false).await?;
            emit(json, show::pg_watermark(&w, pg_kind(kind)), || show::pg_watermark_json(&w, pg_kind(kind)));
        }
        Show::PriorityGroup { what: PgWhat::PersistentWatermark { kind } } => {
            let w = watermarks(client, true, false).await?;
            emit(json, show::pg_watermark(&w, pg_kind(kind)), || show::pg_watermark_json(&w, pg_kind(kind)));
        }
        Show::PriorityGroup { what: PgWhat::Drop { what: DropWhat::Counters } } => {
            let c = counters_since(client, endpoint, "pg-drop").await?;
            emit(json, show::pg_drop_counters(&c), || show::pg_drop_counters_json(&c));
        }
        Show::BufferPool { what } => {
            let w = watermarks(client, matches!(what, WatermarkOnly::PersistentWatermark), false).await?;
            emit(json, show::buffer_pool_watermark(&w), || show::buffer_pool_watermark_json(&w));
        }
        Show::HeadroomPool { what } => {
            let w = watermarks(client, matches!(what, WatermarkOnly::PersistentWatermark), false).await?;
            emit(json, show::headroom_pool_watermark(&w), || show::headroom_pool_watermark_json(&w));
        }
        Show::Dropcounters { what: DropcountersWhat::Counts } => {
            let c = counters_since(client, endpoint, "drops").await?;
            emit(json, show::dropcounters_counts(&c), || show::dropcounters_counts_json(&c));
        }
        Show::Arp { ref ipaddress, ref iface } | Show::Ndp { ref ipaddress, ref iface } => {
            let v6 = matches!(what, Show::Ndp { .. });
            let neighbors = client
                .dump_neighbors(pb::DumpNeighborsRequest {})
                .await
                .map_err(status)?
                .into_inner()
                .entries;
            let neighbors = show::filter_neighbors(&neighbors, ipaddress.as_deref(), iface.as_deref());
            let fdb = client.dump_fdb(pb::DumpFdbRequest {}).await.map_err(status)?.into_inner().entries;
            if v6 {
                emit(json, show::ndp(&neighbors, &fdb), || show::ndp_json(&neighbors, &fdb));
            } else {
                emit(json, show::arp(&neighbors, &fdb), || show::arp_json(&neighbors, &fdb));
            }
        }
        Show::Mac { vlan, port, address, kind, count } => {
            if let Some(a) = address.as_deref().filter(|a| !is_mac(a)) {
                bail!("Invalid mac address {a}");
            }
            let fdb = client.dump_fdb(pb::DumpFdbRequest {}).await.map_err(status)?.into_inner().entries;
            if let Some(p) = port.as_deref() {
                let c = counters(client).await?;
                if !c.ports.iter().any(|x| x.name == p) {
                    bail!("Invalid port {p}");
                }
            }
            let is_static = kind.map(|k| k.eq_ignore_ascii_case("static"));
            let fdb = show::filter_fdb(&fdb, &show::MacQuery { vlan, port, address, is_static });
            if count {
                let n = fdb.len();
                emit(json, format!("Total number of entries {n}\n"), || serde_json::json!({ "count": n }));
            } else {
                emit(json, show::mac(&fdb), || show::mac_json(&fdb));
            }
        }
        Show::Vlan { what: VlanWhat::Brief } => {
            let db = running(client).await?;
            emit(json, show::vlan_brief(&db), || show::vlan_brief_json(&db));
        }
        Show::Ip { what: RouteWhat::Route } | Show::Ipv6 { what: RouteWhat::Route } => {
            let v6 = matches!(what, Show::Ipv6 { .. });
            let db = running(client).await?;
            // The switch runs only a configuration that compiles; compiling it here gives the routes.
            let config = compile(&db).map_err(|e| anyhow::anyhow!("the running configuration: {e}"))?.config;
            emit(json, show::ip_route(&config, v6), || show::ip_route_json(&config, v6));
        }
        Show::Buffer { what: BufferWhat::Configuration } | Show::Mmu => {
            let db = running(client).await?;
            emit(json, show::buffer_configuration(&db), || show::buffer_configuration_json(&db));
        }
        Show::Buffer { what: BufferWhat::Information } => {
            let db = running(client).await?;
            let config = compile(&db).map_err(|e| anyhow::anyhow!("the running configuration: {e}"))?.config;
            emit(json, show::buffer_information(&config), || show::buffer_information_json(&config));
        }
        Show::Runningconfiguration { what } => {
            let db = running(client).await?;
            let text = match what {
                RunningWhat::All => Ok(show::running_all(&db)),
                RunningWhat::Ports { portname } => show::running_table(&db, "PORT", portname.as_deref()),
                RunningWhat::Interfaces { interfacename } => {
                    show::running_table(&db, "INTERFACE", interfacename.as_deref())
                }
            };
            print!("{}", text.map_err(anyhow::Error::msg)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Clears the watermark `tables` of one copy (user or persistent) in the switch.
async fn clear_watermark(
    client: &mut SwitchClient<Channel>,
    persistent: bool,
    tables: &[pb::WatermarkTable],
) -> anyhow::Result<ExitCode> {
    if tables.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let clear_tables = tables.iter().map(|t| *t as i32).collect();
    client
        .get_watermarks(pb::GetWatermarksRequest { persistent, clear: true, clear_tables })
        .await
        .map_err(status)?;
    println!("Cleared watermarks");
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn clear_cmd(
    client: &mut SwitchClient<Channel>,
    endpoint: &str,
    what: Clear,
) -> anyhow::Result<ExitCode> {
    use pb::WatermarkTable as T;
    // Without a kind, `sonic-clear priority-group watermark` means both PG tables.
    let pg_tables = |kind: Option<PgKind>| -> &'static [T] {
        match kind {
            None => &[T::PgShared, T::PgHeadroom],
            Some(PgKind::Shared) => &[T::PgShared],
            Some(PgKind::Headroom) => &[T::PgHeadroom],
        }
    };
    // The model's queues are all unicast: `multicast` names no table (nothing to clear).
    let queue_tables = |which: Option<QueueWatermark>| -> &'static [T] {
        match which {
            Some(QueueWatermark::Multicast) => &[],
            None | Some(QueueWatermark::Unicast | QueueWatermark::All) => &[T::QueueUnicast],
        }
    };
    let kinds: &[&str] = match what {
        Clear::Counters => &["counters"],
        Clear::Queue { what: ClearQueue::Counters } | Clear::Queuecounters => &["queue"],
        Clear::Queue { what: ClearQueue::Wredcounters } => &["wred"],
        Clear::Pfc | Clear::Pfccounters => &["pfc"],
        Clear::PriorityGroup { what: ClearPg::Drop { .. } } => &["pg-drop"],
        Clear::Pfcwd => &["pfcwd"],
        Clear::Dropcounters => &["drops"],
        Clear::Queue { what: ClearQueue::Watermark { which } } => {
            return clear_watermark(client, false, queue_tables(which)).await;
        }
        Clear::Queue { what: ClearQueue::PersistentWatermark { which } } => {
            return clear_watermark(client, true, queue_tables(which)).await;
        }
        Clear::PriorityGroup { what: ClearPg::Watermark { kind } } => {
            return clear_watermark(client, false, pg_tables(kind)).await;
        }
        Clear::PriorityGroup { what: ClearPg::PersistentWatermark { kind } } => {
            return clear_watermark(client, true, pg_tables(kind)).await;
        }
        Clear::BufferPool { what } => {
            let persistent = matches!(what, Some(ClearWatermark::PersistentWatermark));
            return clear_watermark(client, persistent, &[T::BufferPool]).await;
        }
        Clear::HeadroomPool { what } => {
            let persistent = matches!(what, Some(ClearWatermark::PersistentWatermark));
            return clear_watermark(client, persistent, &[T::HeadroomPool]).await;
        }
    };
    let c = counters(client).await?;
    for kind in kinds {
        snapshot::save(endpoint, kind, &c)?;
    }
    // dropstat's own wording for its clear.
    println!("{}", if kinds == ["drops"] { "Cleared drop counters" } else { "Cleared counters" });
    Ok(ExitCode::SUCCESS)
}

/// fdbshow's check of `-a`: six pairs of hex digits joined by colons.
fn is_mac(text: &str) -> bool {
    let parts: Vec<&str> = text.split(':').collect();
    parts.len() == 6 && parts.iter().all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}
