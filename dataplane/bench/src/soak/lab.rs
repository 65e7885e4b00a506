//! The soak lab: a testkit `Star` (switch namespace + four hosts), the real switchd in the switch namespace,
//! one rocehost per host, and storm rocehosts started next to a host for a few seconds. Every file lives in
//! one run directory. Everything is owned: dropping the [`Lab`] (an error, a panic, Ctrl-C) stops the
//! rocehosts, closes the gRPC connection, stops switchd, deletes the namespaces and the run directory, in
//! that order. [`Lab::teardown`] does the same and returns what to look for afterwards ([`Leftovers`]).

use crate::config::{PORTS, Variant, host_ip, host_mac, switch_yaml};
use crate::stop::stopped;
use anyhow::{Context, bail};
use lossless_dataplane::rocehost::report::Report;
use lossless_testkit::netns::Star;
use lossless_testkit::{Client, Log, Rocehost, RocehostCommand, Switchd, SwitchdCommand, unique_name};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

/// Namespace prefix of the lab (`skw…` switch, `skh…` hosts).
pub const NETNS_PREFIX: &str = "sk";
const START_TIMEOUT: Duration = Duration::from_secs(20);
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A directory removed (with its contents) on drop.
pub struct RunDir(pub PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What must be gone after the teardown.
#[derive(Debug, Clone)]
pub struct Leftovers {
    pub namespaces: Vec<String>,
    pub dir: PathBuf,
}

/// One rocehost host of the lab.
pub struct Host {
    pub index: usize,
    pub netns: String,
    /// The flows of each incarnation (`--flow` specs without `qp=`).
    pub flows: Vec<String>,
    pub proc: Option<Rocehost>,
    pub incarnation: u32,
}

pub struct Lab {
    // Field order is drop order (after `Drop for Lab` stopped the processes and the runtime).
    pub hosts: Vec<Host>,
    /// Storm processes by storm number.
    pub storms: Vec<(usize, Rocehost)>,
    pub client: Option<Client>,
    pub rt: Option<tokio::runtime::Runtime>,
    pub switchd: Switchd,
    pub star: Star,
    pub dir: RunDir,
    pub rocehost: PathBuf,
}

impl Lab {
    /// Namespaces, veths (MTU 9100), switchd with the base configuration, ready on its socket.
    pub fn build(switchd_bin: &Path, rocehost: &Path) -> anyhow::Result<Lab> {
        let dir = std::env::temp_dir().join(unique_name("soak-"));
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let dir = RunDir(dir);
        let star =
            Star::new(NETNS_PREFIX, PORTS.len()).context("creating the namespaces (root, iproute2)")?;
        for (i, h) in star.hosts.iter().enumerate() {
            let sw_if = Star::switch_interface(i);
            star.switch.ip(&["link", "set", "dev", &sw_if, "mtu", "9100"])?;
            h.ip(&["link", "set", "dev", "eth0", "down"])?;
            h.ip(&["link", "set", "dev", "eth0", "address", &host_mac(i), "mtu", "9100"])?;
            h.ip(&["link", "set", "dev", "eth0", "up"])?;
        }
        let config = dir.0.join("switchd.yaml");
        std::fs::write(&config, switch_yaml(&Variant::BASE))?;
        let mut command = SwitchdCommand::new(switchd_bin)
            .netns(&star.switch)
            .name("soak")
            .config(&config)
            .grpc(&format!("unix:{}", dir.0.join("sw.sock").display()))
            .env("RUST_LOG", "warn")
            .log(Log::File(dir.0.join("switchd.log")))
            .own_process_group()
            .stop_timeout(Duration::from_secs(10));
        for (i, port) in PORTS.iter().enumerate() {
            command = command.port(port, &Star::switch_interface(i));
        }
        let mut switchd = command.spawn().context("starting switchd")?;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let client = rt.block_on(switchd.ready_unless(stopped))?;
        let hosts = star
            .hosts
            .iter()
            .enumerate()
            .map(|(index, ns)| Host {
                index,
                netns: ns.name().to_owned(),
                flows: Vec::new(),
                proc: None,
                incarnation: 0,
            })
            .collect();
        Ok(Lab {
            hosts,
            storms: Vec::new(),
            client: Some(client),
            rt: Some(rt),
            switchd,
            star,
            dir,
            rocehost: rocehost.to_owned(),
        })
    }

    pub fn client(&self) -> Client {
        self.client.clone().expect("the client lives until the teardown")
    }

    pub fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until the teardown")
    }

    /// `rocehost ARGS` for host `i`'s namespace, called `name`, output in `<dir>/<name>.log`, in its own
    /// process group (a Ctrl-C reaches only the soak, which then stops it in order).
    fn rocehost(&self, i: usize, name: &str, args: &[String]) -> RocehostCommand {
        RocehostCommand::new(&self.rocehost)
            .netns_named(&self.hosts[i].netns)
            .label(&format!("rocehost {name}"))
            .args(args)
            .env("NO_COLOR", "1")
            .log(Log::File(self.dir.0.join(format!("{name}.log"))))
            .own_process_group()
            .start_timeout(START_TIMEOUT)
            .stop_timeout(STOP_TIMEOUT)
    }

    fn base_args(interface_ip: &str, mac: &str) -> Vec<String> {
        [
            "--interface",
            "eth0",
            "--ip",
            interface_ip,
            "--mac",
            mac,
            "--line-rate-mbps",
            "1000",
            "--mtu",
            "4096",
            "--pfc-enable",
            "3,4",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn ready_file(&self, i: usize) -> PathBuf {
        self.dir.0.join(format!("h{i}.ready"))
    }

    pub fn report_file(&self, i: usize) -> PathBuf {
        self.dir.0.join(format!("h{i}.report.json"))
    }

    /// Starts host `i`'s next incarnation: its flows on fresh QP numbers (the receiver keeps the previous
    /// incarnation's PSN state per QP), and waits for its ready file.
    pub fn start_host(&mut self, i: usize) -> anyhow::Result<()> {
        let h = &self.hosts[i];
        let incarnation = h.incarnation + 1;
        let mut args = Lab::base_args(&host_ip(i), &host_mac(i));
        for (f, spec) in h.flows.iter().enumerate() {
            let qp = 0x1000 + 16 * incarnation + f as u32;
            args.extend(["--flow".into(), format!("{spec},qp={qp}")]);
        }
        let name = format!("h{i}");
        let mut proc = self
            .rocehost(i, &name, &args)
            .ready_file(self.ready_file(i))
            .report(self.report_file(i))
            .spawn()
            .with_context(|| format!("starting rocehost {name}"))?;
        proc.ready_unless(stopped)?;
        let h = &mut self.hosts[i];
        h.incarnation = incarnation;
        h.proc = Some(proc);
        Ok(())
    }

    /// Stops host `i`'s rocehost (SIGTERM: it writes its report) and returns the report.
    pub fn stop_host(&mut self, i: usize) -> anyhow::Result<Option<Report>> {
        let Some(mut proc) = self.hosts[i].proc.take() else { return Ok(None) };
        let status = proc.stop()?;
        if !status.success() {
            bail!("rocehost h{i} exited with {status}{}", proc.log_tail());
        }
        let report = proc.report()?;
        let _ = std::fs::remove_file(self.report_file(i));
        Ok(Some(report))
    }

    /// A rocehost that exited on its own (it should not): its name and status.
    pub fn dead_host(&mut self) -> anyhow::Result<Option<(usize, ExitStatus)>> {
        for h in &mut self.hosts {
            if let Some(p) = h.proc.as_mut()
                && let Some(status) = p.try_wait()?
            {
                return Ok(Some((h.index, status)));
            }
        }
        Ok(None)
    }

    /// A second rocehost in host `i`'s namespace, on the same interface with an address and MAC of its own,
    /// that only sends PFC XOFF for priorities 3 and 4 every 100 µs for `length`, then exits: a broken NIC
    /// next to a healthy one.
    pub fn start_storm(&mut self, i: usize, n: usize, length: Duration) -> anyhow::Result<()> {
        let name = format!("storm{n}-h{i}");
        let mut args =
            Lab::base_args(&format!("10.0.0.{}", 101 + i), &format!("02:00:00:00:01:{:02x}", i + 1));
        args.extend([
            "--storm".into(),
            "3,4@100".into(),
            "--duration".into(),
            format!("{}", length.as_secs_f64()),
        ]);
        let proc = self
            .rocehost(i, &name, &args)
            .report(self.dir.0.join(format!("{name}.json")))
            .spawn()
            .with_context(|| format!("starting rocehost {name}"))?;
        self.storms.push((n, proc));
        Ok(())
    }

    /// Reaps the storm processes that finished: their storm numbers; an error for one that failed.
    pub fn reap_storms(&mut self) -> anyhow::Result<Vec<usize>> {
        let mut done = Vec::new();
        let mut i = 0;
        while i < self.storms.len() {
            if let Some(status) = self.storms[i].1.try_wait()? {
                let (n, p) = self.storms.remove(i);
                if !status.success() {
                    bail!("storm {} exited with {status}{}", p.label(), p.log_tail());
                }
                done.push(n);
            } else {
                i += 1;
            }
        }
        Ok(done)
    }

    pub fn log_tail(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir.0.join(format!("{name}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(":\n    {}", lines[lines.len().saturating_sub(8)..].join("\n    "))
    }

    /// Stops everything in order and returns what must not outlive it.
    pub fn teardown(self) -> Leftovers {
        let mut namespaces: Vec<String> = self.star.hosts.iter().map(|h| h.name().to_owned()).collect();
        namespaces.push(self.star.switch.name().to_owned());
        let leftovers = Leftovers { namespaces, dir: self.dir.0.clone() };
        drop(self);
        leftovers
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for h in &mut self.hosts {
            drop(h.proc.take());
        }
        self.storms.clear();
        // Close the gRPC connections (the client and the subscription's) first: switchd waits for open
        // connections when it stops. Then the fields drop: switchd, the namespaces, the run directory.
        self.client = None;
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

/// What is left of a torn-down lab: namespaces, processes whose command line names the run directory (all
/// that the soak started does), the run directory. Empty when all is gone.
pub fn find_leftovers(l: &Leftovers) -> Vec<String> {
    let mut out = Vec::new();
    let listed = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    match listed {
        Ok(text) => {
            for ns in &l.namespaces {
                if text.lines().any(|line| line.split_whitespace().next() == Some(ns)) {
                    out.push(format!("namespace {ns}"));
                }
            }
        }
        Err(e) => out.push(format!("ip netns list failed: {e}")),
    }
    let dir = l.dir.display().to_string();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else { continue };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if pid != std::process::id() && cmdline.contains(&dir) {
                out.push(format!("process {pid}: {}", cmdline.trim()));
            }
        }
    }
    if l.dir.exists() {
        out.push(format!("directory {dir}"));
    }
    out
}
