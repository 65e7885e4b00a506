//! Network namespaces and veth pairs for tests and tools, through iproute2 (`ip netns`, `ip link`).
//!
//! A [`Netns`] is created with a name the caller chooses (see [`unique_name`]) and deleted when dropped,
//! also while a panic unwinds. Interfaces inside go with it (a veth pair disappears when either end's
//! namespace does); a namespace a thread or socket still uses lives on, nameless, until they are gone.
//! Namespaces this module creates have IPv6 disabled, so the kernel sends no autoconfiguration frames
//! (router solicitations, MLD reports) that a frame-exact test would have to filter.

use super::afpacket::{ControlSocket, ethtool};
use crate::process::Pid;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// `ip netns add`/`del` mount and unmount under /run/netns; several at once race on the first mount.
static NETNS_LOCK: Mutex<()> = Mutex::new(());

/// The command that runs `program` inside the namespace called `netns`: `ip netns exec NETNS PROGRAM`, to
/// which the caller adds the program's arguments. `ip netns exec` execs the program in place, so the child's
/// pid is the program's own. Every process this crate (and the labs) starts in a namespace starts here.
pub fn exec_in(netns: &str, program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new("ip");
    command.args(["netns", "exec", netns]).arg(program);
    command
}

/// A network namespace, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates namespace `name` (`ip netns add`); fails if it exists.
    pub fn new(name: &str) -> io::Result<Netns> {
        {
            let _guard = NETNS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            run_checked(Command::new("ip").args(["netns", "add", name]))?;
        }
        let ns = Netns { name: name.to_owned() };
        // Best effort: a kernel without IPv6 has no such keys, and then no IPv6 noise either.
        let _ = ns.run_in(&[
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ]);
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs a command inside the namespace (`ip netns exec NAME ARGS...`) and returns its output, whatever
    /// its exit status.
    pub fn run_in(&self, args: &[&str]) -> io::Result<Output> {
        self.command(args)?.output()
    }

    /// Like [`Netns::run_in`], but a non-zero exit status is an error carrying the command's stderr.
    pub fn run_in_checked(&self, args: &[&str]) -> io::Result<Output> {
        run_checked(&mut self.command(args)?)
    }

    /// `ARGS` (a program and its arguments) to run inside the namespace.
    fn command(&self, args: &[&str]) -> io::Result<Command> {
        let Some((program, rest)) = args.split_first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command to run in the namespace"));
        };
        let mut command = exec_in(&self.name, program);
        command.args(rest);
        Ok(command)
    }

    /// `ip -n NAME ARGS...`, checked.
    pub fn ip(&self, args: &[&str]) -> io::Result<Output> {
        run_checked(Command::new("ip").args(["-n", &self.name]).args(args))
    }

    /// Moves the calling thread (only it) into the namespace: sockets it opens from now on, and processes
    /// and threads it starts, live there. There is no way back for the thread, so use one that ends with the
    /// work (a test's own thread, or a spawned one).
    #[allow(unsafe_code)]
    pub fn enter_on_this_thread(&self) -> io::Result<()> {
        let path = Path::new("/var/run/netns").join(&self.name);
        let file =
            File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        // SAFETY: `file` is an open namespace file for the duration of the call; setns only reads the fd.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("setns({}): {e}", path.display())));
        }
        Ok(())
    }

    /// Opens a port on `interface` inside this namespace (see [`Netns::within`]; the socket stays bound to
    /// the namespace's interface afterwards).
    pub fn open_port(&self, interface: &str) -> io::Result<Box<dyn crate::io::PortBackend>> {
        self.within(|| crate::io::open(&crate::io::PortSpec::Interface(interface.to_owned())))
    }

    /// Runs `f` on a short-lived thread that enters this namespace: sockets it opens live there.
    pub fn within<T: Send>(&self, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                self.enter_on_this_thread()?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the thread inside the namespace panicked")))
        })
    }

    /// A veth pair: `a` in this namespace, `b` in `peer_ns`; both up, IPv6 off, offloads off.
    pub fn veth(&self, a: &str, peer_ns: &Netns, b: &str) -> io::Result<()> {
        self.ip(&["link", "add", a, "type", "veth", "peer", "name", b, "netns", &peer_ns.name])?;
        self.prepare_link(a)?;
        peer_ns.prepare_link(b)
    }

    /// A veth pair with both ends in this namespace; both up, IPv6 off, offloads off.
    pub fn veth_local(&self, a: &str, b: &str) -> io::Result<()> {
        self.ip(&["link", "add", a, "type", "veth", "peer", "name", b])?;
        self.prepare_link(a)?;
        self.prepare_link(b)
    }

    /// IPv6 off (no autoconfiguration frames), TX checksum/TSO/GSO offloads off (every frame leaves
    /// complete and at most MTU-sized), then up.
    fn prepare_link(&self, interface: &str) -> io::Result<()> {
        let _ = self.run_in(&["sysctl", "-qw", &format!("net.ipv6.conf.{interface}.disable_ipv6=1")]);
        self.disable_offloads(interface);
        self.ip(&["link", "set", "dev", interface, "up"]).map(drop)
    }

    /// `ethtool -K IF tx off tso off gso off` when the binary exists; otherwise the same through the legacy
    /// ethtool ioctls from a thread inside the namespace. Best effort: a device without the feature is fine.
    fn disable_offloads(&self, interface: &str) {
        if find_program("ethtool") {
            let _ = self.run_in(&["ethtool", "-K", interface, "tx", "off", "tso", "off", "gso", "off"]);
            return;
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                if self.enter_on_this_thread().is_err() {
                    return;
                }
                if let Ok(ctl) = ControlSocket::new() {
                    for cmd in [ethtool::STSO, ethtool::SGSO, ethtool::STXCSUM] {
                        let _ = ctl.ethtool_set(interface, cmd, 0);
                    }
                }
            });
        });
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _guard = NETNS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = run_checked(Command::new("ip").args(["netns", "del", &self.name])) {
            tracing::warn!(netns = %self.name, "namespace not deleted: {e}");
        }
    }
}

/// Whether namespace `name` exists (`ip netns` keeps one file per namespace under /var/run/netns, which is
/// /run/netns on current systems).
pub fn namespace_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists() || Path::new("/var/run/netns").join(name).exists()
}

/// The processes inside namespace `name` (`ip netns pids NAME`); none when it does not exist.
pub fn namespace_pids(name: &str) -> Vec<Pid> {
    let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter_map(Pid::of)
        .collect()
}

/// `prefix` + process id + a per-process counter, at most 15 characters (an interface name's limit; the
/// prefix is shortened when needed), unique among the live processes of the machine.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let suffix = format!("{:x}-{:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let room = 15usize.saturating_sub(suffix.len());
    let prefix: String = prefix.chars().take(room).collect();
    format!("{prefix}{suffix}")
}

fn run_checked(command: &mut Command) -> io::Result<Output> {
    let output = command
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("{:?}: {e}", command.get_program())))?;
    if !output.status.success() {
        let args: Vec<&OsStr> = std::iter::once(command.get_program()).chain(command.get_args()).collect();
        return Err(io::Error::other(format!(
            "{args:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(output)
}

fn find_program(name: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(Into::into))
        .any(|dir| dir.join(name).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_fit_an_interface_name_and_differ() {
        let a = unique_name("a-very-long-prefix");
        let b = unique_name("a-very-long-prefix");
        assert!(a.len() <= 15 && b.len() <= 15, "{a} {b}");
        assert_ne!(a, b);
        assert!(unique_name("ns").starts_with("ns"));
    }

    #[test]
    fn namespace_is_removed_on_drop_even_on_panic() {
        let name = unique_name("llns");
        let path = Path::new("/var/run/netns").join(&name);
        let result = std::panic::catch_unwind(|| {
            let ns = Netns::new(&name).expect("ip netns add (run as root)");
            assert!(Path::new("/var/run/netns").join(ns.name()).exists());
            panic!("test panic");
        });
        assert!(result.is_err());
        assert!(!path.exists(), "{} still exists", path.display());
    }

    #[test]
    fn veth_between_namespaces_is_up_with_ipv6_off() {
        let left = Netns::new(&unique_name("llnl")).unwrap();
        let right = Netns::new(&unique_name("llnr")).unwrap();
        left.veth("va", &right, "vb").unwrap();
        for (ns, dev) in [(&left, "va"), (&right, "vb")] {
            let link = ns.ip(&["-o", "link", "show", "dev", dev]).unwrap();
            let link = String::from_utf8_lossy(&link.stdout);
            assert!(link.contains(",UP") || link.contains("<UP"), "{dev} not up: {link}");
            let v6 =
                ns.run_in_checked(&["sysctl", "-n", &format!("net.ipv6.conf.{dev}.disable_ipv6")]).unwrap();
            assert_eq!(String::from_utf8_lossy(&v6.stdout).trim(), "1");
        }
        // Offloads off, whether through ethtool or the ioctl fallback.
        std::thread::scope(|s| {
            s.spawn(|| {
                left.enter_on_this_thread().unwrap();
                let ctl = ControlSocket::new().unwrap();
                assert_eq!(
                    ctl.ethtool_get("va", ethtool::GTXCSUM).unwrap(),
                    0,
                    "TX checksum offload still on"
                );
            });
        });
        let names = Command::new("ip").args(["netns", "list"]).output().unwrap();
        assert!(String::from_utf8_lossy(&names.stdout).contains(left.name()));
    }

    #[test]
    fn entering_a_missing_namespace_fails_clearly() {
        let ns = Netns { name: "ll-missing-ns-x".into() };
        let err = ns.enter_on_this_thread().unwrap_err();
        assert!(err.to_string().contains("/var/run/netns/ll-missing-ns-x"), "{err}");
        std::mem::forget(ns);
    }
}
