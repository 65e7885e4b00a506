//! `swctl watch`: the switch's event stream, filtered, with XOFF/XON floods folded
//! ([`lossless_controlplane::watch`]).

use crate::args::WatchArgs;
use crate::online::status;
use lossless_controlplane::watch::{CountersLine, Filter, Limiter, WatchLine};
use lossless_proto::v1::{self as pb, switch_client::SwitchClient};
use std::process::ExitCode;
use std::time::Duration;
use tonic::transport::Channel;

fn print_line(json: bool, line: &WatchLine) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(line)?);
    } else {
        println!("{}", line.text());
    }
    Ok(())
}

pub(crate) async fn watch(
    client: &mut SwitchClient<Channel>,
    json: bool,
    counters_ms: u32,
    args: &WatchArgs,
) -> anyhow::Result<ExitCode> {
    const KINDS: [&str; 11] = [
        "xoff",
        "xon",
        "pfc_storm_detected",
        "pfc_storm_restored",
        "config_applied",
        "fdb_learned",
        "fdb_aged",
        "neighbor_learned",
        "neighbor_aged",
        "port_oper_up",
        "port_oper_down",
    ];
    for k in &args.kinds {
        let known = match k.strip_suffix('*') {
            Some(prefix) => KINDS.iter().any(|n| n.starts_with(prefix)),
            None => KINDS.contains(&k.as_str()),
        };
        if !known {
            anyhow::bail!("--kind {k}: no event has that kind (kinds: {})", KINDS.join(", "));
        }
    }
    if !args.ports.is_empty() {
        // A port name the switch does not have would filter out everything, silently.
        let c = client.get_counters(pb::GetCountersRequest {}).await.map_err(status)?.into_inner();
        if let Some(p) = args.ports.iter().find(|p| !c.ports.iter().any(|x| x.name == **p)) {
            let names: Vec<&str> = c.ports.iter().map(|x| x.name.as_str()).collect();
            anyhow::bail!("--port {p}: the switch has no such port (ports: {})", names.join(", "));
        }
    }
    let filter =
        Filter { kinds: args.kinds.clone(), ports: args.ports.clone(), indices: args.queues.clone() };
    // Counters snapshots carry the switch's wall time; a switch too old to send it (0) is dated by the
    // offset learnt from the first event that carries both times, and before any event by this machine's
    // clock when the line arrives, a different time base: stderr says so once.
    let mut wall_offset_ns: Option<i128> = None;
    let mut said_local_clock = false;
    let window_ns = args.summary_ms.saturating_mul(1_000_000);
    let mut limiter = Limiter::new(window_ns);
    let mut stream = client
        .subscribe(pb::SubscribeRequest { counters_interval_ms: counters_ms, events: true })
        .await
        .map_err(status)?
        .into_inner();
    // When the switch goes quiet, open windows still end: summaries come out after a quiet window.
    let quiet = Duration::from_millis(args.summary_ms.max(100));
    loop {
        let item = match tokio::time::timeout(quiet, stream.message()).await {
            Err(_) => {
                for line in limiter.flush() {
                    print_line(json, &line)?;
                }
                continue;
            }
            Ok(item) => item.map_err(status)?,
        };
        let Some(item) = item else { break };
        match item.item {
            Some(pb::subscribe_response::Item::Event(e)) => {
                if e.wall_time_unix_ns > 0 {
                    wall_offset_ns = Some(i128::from(e.wall_time_unix_ns) - i128::from(e.timestamp_ns));
                }
                if filter.matches(&e) {
                    for line in limiter.push(&e) {
                        print_line(json, &line)?;
                    }
                }
            }
            None => {}
            Some(pb::subscribe_response::Item::Counters(c)) => {
                for line in limiter.expire(c.timestamp_ns) {
                    print_line(json, &line)?;
                }
                let (rx, tx, drp): (u64, u64, u64) = c
                    .ports
                    .iter()
                    .fold((0, 0, 0), |(a, b, d), p| (a + p.rx_ok, b + p.tx_ok, d + p.rx_drp + p.tx_drp));
                let wall_time_unix_ns = match wall_offset_ns {
                    _ if c.wall_time_unix_ns > 0 => c.wall_time_unix_ns,
                    Some(offset) => u64::try_from(i128::from(c.timestamp_ns) + offset).unwrap_or_default(),
                    None => {
                        if !said_local_clock {
                            said_local_clock = true;
                            eprintln!(
                                "swctl watch: the switch has sent no wall time yet; counters lines are dated \
                                 by this machine's clock until an event brings the switch's"
                            );
                        }
                        std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or_default())
                    }
                };
                let line = CountersLine::new(c.timestamp_ns, wall_time_unix_ns, rx, tx, drp);
                if json {
                    println!("{}", serde_json::to_string(&line)?);
                } else {
                    println!("{}", line.text());
                }
            }
        }
    }
    for line in limiter.flush() {
        print_line(json, &line)?;
    }
    Ok(ExitCode::SUCCESS)
}
