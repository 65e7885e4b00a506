//! Starting switchd: one per switch, with the port bindings and only the PORT table (bindings are fixed at
//! start-up), through the launcher of `lossless-dataplane` ([`lossless_dataplane::launch`]), waited for
//! until it answers gRPC, then the whole configuration pushed over gRPC.

use super::state::{PortBinding, SwitchState, namespace_name};
use super::topology::{Topology, switch_interface};
use super::up::{Lab, START_TIMEOUT, record_pid, record_process};
use super::{check_interrupted, interrupted};
use anyhow::{Context, bail};
use lossless_dataplane::launch::{Log, SwitchdCommand};
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use std::path::Path;

/// Starts every switch's switchd, waits for each to answer, and pushes its configuration.
pub(super) fn start_all(
    lab: &mut Lab,
    topology: &Topology,
    switchd: &Path,
    metrics_port: Option<u16>,
) -> anyhow::Result<()> {
    let name = lab.state.name.clone();
    let dir = lab.dir.clone();
    for sw in &topology.switches {
        check_interrupted()?;
        let ns = namespace_name(&name, &sw.name);
        let socket = dir.join(format!("{}.sock", sw.name));
        let endpoint = format!("unix:{}", socket.display());
        let mut ports = Vec::new();
        for link in &topology.links {
            for (mine, other) in [(&link.a, &link.b), (&link.b, &link.a)] {
                if mine.node == sw.name {
                    ports.push(PortBinding {
                        port: mine.port.clone(),
                        interface: switch_interface(sw, &mine.port),
                        peer: other.to_string(),
                    });
                }
            }
        }
        ports.sort_by_key(|p| sw.compiled.ports.iter().position(|q| q.name == p.port));
        let mut boot = lossless_dataplane::model::config::ConfigDb::default();
        for table in ["PORT", "DEVICE_METADATA"] {
            if let Some(t) = sw.config.tables.get(table) {
                boot.tables.insert(table.to_owned(), t.clone());
            }
        }
        let boot_file = dir.join(format!("{}.boot.yaml", sw.name));
        std::fs::write(&boot_file, serde_yaml::to_string(&boot)?)?;
        std::fs::write(dir.join(format!("{}.yaml", sw.name)), serde_yaml::to_string(&sw.config)?)?;
        let switchd_name = format!("{name}-{}", sw.name);
        let log = dir.join(format!("{}.log", sw.name));
        let mut command = SwitchdCommand::new(switchd)
            .label(&format!("switchd of {}", sw.name))
            .netns_named(&ns)
            .name(&switchd_name)
            .config(&boot_file)
            .grpc(&endpoint)
            .env("NO_COLOR", "1")
            .log(Log::File(log.clone()))
            // A Ctrl-C at the terminal reaches swctl, which then stops switchd in order.
            .own_process_group()
            .start_timeout(START_TIMEOUT);
        // What the state file records: the command line switchd runs with.
        let mut recorded: Vec<String> = vec![switchd.display().to_string()];
        recorded.extend(["--name".into(), switchd_name, "--config".into(), boot_file.display().to_string()]);
        for p in &ports {
            command = command.port(&p.port, &p.interface);
            recorded.extend(["--port".into(), format!("{}={}", p.port, p.interface)]);
        }
        recorded.extend(["--grpc".into(), endpoint.clone()]);
        // Each switch has a namespace of its own: the same loopback port serves every one.
        let metrics = metrics_port.map(|port| format!("127.0.0.1:{port}"));
        if let Some(metrics) = &metrics {
            command = command.args(["--metrics", metrics.as_str()]);
            recorded.extend(["--metrics".into(), metrics.clone()]);
        }
        lab.state.switches.push(SwitchState {
            name: sw.name.clone(),
            namespace: ns.clone(),
            endpoint,
            socket,
            ports,
            metrics,
        });
        record_process(lab, &sw.name, "switchd", &ns, recorded, log)?;
        let process = command.spawn().with_context(|| format!("starting switchd for {}", sw.name))?;
        let pid = process.pid();
        lab.switchds.push((sw.name.clone(), process));
        record_pid(lab, pid)?;
    }
    for sw in &topology.switches {
        let Some(process) = lab.switchds.iter_mut().find(|(n, _)| *n == sw.name).map(|(_, s)| s) else {
            bail!("switchd of {} was not started", sw.name);
        };
        let mut client = lab.tokio.block_on(process.ready_unless(interrupted))?;
        push_config(lab.tokio(), &mut client, &sw.config)
            .with_context(|| format!("switch {}: pushing its configuration", sw.name))?;
    }
    Ok(())
}

/// Applies `config` at the running generation; refused configurations name every issue.
pub(super) fn push_config(
    tokio: &tokio::runtime::Handle,
    client: &mut pb::switch_client::SwitchClient<tonic::transport::Channel>,
    config: &lossless_dataplane::model::config::ConfigDb,
) -> anyhow::Result<u64> {
    tokio.block_on(async {
        let running =
            client.get(pb::GetRequest {}).await.map_err(|e| anyhow::anyhow!("{}", e.message()))?.into_inner();
        let reply = client
            .apply(pb::ApplyRequest {
                config: Some(server::config_db_to_proto(config)),
                dry_run: false,
                expected_generation: running.generation,
                // The lab owns the whole configuration of its switches.
                replace: true,
            })
            .await
            .map_err(|e| anyhow::anyhow!("{}", server::describe_status(&e)))?
            .into_inner();
        if !reply.accepted {
            let issues: Vec<String> = reply
                .issues
                .iter()
                .map(|i| {
                    let l = i.location.clone().unwrap_or_default();
                    format!("{}|{}|{}: {}", l.table, l.key, l.field, i.message)
                })
                .collect();
            bail!("refused: {}", issues.join("; "));
        }
        Ok(reply.generation)
    })
}
