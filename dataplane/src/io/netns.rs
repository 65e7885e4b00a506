//! Network namespaces and veth pairs for tests and tools, through iproute2 (`ip netns`, `ip link`).
//!
//! A [`Netns`] is created with a name the caller chooses (see [`unique_name`]) and deleted when dropped,
//! also while a panic unwinds. Interfaces inside go with it (a veth pair disappears when either end's
//! namespace does); a namespace a thread or socket still uses lives on, nameless, until they are gone.
//! Namespaces this module creates have IPv6 disabled, so the kernel sends no autoconfiguration frames
//! (router solicitations, MLD reports) that a frame-exact test would have to filter.

use super::afpacket::{ControlSocket, ethtool};
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
        Command::new("ip").args(["netns", "exec", &self.name]).args(args).output()
    }

    /// Like [`Netns::run_in`], but a non-zero exit status is an error carrying the command's stderr.
    pub fn run_in_checked(&self, args: &[&str]) -> io::Result<Output> {
        run_checked(Command::new("ip").args(["netns", "exec", &self.name]).args(args))
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
pub(crate) mod testing {
    //! What the backend tests share: a namespace with a veth pair, frames, and receiving with a deadline.

    use super::*;
    use crate::io::PortBackend;
    use std::time::{Duration, Instant};

    /// A fresh namespace, entered by the calling thread, holding the veth pair `sw0` — `h0`.
    pub fn lab() -> Netns {
        let ns = Netns::new(&unique_name("llio")).expect("creating a network namespace (run as root)");
        ns.veth_local("sw0", "h0").expect("creating a veth pair");
        ns.enter_on_this_thread().expect("entering the namespace");
        ns
    }

    /// A fresh namespace, entered, with `sw0` — `h0` left as the kernel makes veths (TX checksum offload,
    /// TSO/GSO on), `h0` holding 10.9.0.1/24 and a permanent neighbour 10.9.0.2, so a socket bound to
    /// 10.9.0.1 sends through `h0` to `sw0`.
    pub fn offload_lab() -> Netns {
        let ns = Netns::new(&unique_name("llof")).expect("creating a network namespace (run as root)");
        // By hand, not `veth_local`: that one turns the offloads off.
        ns.ip(&["link", "add", "sw0", "type", "veth", "peer", "name", "h0"]).unwrap();
        for dev in ["sw0", "h0"] {
            ns.ip(&["link", "set", "dev", dev, "up"]).unwrap();
        }
        let _ = ns.run_in(&["ethtool", "-K", "h0", "tx", "on", "gso", "on", "tx-udp-segmentation", "on"]);
        ns.ip(&["addr", "add", "10.9.0.1/24", "dev", "h0"]).unwrap();
        ns.ip(&["neigh", "add", "10.9.0.2", "lladdr", "02:00:00:00:00:0b", "dev", "h0", "nud", "permanent"])
            .unwrap();
        ns.enter_on_this_thread().expect("entering the namespace");
        ns
    }

    /// Sends `payload` as one datagram 10.9.0.1:4000 → 10.9.0.2:4791 from the kernel's UDP (see
    /// [`offload_lab`]), then checks the frame `port` received carries it with a valid UDP checksum.
    pub fn kernel_udp_arrives_with_valid_checksum(port: &mut dyn PortBackend) {
        use crate::wire::{EtherType, EthernetFrame, Ipv4Packet, UdpPacket};
        use std::net::{Ipv4Addr, UdpSocket};
        let socket = UdpSocket::bind("10.9.0.1:4000").unwrap();
        let payload: Vec<u8> = (0..=255u8).cycle().take(301).collect();
        socket.send_to(&payload, "10.9.0.2:4791").unwrap();
        let frames = recv_frames(port, 1);
        assert_eq!(frames.len(), 1, "the UDP frame did not arrive");
        let eth = EthernetFrame::new_checked(&frames[0][..]).unwrap();
        assert_eq!(eth.ethertype(), EtherType::Ipv4);
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert_eq!((ip.src_addr(), ip.dst_addr()), (Ipv4Addr::new(10, 9, 0, 1), Ipv4Addr::new(10, 9, 0, 2)));
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(udp.payload(), &payload[..]);
        assert_ne!(udp.checksum(), 0, "the kernel sent a UDP checksum");
        assert!(
            udp.verify_checksum_v4(ip.src_addr(), ip.dst_addr()),
            "UDP checksum {:#06x} invalid",
            udp.checksum()
        );
    }

    /// Receives until `n` frames arrived or two seconds passed.
    pub fn recv_frames(port: &mut dyn PortBackend, n: usize) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut frames = Vec::new();
        while frames.len() < n && Instant::now() < deadline {
            let want = n - frames.len();
            match port.recv_batch(&mut frames, want) {
                Ok(0) => wait_readable(port.raw_fd(), deadline),
                Ok(_) => {}
                Err(e) => panic!("{}: receive failed: {e}", port.name()),
            }
        }
        frames
    }

    /// Receives for `wait`, expecting nothing.
    pub fn recv_nothing(port: &mut dyn PortBackend, wait: Duration) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + wait;
        let mut frames = Vec::new();
        while Instant::now() < deadline {
            port.recv_batch(&mut frames, 64).expect("receive");
            wait_readable(port.raw_fd(), deadline);
        }
        frames
    }

    /// Sends every frame, retrying what the kernel did not take yet.
    pub fn send_all(port: &mut dyn PortBackend, frames: &[Vec<u8>]) {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut sent = 0;
        while sent < frames.len() {
            assert!(
                Instant::now() < deadline,
                "{}: only {sent} of {} frames sent",
                port.name(),
                frames.len()
            );
            sent += port.send_batch(&frames[sent..]).expect("send");
        }
    }

    #[allow(unsafe_code)]
    fn wait_readable(fd: i32, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(20));
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, exclusively borrowed for the call.
        unsafe { libc::poll(&mut pfd, 1, left.as_millis().max(1) as libc::c_int) };
    }

    /// A plain frame, a PFC XOFF to 01:80:C2:00:00:01, an 802.1Q-tagged frame (PCP 3, VID 100), a
    /// broadcast: the kinds a switch port must pass untouched.
    pub fn sample_frames() -> Vec<Vec<u8>> {
        use crate::wire::build::{Dot1q, ethernet};
        use crate::wire::{EtherType, EthernetAddress, MacControlRepr, PfcRepr, mac_control};
        let a = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
        let b = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
        let mut pfc = vec![0u8; mac_control::FRAME_LEN];
        MacControlRepr::Pfc(PfcRepr::xoff(0b0001_1000, 0xffff)).emit_frame(a, &mut pfc);
        let payload: Vec<u8> = (0..100u8).collect();
        vec![
            ethernet(a, b, None, EtherType::from(0x88b5), &payload),
            pfc,
            ethernet(a, b, Some(Dot1q { pcp: 3, dei: false, vid: 100 }), EtherType::from(0x88b5), &payload),
            ethernet(a, EthernetAddress::BROADCAST, None, EtherType::from(0x88b6), &payload[..10]),
        ]
    }

    /// A frame of `len` bytes with a numbered payload, unicast a → b.
    pub fn numbered_frame(len: usize, n: u32) -> Vec<u8> {
        let mut frame = vec![0u8; len];
        frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x0b]);
        frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x0a]);
        frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
        frame[14..18].copy_from_slice(&n.to_be_bytes());
        for (i, byte) in frame.iter_mut().enumerate().skip(18) {
            *byte = (i as u32).wrapping_mul(31).wrapping_add(n) as u8;
        }
        frame
    }
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
