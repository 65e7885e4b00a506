//! Network namespaces and veth pairs for tests.
//!
//! [`Netns`] wraps the namespace of `lossless-dataplane` (the lab of `swctl` uses that one directly): a
//! namespace deleted on drop, also while a panic unwinds, with IPv6 off; its veth pairs (`Netns::veth`,
//! `Netns::veth_local`) go with it. Names come from [`unique_name`], so tests running in parallel (and other
//! processes) never collide.
//!
//! A test killed outright (nextest's timeout sends SIGKILL) runs no drop, so its namespaces, the veths in
//! them and the processes it started inside would stay. So each namespace made here records its owner in
//! [`OWNERS_DIR`] (a file named as the namespace, holding the owner's pid and start time), and the first
//! namespace a process creates first sweeps away ([`sweep_stale`]) those whose owner is gone: the processes
//! inside are killed and the namespace deleted. A namespace without such a file (the labs of `swctl lab`,
//! anyone else's) and one whose owner still runs are never touched.

use lossless_dataplane::io::netns::Netns as DataplaneNetns;
pub use lossless_dataplane::io::netns::unique_name;
use lossless_dataplane::io::netns::{namespace_exists, namespace_pids};
use lossless_dataplane::process::Pid;
use std::fs;
use std::io::{self, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

/// Where test namespaces' owners are recorded: one file per namespace, named as the namespace, holding
/// `PID START_TIME` (the start time in clock ticks since boot, field 22 of `/proc/PID/stat`, tells a live
/// owner from a later process that got the same pid).
pub const OWNERS_DIR: &str = "/run/lossless-test/netns";

/// A test network namespace: [`lossless_dataplane::io::netns::Netns`] (everything it does is reachable
/// through `Deref`) whose owner, this process, is recorded so that [`sweep_stale`] can delete it should
/// this process die without dropping it.
#[derive(Debug)]
pub struct Netns {
    /// `Some` until dropped: the namespace goes before its owner file.
    inner: Option<DataplaneNetns>,
    owner_file: PathBuf,
}

impl Netns {
    /// Creates namespace `name` and records this process as its owner. The first call in a process first
    /// deletes the namespaces of owners that are gone ([`sweep_stale`]).
    pub fn new(name: &str) -> io::Result<Netns> {
        static SWEEP: Once = Once::new();
        SWEEP.call_once(|| match sweep_stale(Path::new(OWNERS_DIR)) {
            Ok(swept) => {
                for s in swept {
                    eprintln!("lossless-testkit: deleted stale test namespace {s}");
                }
            }
            Err(e) => eprintln!("lossless-testkit: sweeping stale test namespaces: {e}"),
        });
        let owner_file = Path::new(OWNERS_DIR).join(valid_name(name)?);
        // The owner file before the namespace: a kill between the two leaves at worst a file without a
        // namespace, which the next sweep removes.
        record_owner(&owner_file)?;
        match DataplaneNetns::new(name) {
            Ok(inner) => Ok(Netns { inner: Some(inner), owner_file }),
            Err(e) => {
                let _ = fs::remove_file(&owner_file);
                Err(e)
            }
        }
    }
}

impl Deref for Netns {
    type Target = DataplaneNetns;

    fn deref(&self) -> &DataplaneNetns {
        self.inner.as_ref().expect("a Netns is only emptied by drop")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        drop(self.inner.take());
        let _ = fs::remove_file(&self.owner_file);
    }
}

/// A fresh namespace named `prefix` + a unique suffix (see [`unique_name`]); the error says that creating
/// namespaces needs root and iproute2.
pub fn unique(prefix: &str) -> io::Result<Netns> {
    let name = unique_name(prefix);
    Netns::new(&name).map_err(|e| {
        io::Error::new(e.kind(), format!("creating network namespace {name} (needs root and iproute2): {e}"))
    })
}

/// Deletes the test namespaces recorded in `owners_dir` (normally [`OWNERS_DIR`]) whose owner process is
/// gone, after killing the processes inside them (`ip netns pids`); their veths go with them. Returns what
/// it deleted, as `NAME (owner pid PID)`. Files it cannot read as an owner record, and namespaces whose
/// owner runs, are left alone. Several processes may sweep at once: what another one removed first is
/// skipped.
pub fn sweep_stale(owners_dir: &Path) -> io::Result<Vec<String>> {
    let entries = match fs::read_dir(owners_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", owners_dir.display()))),
    };
    let mut swept = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).filter(|n| valid_name(n).is_ok()) else {
            continue;
        };
        let Some(owner) = owner_gone(&path) else { continue };
        // Read again just before acting: another sweeper may have removed it, and a new owner recreated it.
        if read_owner(&path) != Some(owner) {
            continue;
        }
        if namespace_exists(name) {
            kill_processes_in(name);
            let _ = Command::new("ip").args(["netns", "del", name]).output();
        }
        match fs::remove_file(&path) {
            Ok(()) => swept.push(format!("{name} (owner pid {})", owner.pid)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    Ok(swept)
}

/// Records this process as the owner of `path` (a file created for it, holding `PID START_TIME`; it must not
/// exist yet). [`owner_gone`] tells later whether that process still runs. The testkit records test
/// namespaces so; other test scaffolding (a lab test's run directory) may record what it leaves behind too.
pub fn record_owner(path: &Path) -> io::Result<()> {
    let me = Pid::current().ok_or_else(|| io::Error::other("reading /proc/self/stat"))?;
    let dir = path.parent().expect("an owner file is inside a directory");
    let context = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    fs::create_dir_all(dir).map_err(context)?;
    // create_new: a name is never taken over from another owner.
    let mut file = fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(context)?;
    file.write_all(format!("{} {}\n", me.pid, me.start_time).as_bytes()).map_err(context)
}

/// The owner `path` records ([`record_owner`]) if that process is gone; `None` while it runs, and when the
/// file is missing or is not an owner record (then it is not ours to judge).
pub fn owner_gone(path: &Path) -> Option<Pid> {
    read_owner(path).filter(|owner| !owner.alive())
}

fn read_owner(path: &Path) -> Option<Pid> {
    let text = fs::read_to_string(path).ok()?;
    let mut fields = text.split_whitespace();
    let owner = Pid { pid: fields.next()?.parse().ok()?, start_time: fields.next()?.parse().ok()? };
    fields.next().is_none().then_some(owner)
}

/// A name `ip netns` accepts and that is a plain file name: letters, digits, `-`, `_`, `.`, not `.`/`..`.
fn valid_name(name: &str) -> io::Result<&str> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(name)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a namespace name for a test"),
        ))
    }
}

/// SIGKILL to every process inside namespace `name` (never this process).
fn kill_processes_in(name: &str) {
    for pid in namespace_pids(name) {
        if pid.pid != std::process::id() {
            pid.signal("KILL");
        }
    }
}

/// A switch namespace wired to host namespaces: host `i`'s `eth0` is the peer of the switch's `p{i}`.
/// Dropped, the namespaces go (hosts first), and every veth with them.
///
/// ```text
/// hosts[0]:eth0 ── p0 ┐
/// hosts[1]:eth0 ── p1 ├ switch
/// ...                 ┘
/// ```
#[derive(Debug)]
pub struct Star {
    pub hosts: Vec<Netns>,
    pub switch: Netns,
}

impl Star {
    /// A switch namespace (`{prefix}sw…`) and `hosts` host namespaces (`{prefix}h…`).
    pub fn new(prefix: &str, hosts: usize) -> io::Result<Star> {
        let switch = unique(&format!("{prefix}sw"))?;
        let hosts = (0..hosts).map(|_| unique(&format!("{prefix}h"))).collect::<io::Result<Vec<_>>>()?;
        for (i, h) in hosts.iter().enumerate() {
            h.veth("eth0", &switch, &Star::switch_interface(i))?;
        }
        Ok(Star { hosts, switch })
    }

    /// The switch-side interface of host `i`: `p{i}`.
    pub fn switch_interface(i: usize) -> String {
        format!("p{i}")
    }
}
