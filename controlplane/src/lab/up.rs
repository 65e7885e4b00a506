//! `swctl lab up` (and the start of `lab demo`, `lab run`): namespaces, veth pairs, addresses, netem, one
//! `switchd` per switch (started in `switchd.rs` with the launcher, [`lossless_dataplane::launch`]) and one
//! `rocehost` per host, each recorded in the state file ([`super::state`]) before it is created. A [`Lab`]
//! dropped before it is up tears everything down.

use super::down::{DownReport, teardown};
use super::state::{
    HostState, LabState, Phase, Pid, ProcessState, STATE_FILE, find_binary, lab_dir, namespace_exists,
    namespace_name,
};
use super::topology::{Flow, HostNode, Topology, switch_interface};
use super::{check_interrupted, interrupted, switchd};
use anyhow::{Context, bail};
use lossless_dataplane::io::netns::Netns;
use lossless_dataplane::launch::{Log, Rocehost, RocehostCommand, Switchd};
use lossless_dataplane::nic::Retransmit;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a process has to start answering (switchd: gRPC; rocehost: its ready file).
pub(super) const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How to bring a lab up.
#[derive(Debug, Clone, Default)]
pub struct UpOptions {
    /// Replaces the topology's name.
    pub name: Option<String>,
    /// Start the topology's `traffic` for this many seconds (the demo's senders run that long; responders
    /// run until stopped); `None`: every host only responds.
    pub traffic_seconds: Option<u32>,
    /// Extra rocehost arguments per host (`swctl lab run`'s storms).
    pub host_args: BTreeMap<String, Vec<String>>,
    /// Every switchd serves Prometheus metrics on this port of its namespace's loopback.
    pub metrics_port: Option<u16>,
}

/// A lab this process brought up. Dropped while armed (an error, a panic, Ctrl-C), it tears everything down.
pub struct Lab {
    pub state: LabState,
    pub dir: PathBuf,
    /// The hosts' rocehosts, by node.
    pub(super) rocehosts: Vec<(String, Rocehost)>,
    /// The switches' switchd, by node.
    pub(super) switchds: Vec<(String, Switchd)>,
    armed: bool,
    pub(super) tokio: tokio::runtime::Handle,
}

impl Lab {
    pub fn endpoint(&self, switch: &str) -> Option<&str> {
        self.state.switch(switch).map(|s| s.endpoint.as_str())
    }

    /// Leaves everything running (`swctl lab up`): the processes outlive this one; `lab down` removes them.
    pub fn detach(mut self) -> LabState {
        self.armed = false;
        // Dropping a child handle leaves its process running; a detached switchd or rocehost is not
        // stopped either.
        for (_, switchd) in self.switchds.drain(..) {
            drop(switchd.detach());
        }
        for (_, rocehost) in self.rocehosts.drain(..) {
            drop(rocehost.detach());
        }
        self.state.owner = None;
        let _ = self.state.save(&self.dir);
        std::mem::take(&mut self.state)
    }

    /// Waits until the host process of `node` exits, at most `timeout`; `None` if it is still running.
    pub fn wait_process(&mut self, node: &str, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.rocehosts.iter_mut().find(|(n, _)| n == node).map(|(_, c)| c)?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline || interrupted() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM to the process of `node`, then up to `timeout` for it to exit; true when it did.
    pub fn stop_process(&mut self, node: &str, timeout: Duration) -> bool {
        if let Some(pid) = self.state.process(node).and_then(|p| p.pid) {
            pid.signal("TERM");
        }
        self.wait_process(node, timeout).is_some()
    }

    /// Is the process of `node` (started by this process) still running?
    pub fn running(&mut self, node: &str) -> bool {
        if let Some((_, switchd)) = self.switchds.iter_mut().find(|(n, _)| n == node) {
            return matches!(switchd.try_wait(), Ok(None));
        }
        self.rocehosts
            .iter_mut()
            .find(|(n, _)| n == node)
            .is_some_and(|(_, c)| matches!(c.try_wait(), Ok(None)))
    }

    /// Every process this one started, as child handles to reap: teardown stops them all at once.
    fn take_processes(&mut self) -> Vec<Child> {
        let switchds = self.switchds.drain(..).map(|(_, s)| s.detach());
        switchds.chain(self.rocehosts.drain(..).map(|(_, c)| c.detach())).collect()
    }

    /// Tears the lab down now; `keep_files` leaves the run directory's logs and reports (not the state file
    /// or sockets).
    pub fn down(mut self, keep_files: bool) -> DownReport {
        self.armed = false;
        let mut reap = self.take_processes();
        teardown(&mut self.state, &self.dir, &mut reap, keep_files)
    }

    pub fn tokio(&self) -> &tokio::runtime::Handle {
        &self.tokio
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.armed {
            let mut reap = self.take_processes();
            let report = teardown(&mut self.state, &self.dir, &mut reap, false);
            eprintln!("swctl: lab {}: cleaned up ({})", self.state.name, report.summary());
        }
    }
}

/// Brings a lab up; on any failure everything created so far is removed before the error returns.
pub fn up(topology: &Topology, options: &UpOptions, tokio: &tokio::runtime::Handle) -> anyhow::Result<Lab> {
    let name = options.name.clone().unwrap_or_else(|| topology.name.clone());
    super::topology::check_lab_name(&name).map_err(anyhow::Error::msg)?;
    if let Some(link) = topology.links.iter().find(|l| l.line.loss_every.is_some()) {
        bail!(
            "link {link}: loss-every is for the simulator (swctl sim run): netem has no every-Nth loss; use loss: PERCENT in a lab"
        );
    }
    let switchd = find_binary("switchd")?;
    let rocehost = if topology.hosts.is_empty() { None } else { Some(find_binary("rocehost")?) };

    let dir = lab_dir(&name);
    if dir.join(STATE_FILE).exists() {
        let existing = LabState::load(&dir).ok();
        let what = match &existing {
            Some(s) if s.owner_alive() => "is being used by another swctl",
            _ => "exists",
        };
        bail!("lab {name} {what} ({}); `swctl lab down {name}` removes it", dir.display());
    }
    for node in topology.node_names() {
        let ns = namespace_name(&name, node);
        if namespace_exists(&ns) {
            bail!(
                "namespace {ns} already exists (not recorded by any lab); remove it with `ip netns del {ns}`"
            );
        }
    }
    let socket_len = dir.join("x.sock").as_os_str().len()
        + topology.switches.iter().map(|s| s.name.len()).max().unwrap_or(0);
    if socket_len > 100 {
        bail!(
            "{}: too long for Unix socket paths; set LOSSLESS_LAB_DIR to a shorter directory",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // Claim the name: of two `up`s racing for it, one creates the state file and the other stops here.
    match std::fs::OpenOptions::new().write(true).create_new(true).open(dir.join(STATE_FILE)) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            bail!("lab {name} is being created by another swctl");
        }
        Err(e) => return Err(e).with_context(|| format!("creating {}", dir.join(STATE_FILE).display())),
    }

    let state = LabState {
        name: name.clone(),
        topology: topology.source.clone(),
        phase: Phase::Starting,
        created_unix_s: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        owner: Pid::of(std::process::id()),
        ..LabState::default()
    };
    state.save(&dir)?;
    let mut lab =
        Lab { state, dir, rocehosts: Vec::new(), switchds: Vec::new(), armed: true, tokio: tokio.clone() };
    build(&mut lab, topology, options, &switchd, rocehost.as_deref())?;
    lab.state.phase = Phase::Up;
    lab.state.save(&lab.dir)?;
    Ok(lab)
}

fn build(
    lab: &mut Lab,
    topology: &Topology,
    options: &UpOptions,
    switchd: &Path,
    rocehost: Option<&Path>,
) -> anyhow::Result<()> {
    let namespaces = create_network(lab, topology)?;
    switchd::start_all(lab, topology, switchd, options.metrics_port)?;
    match rocehost {
        Some(rocehost) => start_hosts(lab, topology, options, rocehost, &namespaces),
        None => Ok(()),
    }
}

/// Namespaces, links (veth pairs, MTU, netem) and host addresses.
fn create_network(
    lab: &mut Lab,
    topology: &Topology,
) -> anyhow::Result<BTreeMap<String, ManuallyDrop<Netns>>> {
    let name = lab.state.name.clone();
    let dir = lab.dir.clone();

    // Namespaces. `Netns` deletes its namespace on drop; here the state file owns them instead.
    let mut namespaces: BTreeMap<String, ManuallyDrop<Netns>> = BTreeMap::new();
    for node in topology.node_names() {
        check_interrupted()?;
        let ns = namespace_name(&name, node);
        lab.state.namespaces.push(ns.clone());
        lab.state.save(&dir)?;
        namespaces.insert(node.to_owned(), ManuallyDrop::new(create_namespace(&ns)?));
    }

    // Links: veth pairs, MTU, netem; host addresses.
    let interface_of = |end: &super::topology::End| match topology.switch(&end.node) {
        Some(sw) => switch_interface(sw, &end.port),
        None => end.port.clone(),
    };
    for link in &topology.links {
        check_interrupted()?;
        let (a_ns, b_ns) = (&namespaces[&link.a.node], &namespaces[&link.b.node]);
        let (a_if, b_if) = (interface_of(&link.a), interface_of(&link.b));
        a_ns.veth(&a_if, b_ns, &b_if).with_context(|| format!("link {link}"))?;
        for (ns, interface) in [(a_ns, &a_if), (b_ns, &b_if)] {
            ns.ip(&["link", "set", "dev", interface, "mtu", &link.mtu.to_string()])
                .with_context(|| format!("link {link}: MTU {}", link.mtu))?;
            if !link.netem.is_empty() {
                let mut args =
                    vec!["tc", "qdisc", "add", "dev", interface.as_str(), "root", "netem", "limit", "100000"];
                args.extend(link.netem.iter().map(String::as_str));
                if let Err(e) = ns.run_in_checked(&args) {
                    let hint = if e.to_string().contains("qdisc kind is unknown") {
                        "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM, module sch_netem): load it or drop \
                         delay/jitter/loss from the link"
                    } else {
                        "tc netem failed (is iproute2's tc installed?)"
                    };
                    return Err(anyhow::Error::new(e).context(format!("link {link}: {hint}")));
                }
            }
        }
    }
    // Loopback up in the switches' namespaces too: switchd's metrics listen there.
    for sw in &topology.switches {
        namespaces[&sw.name].ip(&["link", "set", "dev", "lo", "up"])?;
    }
    for h in &topology.hosts {
        let ns = &namespaces[&h.name];
        let mac = h.mac.to_string();
        ns.ip(&["link", "set", "dev", &h.interface, "down"])?;
        ns.ip(&["link", "set", "dev", &h.interface, "address", &mac])
            .with_context(|| format!("host {}: setting MAC {mac}", h.name))?;
        ns.ip(&["link", "set", "dev", &h.interface, "up"])?;
        ns.ip(&["addr", "add", &format!("{}/{}", h.ip, h.prefix_len), "dev", &h.interface])
            .with_context(|| format!("host {}: address {}/{}", h.name, h.ip, h.prefix_len))?;
        ns.ip(&["link", "set", "dev", "lo", "up"])?;
        // rocehost, not the kernel, is this address's RoCE endpoint: the kernel would answer every RoCE
        // packet with ICMP port unreachable. The address stays (ping, ARP work), the ICMP errors are rate
        // limited to a handful per peer (one per 100 s after the initial burst).
        let _ = ns.run_in(&["sysctl", "-qw", "net.ipv4.icmp_ratelimit=100000"]);
    }
    Ok(namespaces)
}

/// Hosts: responders first, then the senders of the demo's traffic (so nothing is sent to a host that is
/// not listening yet).
fn start_hosts(
    lab: &mut Lab,
    topology: &Topology,
    options: &UpOptions,
    rocehost: &Path,
    namespaces: &BTreeMap<String, ManuallyDrop<Netns>>,
) -> anyhow::Result<()> {
    let name = lab.state.name.clone();
    let dir = lab.dir.clone();
    let flows_of = |h: &str| -> Vec<(usize, &Flow)> {
        if options.traffic_seconds.is_none() {
            return Vec::new();
        }
        topology.traffic.iter().enumerate().filter(|(_, f)| f.from == h).collect()
    };
    let mut order: Vec<&HostNode> = topology.hosts.iter().collect();
    order.sort_by_key(|h| !flows_of(&h.name).is_empty());
    let mut waiting: Vec<String> = Vec::new();
    let mut previous_was_sender = false;
    for h in order {
        check_interrupted()?;
        let flows = flows_of(&h.name);
        if !flows.is_empty() && !previous_was_sender {
            // The responders answer, and the switches know where they are, before any sender starts.
            for node in waiting.drain(..) {
                wait_ready(lab, &node)?;
                announce(&namespaces[&node], topology.host(&node).context("host")?);
            }
            previous_was_sender = true;
        }
        let ns = namespace_name(&name, &h.name);
        let ready_file = dir.join(format!("{}.ready", h.name));
        let report = dir.join(format!("{}.report.json", h.name));
        let _ = std::fs::remove_file(&ready_file);
        let mut args = h.rocehost_nic_args(&h.interface);
        if let Some(gw) = h.gateway_mac {
            args.extend(["--gateway-mac".into(), gw.to_string()]);
        }
        if h.dcqcn_time_scale != 1 {
            args.extend(["--dcqcn-time-scale".into(), h.dcqcn_time_scale.to_string()]);
        }
        for (name, value) in &h.dcqcn_params {
            args.extend(["--dcqcn-param".into(), format!("{name}={value}")]);
        }
        for param in h.rx_pipeline.params() {
            args.extend(["--rx-param".into(), param]);
        }
        if h.retransmit == Retransmit::GoBack0 {
            args.extend(["--retransmit".into(), "gb0".into()]);
        }
        let mut flow_args = Vec::new();
        for (index, f) in &flows {
            let Some(dst) = topology.host(&f.to) else { continue };
            // Topology validation made sure an off-subnet destination has a gateway to go through.
            let Some(next_hop) = h.next_hop_mac(dst) else { continue };
            let mut spec = format!(
                "dst={},dst-mac={},dscp={},priority={},message={},dcqcn={},src-port={},qp={},start-ms={}",
                dst.ip,
                next_hop,
                f.dscp,
                f.priority,
                f.message_bytes,
                if f.dcqcn { "on" } else { "off" },
                49152 + index,
                flow_qp(*index),
                f.start_ms
            );
            if let Some(rate) = f.rate_mbps {
                write!(spec, ",rate={rate}")?;
            }
            if let Some(n) = f.messages {
                write!(spec, ",messages={n}")?;
            }
            flow_args.push(spec);
        }
        for spec in &flow_args {
            args.extend(["--flow".into(), spec.clone()]);
        }
        if let (Some(seconds), false) = (options.traffic_seconds, flows.is_empty()) {
            args.extend(["--duration".into(), seconds.to_string()]);
        }
        args.extend(options.host_args.get(&h.name).into_iter().flatten().cloned());
        let command = RocehostCommand::new(rocehost)
            .label(&format!("rocehost of {}", h.name))
            .netns_named(&ns)
            .args(&args)
            .ready_file(&ready_file)
            .report(&report);
        lab.state.hosts.push(HostState {
            name: h.name.clone(),
            namespace: ns.clone(),
            interface: h.interface.clone(),
            ip: format!("{}/{}", h.ip, h.prefix_len),
            mac: h.mac.to_string(),
            ready_file,
            report,
            flows: flow_args,
        });
        spawn(lab, &h.name, &ns, command)?;
        waiting.push(h.name.clone());
    }
    for node in waiting {
        wait_ready(lab, &node)?;
        announce(&namespaces[&node], topology.host(&node).context("host")?);
    }
    Ok(())
}

/// A gratuitous ARP from the host, as a host whose interface comes up sends one: switches learn its MAC
/// (lossless unknown unicast is never flooded, so an unlearned host would be unreachable) and, where they
/// route, its address. Best effort.
fn announce(ns: &Netns, host: &HostNode) {
    let frame = gratuitous_arp(host);
    if let Ok(mut port) = ns.open_port(&host.interface) {
        let _ = port.send_batch(&[frame]);
    }
}

/// The gratuitous ARP a host sends when its interface comes up.
pub(crate) fn gratuitous_arp(host: &HostNode) -> Vec<u8> {
    use lossless_dataplane::wire::{ArpOperation, ArpRepr, EtherType, EthernetAddress, build};
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: host.mac,
        source_protocol_addr: host.ip,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: host.ip,
    };
    build::ethernet(host.mac, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&arp))
}

pub(super) fn describe_up(state: &LabState, topology: &Topology) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let dir = lab_dir(&state.name);
    let _ = writeln!(out, "Lab {} is up ({}; run directory {})", state.name, state.topology, dir.display());
    for sw in &state.switches {
        let pid = state.process(&sw.name).and_then(|p| p.pid).map(|p| p.pid).unwrap_or_default();
        let _ = writeln!(
            out,
            "  switch {:<8} namespace {:<20} switchd pid {pid}, gRPC {}",
            sw.name, sw.namespace, sw.endpoint
        );
        for p in &sw.ports {
            let _ = writeln!(out, "           {:<10} on {:<10} -- {}", p.port, p.interface, p.peer);
        }
    }
    for h in &state.hosts {
        let pid = state.process(&h.name).and_then(|p| p.pid).map(|p| p.pid).unwrap_or_default();
        let attached = topology
            .host(&h.name)
            .and_then(|t| t.attached.as_ref())
            .map(|e| format!(" -- {e}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  host   {:<8} namespace {:<20} rocehost pid {pid} (responder), {} {} {}{attached}",
            h.name, h.namespace, h.interface, h.ip, h.mac
        );
    }
    let _ = writeln!(out, "Reach it:");
    let swctl = swctl_invocation();
    if let Some(sw) = state.switches.first() {
        let _ = writeln!(out, "  {swctl} --switch {} show pfc counters", sw.endpoint);
        let _ = writeln!(out, "  {swctl} --lab {} --switch {} show queue counters", state.name, sw.name);
    }
    for sw in &state.switches {
        if let Some(metrics) = &sw.metrics {
            let _ = writeln!(out, "  ip netns exec {} curl -s http://{metrics}/metrics", sw.namespace);
        }
    }
    if let [a, b, ..] = state.hosts.as_slice() {
        let ip = b.ip.split('/').next().unwrap_or_default();
        let _ =
            writeln!(out, "  ip netns exec {} ping -c 1 {ip}        # {} -> {}", a.namespace, a.name, b.name);
    }
    let _ = writeln!(out, "  {swctl} lab status {}", state.name);
    let _ = writeln!(out, "  {swctl} lab down {}", state.name);
    out
}

/// How to run swctl again, for the commands a lab suggests: the path it was started by
/// (`target/release/swctl`, which the README's build leaves off PATH), or plain `swctl` when it was found
/// on PATH or this is not swctl (a test binary driving the library).
fn swctl_invocation() -> String {
    let Some(argv0) = std::env::args_os().next() else { return "swctl".to_owned() };
    let path = std::path::Path::new(&argv0);
    if path.file_name().is_some_and(|n| n == "swctl") && path.components().count() > 1 {
        path.display().to_string()
    } else {
        "swctl".to_owned()
    }
}

/// `ip netns add`, retried: the first namespace of a machine mounts /run/netns, and two swctl processes
/// doing that at once can make one fail.
fn create_namespace(name: &str) -> anyhow::Result<Netns> {
    let mut attempt = 0;
    loop {
        match Netns::new(name) {
            Ok(ns) => return Ok(ns),
            Err(_) if attempt < 3 && !namespace_exists(name) => {
                std::thread::sleep(Duration::from_millis(50 << attempt));
                attempt += 1;
            }
            Err(e) => return Err(e).with_context(|| format!("creating namespace {name}")),
        }
    }
}

/// The destination QP of the demo's flow number `index` (distinct per flow, so the receiver keeps each
/// flow's PSN space apart).
pub fn flow_qp(index: usize) -> u32 {
    0x200 + index as u32
}

/// Records the intent to start `command` (program and arguments) for `node` inside `namespace`, its output
/// in `log`, in the state file, before the process exists.
pub(super) fn record_process(
    lab: &mut Lab,
    node: &str,
    kind: &str,
    namespace: &str,
    command: Vec<String>,
    log: PathBuf,
) -> anyhow::Result<()> {
    lab.state.processes.push(ProcessState {
        node: node.to_owned(),
        kind: kind.to_owned(),
        namespace: namespace.to_owned(),
        pid: None,
        command,
        log,
    });
    lab.state.save(&lab.dir)
}

/// Records the pid of the process [`record_process`] recorded last, now that it exists.
pub(super) fn record_pid(lab: &mut Lab, pid: u32) -> anyhow::Result<()> {
    let pid = Pid::of(pid);
    if let Some(p) = lab.state.processes.last_mut() {
        p.pid = pid;
    }
    lab.state.save(&lab.dir)
}

/// Starts a host's rocehost (`command`, in its namespace `namespace`), its output in
/// `<run dir>/<node>.log`, in its own process group (a Ctrl-C at the terminal reaches swctl, which then
/// stops it in order). Recorded before and after.
fn spawn(lab: &mut Lab, node: &str, namespace: &str, command: RocehostCommand) -> anyhow::Result<()> {
    let log = lab.dir.join(format!("{node}.log"));
    record_process(lab, node, "rocehost", namespace, command.command_line(), log.clone())?;
    let process = command
        .env("NO_COLOR", "1")
        .log(Log::File(log))
        .own_process_group()
        .start_timeout(START_TIMEOUT)
        .spawn()
        .with_context(|| format!("starting rocehost for {node}"))?;
    let pid = process.pid();
    lab.rocehosts.push((node.to_owned(), process));
    record_pid(lab, pid)
}

/// Waits until the rocehost of `node` wrote its ready file.
fn wait_ready(lab: &mut Lab, node: &str) -> anyhow::Result<()> {
    let Some((_, process)) = lab.rocehosts.iter_mut().find(|(n, _)| n == node) else {
        bail!("rocehost of {node} was not started");
    };
    process.ready_unless(interrupted)?;
    Ok(())
}
