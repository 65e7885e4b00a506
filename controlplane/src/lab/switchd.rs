//! Starting switchd: one per switch, with the port bindings and only the PORT table (bindings are fixed at
//! start-up), waited for until it answers gRPC, then the whole configuration pushed over gRPC.

use super::check_interrupted;
use super::state::{PortBinding, SwitchState, namespace_name};
use super::topology::{Topology, switch_interface};
use super::up::{Lab, START_TIMEOUT, log_tail, spawn};
use anyhow::{Context, bail};
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use std::path::Path;
use std::time::{Duration, Instant};

/// Starts every switch's switchd, waits for each to answer, and pushes its configuration.
pub(super) fn start_all(lab: &mut Lab, topology: &Topology, switchd: &Path) -> anyhow::Result<()> {
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
        let mut args: Vec<String> = vec!["--name".into(), format!("{name}-{}", sw.name), "--config".into()];
        args.push(boot_file.display().to_string());
        for p in &ports {
            args.extend(["--port".into(), format!("{}={}", p.port, p.interface)]);
        }
        args.extend(["--grpc".into(), endpoint.clone()]);
        lab.state.switches.push(SwitchState {
            name: sw.name.clone(),
            namespace: ns.clone(),
            endpoint,
            socket,
            ports,
        });
        spawn(lab, &sw.name, "switchd", &ns, switchd, &args)?;
    }
    for sw in &topology.switches {
        let endpoint = lab.state.switch(&sw.name).map(|s| s.endpoint.clone()).unwrap_or_default();
        let mut client = wait_switch(lab, &sw.name, &endpoint)?;
        push_config(lab.tokio(), &mut client, &sw.config)
            .with_context(|| format!("switch {}: pushing its configuration", sw.name))?;
    }

    // Hosts: responders first, then the senders of the demo's traffic (so nothing is sent to a host that
    Ok(())
}

/// Waits until the switchd of `node` answers gRPC on `endpoint` (a Get succeeds), at most [`START_TIMEOUT`].
fn wait_switch(
    lab: &mut Lab,
    node: &str,
    endpoint: &str,
) -> anyhow::Result<pb::switch_client::SwitchClient<tonic::transport::Channel>> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        check_interrupted()?;
        let attempt = lab.tokio.block_on(async {
            let mut c =
                tokio::time::timeout(Duration::from_secs(2), server::connect(endpoint)).await.ok()?.ok()?;
            tokio::time::timeout(Duration::from_secs(2), c.get(pb::GetRequest {})).await.ok()?.ok()?;
            Some(c)
        });
        if let Some(c) = attempt {
            return Ok(c);
        }
        if !lab.running(node) {
            bail!("switchd of {node} exited during start-up{}", log_tail(lab, node));
        }
        if Instant::now() > deadline {
            bail!(
                "switchd of {node} did not answer on {endpoint} within {}s{}",
                START_TIMEOUT.as_secs(),
                log_tail(lab, node)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
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
