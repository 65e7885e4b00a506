//! Bringing a lab up and down: namespaces, veth pairs, addresses, netem, one `switchd` per switch and one
//! `rocehost` per host, all recorded in `<run dir>/<lab>/state.json`.
//!
//! The state file is written *before* each resource is created, so whatever happens to `swctl` (an
//! error, a panic, Ctrl-C, `kill -9`), `swctl lab down NAME` finds everything: processes by pid (checked
//! against their start time, so a recycled pid is left alone) and, as a second net, every process still
//! inside one of the lab's namespaces (`ip netns pids`); then the namespaces (their veths go with them) and
//! the run directory with its sockets. Teardown is idempotent and never stops at the first failure.

use super::topology::{Flow, Topology, switch_interface};
use super::{check_interrupted, interrupted};
use anyhow::{Context, bail};
use lossless_dataplane::io::netns::Netns;
use lossless_dataplane::server;
use lossless_proto::v1 as pb;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where labs keep their state unless `$LOSSLESS_LAB_DIR` says otherwise.
pub const DEFAULT_BASE_DIR: &str = "/run/lossless/labs";
/// Every namespace of a lab is `ll-<lab>-<node>`.
pub const NAMESPACE_PREFIX: &str = "ll-";
const STATE_FILE: &str = "state.json";
/// How long a process has to start answering (switchd: gRPC; rocehost: its ready file).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long SIGTERM gets before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The directory holding every lab's run directory.
pub fn base_dir() -> PathBuf {
    std::env::var_os("LOSSLESS_LAB_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_BASE_DIR))
}

pub fn lab_dir(name: &str) -> PathBuf {
    base_dir().join(name)
}

pub fn namespace_name(lab: &str, node: &str) -> String {
    format!("{NAMESPACE_PREFIX}{lab}-{node}")
}

// ------------------------------------------------------------------------------------------------ state

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// `lab up` (or the demo) is creating resources.
    #[default]
    Starting,
    /// Everything answered and configurations were pushed.
    Up,
    /// Teardown began.
    Stopping,
}

/// What a lab consists of, as recorded on disk.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LabState {
    pub name: String,
    pub topology: String,
    pub phase: Phase,
    pub created_unix_s: u64,
    /// The swctl process creating the lab (and, for the demo, running it), with its start time: while it
    /// lives, the lab is in use.
    pub owner: Option<Pid>,
    /// Namespaces, recorded before each is created.
    pub namespaces: Vec<String>,
    pub switches: Vec<SwitchState>,
    pub hosts: Vec<HostState>,
    pub processes: Vec<ProcessState>,
}

/// A process id with its start time (clock ticks since boot, `/proc/PID/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pid {
    pub pid: u32,
    pub start_time: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SwitchState {
    pub name: String,
    pub namespace: String,
    /// `unix:<run dir>/<switch>.sock`
    pub endpoint: String,
    pub socket: PathBuf,
    /// Port → interface inside the namespace, with the far end of its link.
    pub ports: Vec<PortBinding>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PortBinding {
    pub port: String,
    pub interface: String,
    pub peer: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostState {
    pub name: String,
    pub namespace: String,
    pub interface: String,
    /// With the prefix length.
    pub ip: String,
    pub mac: String,
    pub ready_file: PathBuf,
    pub report: PathBuf,
    /// Flows this host sends (`--flow` arguments); empty for a responder.
    pub flows: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcessState {
    pub node: String,
    /// `switchd` or `rocehost`.
    pub kind: String,
    pub namespace: String,
    /// `None` between recording the intent and the process existing.
    pub pid: Option<Pid>,
    pub command: Vec<String>,
    pub log: PathBuf,
}

impl LabState {
    pub fn load(dir: &Path) -> anyhow::Result<LabState> {
        let path = dir.join(STATE_FILE);
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}: not a lab state file", path.display()))
    }

    /// Writes the state atomically (a temporary file renamed over the old one).
    pub fn save(&self, dir: &Path) -> anyhow::Result<()> {
        let tmp = dir.join(format!("{STATE_FILE}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(STATE_FILE))
            .with_context(|| format!("writing {}", dir.join(STATE_FILE).display()))
    }

    pub fn switch(&self, name: &str) -> Option<&SwitchState> {
        self.switches.iter().find(|s| s.name == name)
    }

    pub fn process(&self, node: &str) -> Option<&ProcessState> {
        self.processes.iter().find(|p| p.node == node)
    }

    /// The lab's creator is still running (an `up` in progress or a demo).
    pub fn owner_alive(&self) -> bool {
        self.owner.is_some_and(|o| o.alive())
    }
}

// ------------------------------------------------------------------------------------------------ processes

impl Pid {
    /// The process `pid` as it is now, if it exists and is not a zombie.
    pub fn of(pid: u32) -> Option<Pid> {
        let (state, start_time) = proc_stat(pid)?;
        (state != 'Z' && state != 'X').then_some(Pid { pid, start_time })
    }

    /// The same process is still running (not exited, not a zombie, pid not reused).
    pub fn alive(&self) -> bool {
        Pid::of(self.pid).is_some_and(|now| now.start_time == self.start_time)
    }

    fn signal(&self, signal: &str) {
        if self.alive() {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &self.pid.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// (state, start time) from `/proc/PID/stat`. The command name may hold spaces and parentheses: fields
/// are counted after its closing parenthesis.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: field 3 (state) is fields[0], field 22 (starttime) is fields[19].
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// Stops processes: SIGTERM, up to [`STOP_GRACE`] to exit, then SIGKILL. Returns those that needed SIGKILL.
fn stop_processes(pids: &[Pid], reap: &mut [Child]) -> Vec<Pid> {
    for p in pids {
        p.signal("TERM");
    }
    let wait_all = |deadline: Instant, reap: &mut [Child]| {
        while Instant::now() < deadline {
            for c in reap.iter_mut() {
                let _ = c.try_wait();
            }
            if pids.iter().all(|p| !p.alive()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    if wait_all(Instant::now() + STOP_GRACE, reap) {
        return Vec::new();
    }
    let stubborn: Vec<Pid> = pids.iter().copied().filter(Pid::alive).collect();
    for p in &stubborn {
        p.signal("KILL");
    }
    wait_all(Instant::now() + Duration::from_secs(2), reap);
    stubborn
}

/// Processes inside a namespace (`ip netns pids NAME`).
fn namespace_pids(namespace: &str) -> Vec<Pid> {
    let Ok(out) = Command::new("ip").args(["netns", "pids", namespace]).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter_map(Pid::of)
        .collect()
}

pub fn namespace_exists(namespace: &str) -> bool {
    Path::new("/run/netns").join(namespace).exists() || Path::new("/var/run/netns").join(namespace).exists()
}

/// `switchd` or `rocehost`: next to the running swctl, else on PATH.
pub fn find_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(found) = std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()) {
        return Ok(found);
    }
    bail!(
        "{name} not found next to swctl ({}) or on PATH; build it with `cargo build --release -p lossless-dataplane --bin {name}`",
        exe.as_deref().and_then(Path::parent).map(|d| d.display().to_string()).unwrap_or_else(|| "?".into())
    )
}

// ------------------------------------------------------------------------------------------------ up

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
}

/// A lab this process brought up. Dropped while armed (an error, a panic, Ctrl-C), it tears everything down.
pub struct Lab {
    pub state: LabState,
    pub dir: PathBuf,
    children: Vec<(String, Child)>,
    armed: bool,
    tokio: tokio::runtime::Handle,
}

impl Lab {
    pub fn endpoint(&self, switch: &str) -> Option<&str> {
        self.state.switch(switch).map(|s| s.endpoint.as_str())
    }

    /// Leaves everything running (`swctl lab up`): the processes outlive this one; `lab down` removes them.
    pub fn detach(mut self) -> LabState {
        self.armed = false;
        self.state.owner = None;
        let _ = self.state.save(&self.dir);
        std::mem::take(&mut self.state)
    }

    /// Waits until the host process of `node` exits, at most `timeout`; `None` if it is still running.
    pub fn wait_process(&mut self, node: &str, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.children.iter_mut().find(|(n, _)| n == node).map(|(_, c)| c)?;
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
        self.children
            .iter_mut()
            .find(|(n, _)| n == node)
            .is_some_and(|(_, c)| matches!(c.try_wait(), Ok(None)))
    }

    /// Tears the lab down now; `keep_files` leaves the run directory's logs and reports (not the state file
    /// or sockets).
    pub fn down(mut self, keep_files: bool) -> DownReport {
        self.armed = false;
        let mut children = std::mem::take(&mut self.children);
        let mut reap: Vec<Child> = children.drain(..).map(|(_, c)| c).collect();
        teardown(&mut self.state, &self.dir, &mut reap, keep_files)
    }

    pub fn tokio(&self) -> &tokio::runtime::Handle {
        &self.tokio
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.armed {
            let mut reap: Vec<Child> = self.children.drain(..).map(|(_, c)| c).collect();
            let report = teardown(&mut self.state, &self.dir, &mut reap, false);
            eprintln!("swctl: lab {}: cleaned up ({})", self.state.name, report.summary());
        }
    }
}

/// Brings a lab up; on any failure everything created so far is removed before the error returns.
pub fn up(topology: &Topology, options: &UpOptions, tokio: &tokio::runtime::Handle) -> anyhow::Result<Lab> {
    let name = options.name.clone().unwrap_or_else(|| topology.name.clone());
    super::topology::check_lab_name(&name).map_err(anyhow::Error::msg)?;
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
    let mut lab = Lab { state, dir, children: Vec::new(), armed: true, tokio: tokio.clone() };
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

    // Switches: switchd with the port bindings and only the PORT table (bindings are fixed at start-up),
    // then the whole configuration pushed over gRPC once it answers.
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
    // is not listening yet).
    let Some(rocehost) = rocehost else { return Ok(()) };
    let flows_of = |h: &str| -> Vec<(usize, &Flow)> {
        if options.traffic_seconds.is_none() {
            return Vec::new();
        }
        topology.traffic.iter().enumerate().filter(|(_, f)| f.from == h).collect()
    };
    let mut order: Vec<&super::topology::HostNode> = topology.hosts.iter().collect();
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
        let mut args: Vec<String> = vec![
            "--interface".into(),
            h.interface.clone(),
            "--ip".into(),
            h.ip.to_string(),
            "--mac".into(),
            h.mac.to_string(),
            "--line-rate-mbps".into(),
            h.line_rate_mbps.to_string(),
            "--mtu".into(),
            h.mtu.to_string(),
        ];
        if !h.pfc.is_empty() {
            args.extend([
                "--pfc-enable".into(),
                h.pfc.iter().map(u8::to_string).collect::<Vec<_>>().join(","),
            ]);
        }
        if let Some(gw) = h.gateway_mac {
            args.extend(["--gateway-mac".into(), gw.to_string()]);
        }
        if h.dcqcn_time_scale != 1 {
            args.extend(["--dcqcn-time-scale".into(), h.dcqcn_time_scale.to_string()]);
        }
        for (name, value) in &h.dcqcn_params {
            args.extend(["--dcqcn-param".into(), format!("{name}={value}")]);
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
        args.extend(["--ready-file".into(), ready_file.display().to_string()]);
        args.extend(["--report".into(), report.display().to_string()]);
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
        spawn(lab, &h.name, "rocehost", &ns, rocehost, &args)?;
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
fn announce(ns: &Netns, host: &super::topology::HostNode) {
    use lossless_dataplane::wire::{ArpOperation, ArpRepr, EtherType, EthernetAddress, build};
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: host.mac,
        source_protocol_addr: host.ip,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: host.ip,
    };
    let frame =
        build::ethernet(host.mac, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&arp));
    if let Ok(mut port) = ns.open_port(&host.interface) {
        let _ = port.send_batch(&[frame]);
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

/// Starts `program ARGS` inside `namespace`, its output in `<run dir>/<node>.log`, in its own process group
/// (a Ctrl-C at the terminal reaches swctl, which then stops it in order). Recorded before and after.
fn spawn(
    lab: &mut Lab,
    node: &str,
    kind: &str,
    namespace: &str,
    program: &Path,
    args: &[String],
) -> anyhow::Result<()> {
    let log = lab.dir.join(format!("{node}.log"));
    let mut command = vec![program.display().to_string()];
    command.extend(args.iter().cloned());
    lab.state.processes.push(ProcessState {
        node: node.to_owned(),
        kind: kind.to_owned(),
        namespace: namespace.to_owned(),
        pid: None,
        command: command.clone(),
        log: log.clone(),
    });
    lab.state.save(&lab.dir)?;
    let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    // `ip netns exec` execs the program in place: the child's pid is the program's.
    let child = Command::new("ip")
        .args(["netns", "exec", namespace])
        .args(&command)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {kind} for {node}"))?;
    let pid = Pid::of(child.id());
    lab.children.push((node.to_owned(), child));
    if let Some(p) = lab.state.processes.last_mut() {
        p.pid = pid;
    }
    lab.state.save(&lab.dir)
}

/// The last lines of a process's log, for an error message.
fn log_tail(lab: &Lab, node: &str) -> String {
    let Some(p) = lab.state.process(node) else { return String::new() };
    let text = std::fs::read_to_string(&p.log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n    ");
    if tail.is_empty() {
        format!(" (log {} is empty)", p.log.display())
    } else {
        format!("; {}:\n    {tail}", p.log.display())
    }
}

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

fn wait_ready(lab: &mut Lab, node: &str) -> anyhow::Result<()> {
    let Some(ready) = lab.state.hosts.iter().find(|h| h.name == node).map(|h| h.ready_file.clone()) else {
        return Ok(());
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        check_interrupted()?;
        if ready.exists() {
            return Ok(());
        }
        if !lab.running(node) {
            bail!("rocehost of {node} exited during start-up{}", log_tail(lab, node));
        }
        if Instant::now() > deadline {
            bail!(
                "rocehost of {node} did not write {} within {}s{}",
                ready.display(),
                START_TIMEOUT.as_secs(),
                log_tail(lab, node)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
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

// ------------------------------------------------------------------------------------------------ down

/// What a teardown removed.
#[derive(Debug, Default, Serialize)]
pub struct DownReport {
    pub lab: String,
    /// `kind node (pid N)` of every process stopped; `+KILL` when SIGTERM was not enough.
    pub stopped: Vec<String>,
    pub namespaces_deleted: Vec<String>,
    pub run_dir_removed: Option<PathBuf>,
    pub problems: Vec<String>,
}

impl DownReport {
    pub fn summary(&self) -> String {
        format!(
            "{} process(es) stopped, {} namespace(s) deleted{}{}",
            self.stopped.len(),
            self.namespaces_deleted.len(),
            if self.run_dir_removed.is_some() { ", run directory removed" } else { "" },
            if self.problems.is_empty() {
                String::new()
            } else {
                format!("; problems: {}", self.problems.join("; "))
            }
        )
    }
}

/// Removes everything `state` records, whatever shape it is in. `reap` are child handles of this process
/// (their zombies are collected).
pub fn teardown(state: &mut LabState, dir: &Path, reap: &mut [Child], keep_files: bool) -> DownReport {
    let mut report = DownReport { lab: state.name.clone(), ..DownReport::default() };
    state.phase = Phase::Stopping;
    if dir.join(STATE_FILE).exists() {
        let _ = state.save(dir);
    }

    // Recorded processes (pid and start time must match), then anything else inside the namespaces.
    let mut targets: Vec<(String, Pid)> = Vec::new();
    for p in &state.processes {
        if let Some(pid) = p.pid.filter(Pid::alive) {
            targets.push((format!("{} {} (pid {})", p.kind, p.node, pid.pid), pid));
        }
    }
    for ns in &state.namespaces {
        if namespace_exists(ns) {
            for pid in namespace_pids(ns) {
                if !targets.iter().any(|(_, t)| t.pid == pid.pid) {
                    targets.push((format!("process {} in {ns}", pid.pid), pid));
                }
            }
        }
    }
    let pids: Vec<Pid> = targets.iter().map(|(_, p)| *p).collect();
    let killed = stop_processes(&pids, reap);
    for (label, pid) in &targets {
        if pid.alive() {
            report.problems.push(format!("{label} is still running"));
        } else if killed.contains(pid) {
            report.stopped.push(format!("{label} +KILL"));
        } else {
            report.stopped.push(label.clone());
        }
    }
    for c in reap.iter_mut() {
        if matches!(c.try_wait(), Ok(None)) {
            let _ = c.kill();
        }
        let _ = c.wait();
    }

    for ns in &state.namespaces {
        if !namespace_exists(ns) {
            continue;
        }
        match Command::new("ip").args(["netns", "del", ns]).output() {
            Ok(o) if o.status.success() => report.namespaces_deleted.push(ns.clone()),
            Ok(o) => report
                .problems
                .push(format!("ip netns del {ns}: {}", String::from_utf8_lossy(&o.stderr).trim())),
            Err(e) => report.problems.push(format!("ip netns del {ns}: {e}")),
        }
    }

    // Sockets a killed switchd left behind live in the run directory like everything else.
    for sw in &state.switches {
        if sw.socket.exists() && !sw.socket.starts_with(dir) {
            let _ = std::fs::remove_file(&sw.socket);
        }
    }
    if keep_files {
        for sw in &state.switches {
            let _ = std::fs::remove_file(&sw.socket);
        }
        for h in &state.hosts {
            let _ = std::fs::remove_file(&h.ready_file);
        }
        let _ = std::fs::remove_file(dir.join(STATE_FILE));
    } else if dir.exists() {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => report.run_dir_removed = Some(dir.to_owned()),
            Err(e) => report.problems.push(format!("removing {}: {e}", dir.display())),
        }
    }
    report
}

/// `swctl lab down NAME`: tears down the lab recorded under NAME. A lab whose creator still runs (an `up`
/// in progress, a demo) is refused unless `force`.
pub fn down(name: &str, force: bool) -> anyhow::Result<DownReport> {
    let dir = lab_dir(name);
    if !dir.exists() {
        bail!("no lab {name} ({} does not exist); `swctl lab status` lists the labs", dir.display());
    }
    let mut state = match LabState::load(&dir) {
        Ok(s) => s,
        Err(_) if !dir.join(STATE_FILE).exists() => {
            // A run directory without state (a demo's results, or a crash before the first write).
            LabState { name: name.to_owned(), ..LabState::default() }
        }
        Err(e) => return Err(e),
    };
    if state.owner_alive() && !force {
        let owner = state.owner.map(|o| o.pid).unwrap_or_default();
        bail!(
            "lab {name} is in use by swctl (pid {owner}), which removes it when it ends; --force to remove it now"
        );
    }
    Ok(teardown(&mut state, &dir, &mut [], false))
}

// ------------------------------------------------------------------------------------------------ status

#[derive(Debug, Serialize)]
pub struct LabStatus {
    pub name: String,
    pub topology: String,
    pub phase: Phase,
    pub run_dir: PathBuf,
    /// Every recorded process runs and answers.
    pub healthy: bool,
    pub nodes: Vec<NodeStatus>,
}

#[derive(Debug, Serialize)]
pub struct NodeStatus {
    pub node: String,
    pub kind: String,
    pub namespace: String,
    pub namespace_exists: bool,
    pub pid: Option<u32>,
    pub alive: bool,
    /// switchd: gRPC answers; rocehost: its ready file exists.
    pub answering: bool,
    /// switchd: its endpoint; rocehost: address and MAC.
    pub detail: String,
}

/// Every lab under the base directory (or only `only`).
pub fn status(only: Option<&str>, tokio: &tokio::runtime::Handle) -> anyhow::Result<Vec<LabStatus>> {
    let base = base_dir();
    let mut names: Vec<String> = match std::fs::read_dir(&base) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(STATE_FILE).exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    if let Some(name) = only {
        if !names.iter().any(|n| n == name) {
            bail!("no lab {name} under {}", base.display());
        }
        names.retain(|n| n == name);
    }
    let mut out = Vec::new();
    for name in names {
        let dir = base.join(&name);
        let Ok(state) = LabState::load(&dir) else { continue };
        let mut nodes = Vec::new();
        for p in &state.processes {
            let alive = p.pid.is_some_and(|pid| pid.alive());
            let (answering, detail) = match p.kind.as_str() {
                "switchd" => {
                    let endpoint = state.switch(&p.node).map(|s| s.endpoint.clone()).unwrap_or_default();
                    let answering = alive && switch_answers(tokio, &endpoint);
                    (answering, endpoint)
                }
                _ => {
                    let host = state.hosts.iter().find(|h| h.name == p.node);
                    let ready = host.is_some_and(|h| h.ready_file.exists());
                    (
                        alive && ready,
                        host.map(|h| format!("{} {} {}", h.interface, h.ip, h.mac)).unwrap_or_default(),
                    )
                }
            };
            nodes.push(NodeStatus {
                node: p.node.clone(),
                kind: p.kind.clone(),
                namespace: p.namespace.clone(),
                namespace_exists: namespace_exists(&p.namespace),
                pid: p.pid.map(|p| p.pid),
                alive,
                answering,
                detail,
            });
        }
        let healthy =
            state.phase == Phase::Up && nodes.iter().all(|n| n.alive && n.answering && n.namespace_exists);
        out.push(LabStatus {
            name: state.name.clone(),
            topology: state.topology.clone(),
            phase: state.phase,
            run_dir: dir,
            healthy,
            nodes,
        });
    }
    Ok(out)
}

fn switch_answers(tokio: &tokio::runtime::Handle, endpoint: &str) -> bool {
    tokio.block_on(async {
        let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_secs(2), server::connect(endpoint)).await
        else {
            return false;
        };
        matches!(tokio::time::timeout(Duration::from_secs(2), c.get(pb::GetRequest {})).await, Ok(Ok(_)))
    })
}

/// `--lab NAME --switch SW`: SW's endpoint in lab NAME. An explicit `unix:`/`tcp:` endpoint is kept, except
/// swctl's default, which becomes the lab's only switch.
pub fn resolve_switch(lab: &str, switch: &str, default_endpoint: &str) -> anyhow::Result<String> {
    let dir = lab_dir(lab);
    let state =
        LabState::load(&dir).with_context(|| format!("no lab {lab} (swctl lab status lists them)"))?;
    if let Some(s) = state.switch(switch) {
        return Ok(s.endpoint.clone());
    }
    let names: Vec<&str> = state.switches.iter().map(|s| s.name.as_str()).collect();
    if switch == default_endpoint {
        return match state.switches.as_slice() {
            [only] => Ok(only.endpoint.clone()),
            _ => {
                bail!("lab {lab} has {} switches ({}): name one with --switch", names.len(), names.join(", "))
            }
        };
    }
    if switch.starts_with("unix:") || switch.starts_with("tcp:") {
        return Ok(switch.to_owned());
    }
    bail!("lab {lab} has no switch {switch} (switches: {})", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_reads_this_process() {
        let me = Pid::of(std::process::id()).unwrap();
        assert!(me.alive());
        assert!(
            !Pid { pid: me.pid, start_time: me.start_time + 1 }.alive(),
            "a different start time is another process"
        );
        assert!(Pid::of(u32::MAX).is_none());
    }

    #[test]
    fn namespace_names_carry_lab_and_node() {
        assert_eq!(namespace_name("demo", "h1"), "ll-demo-h1");
    }
}
