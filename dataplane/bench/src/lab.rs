//! The lab: h1 — mid — h2 in three namespaces, and what forwards in mid (the kernel, the floor forwarder or
//! switchd).

/// switchd's ports: (name, interface in mid, address).
use crate::config::switchd_config;
use crate::iproute2::{PathStats, SwitchdStats, link_mac, link_stats};
use crate::sockets::wait_readable;
use crate::stop::{check_stop, stopped};
use crate::{BUSY_POLL_US, Forwarder};
use anyhow::{Context, bail, ensure};
use lossless_dataplane::io::PortBackend;
use lossless_dataplane::io::afpacket::AfPacketPort;
use lossless_dataplane::wire::EthernetAddress;
use lossless_proto::v1 as pb;
use lossless_testkit::{Client, Log, Netns, SwitchdCommand, netns};
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const SW_PORTS: [(&str, &str, &str); 2] =
    [("Ethernet0", "m0", "10.1.0.1/24"), ("Ethernet4", "m1", "10.2.0.1/24")];
pub const ROUTER_MAC: [u8; 6] = [0x02, 0x4c, 0x53, 0x00, 0x00, 0x01];
pub const H1_IP: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 2);
pub const H2_IP: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 2);
/// How long switchd may take to empty its queues before a run.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// The three namespaces and, in switchd mode, the switchd process. Field order matters for Drop: switchd
/// stops before the namespaces go.
pub struct Lab {
    pub switchd: Option<Switchd>,
    pub floor: Option<Floor>,
    pub fwd: Forwarder,
    pub h1: Netns,
    pub mid: Netns,
    pub h2: Netns,
    pub router_mac: EthernetAddress,
}

impl Lab {
    pub fn build(fwd: Forwarder, switchd_bin: Option<&Path>, extra: &[String]) -> anyhow::Result<Lab> {
        let h1 = netns::unique("fbh1-")?;
        let mid = netns::unique("fbmid-")?;
        let h2 = netns::unique("fbh2-")?;
        h1.veth("eth0", &mid, "m0")?;
        mid.veth("m1", &h2, "eth0")?;
        h1.ip(&["addr", "add", "10.1.0.2/24", "dev", "eth0"])?;
        h2.ip(&["addr", "add", "10.2.0.2/24", "dev", "eth0"])?;
        let h1_mac = link_mac(&h1, "eth0")?;
        let h2_mac = link_mac(&h2, "eth0")?;
        let mut floor = None;
        let (switchd, router_mac) = match fwd {
            Forwarder::Floor | Forwarder::FloorSpin => {
                floor = Some(Floor::start(&mid, h2_mac, fwd == Forwarder::FloorSpin)?);
                (None, link_mac(&mid, "m0")?)
            }
            Forwarder::Kernel => {
                mid.ip(&["addr", "add", "10.1.0.1/24", "dev", "m0"])?;
                mid.ip(&["addr", "add", "10.2.0.1/24", "dev", "m1"])?;
                mid.run_in_checked(&["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
                for (ip, mac, dev) in [(H1_IP, h1_mac, "m0"), (H2_IP, h2_mac, "m1")] {
                    let (ip, mac) = (ip.to_string(), mac.to_string());
                    mid.ip(&["neigh", "replace", &ip, "lladdr", &mac, "dev", dev, "nud", "permanent"])?;
                }
                (None, link_mac(&mid, "m0")?)
            }
            Forwarder::Switchd | Forwarder::SwitchdPoll => {
                let bin = switchd_bin.context("no switchd binary")?;
                let mut extra = extra.to_vec();
                if fwd == Forwarder::SwitchdPoll {
                    extra.push(format!("--busy-poll-us={BUSY_POLL_US}"));
                }
                let extra = &extra;
                let config = switchd_config(h1_mac, h2_mac)?;
                (Some(Switchd::start(bin, extra, &mid, &config)?), EthernetAddress(ROUTER_MAC))
            }
        };
        Ok(Lab { switchd, floor, fwd, h1, mid, h2, router_mac })
    }

    pub fn switchd_pid(&self) -> Option<u32> {
        self.switchd.as_ref().map(Switchd::pid)
    }

    pub fn check_forwarder_alive(&mut self) -> anyhow::Result<()> {
        if let Some(floor) = self.floor.take() {
            floor.stop()?;
        }
        if let Some(sw) = self.switchd.as_mut()
            && let Some(status) = sw.try_wait()?
        {
            bail!("switchd exited during the run: {status}");
        }
        Ok(())
    }

    /// Kernel counters along the path (whole-run deltas are taken around each throughput run).
    pub fn path_stats(&self) -> anyhow::Result<PathStats> {
        Ok(PathStats {
            m0: link_stats(&self.mid, "m0")?,
            m1: link_stats(&self.mid, "m1")?,
            h2: link_stats(&self.h2, "eth0")?,
        })
    }
}

/// The floor: the least a user-space forwarder on AF_PACKET sockets does, in a thread of this process in
/// mid — receive a batch on m0 (from the ring), set the Ethernet addresses, decrement the TTL and redo the
/// IPv4 header checksum, send the batch on m1 (sendmmsg, or the TX ring for bursts) — with no lookup, no
/// queue and no QoS. Measured like the others, it tells how much of switchd's distance to the kernel is the
/// cost of leaving the kernel at all on this machine (two more thread wake-ups and copies per frame), and how
/// much is switchd's own.
pub struct Floor {
    pub stop: Arc<AtomicBool>,
    pub thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Floor {
    pub fn start(mid: &Netns, h2_mac: EthernetAddress, spin: bool) -> anyhow::Result<Floor> {
        let (mut m0, mut m1) = mid
            .within(|| Ok((AfPacketPort::open("m0")?, AfPacketPort::open("m1")?)))
            .context("floor: opening m0 and m1 in mid")?;
        let m1_mac = link_mac(mid, "m1")?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread =
            std::thread::Builder::new().name("floor".into()).spawn(move || -> anyhow::Result<()> {
                let mut batch = Vec::with_capacity(64);
                while !flag.load(Ordering::Relaxed) {
                    batch.clear();
                    if m0.recv_batch(&mut batch, 64)? == 0 {
                        if spin {
                            std::hint::spin_loop();
                        } else {
                            wait_readable(m0.raw_fd(), 10);
                        }
                        continue;
                    }
                    for frame in &mut batch {
                        route_in_place(frame, h2_mac, m1_mac);
                    }
                    let mut sent = 0;
                    while sent < batch.len() && !flag.load(Ordering::Relaxed) {
                        sent += m1.send_batch(&batch[sent..])?;
                    }
                }
                Ok(())
            })?;
        Ok(Floor { stop, thread: Some(thread) })
    }

    /// Stops the thread; its error, if it failed.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => bail!("the floor forwarder panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What a router does to an IPv4 frame: new Ethernet addresses, TTL − 1, header checksum redone (anything
/// else passes untouched).
pub fn route_in_place(frame: &mut [u8], dst: EthernetAddress, src: EthernetAddress) {
    use lossless_dataplane::wire::{EtherType, EthernetFrame, Ipv4Packet};
    let Ok(mut eth) = EthernetFrame::new_checked(frame) else { return };
    if eth.ethertype() != EtherType::Ipv4 {
        return;
    }
    let Ok(mut ip) = Ipv4Packet::new_checked(eth.payload_mut()) else { return };
    ip.set_ttl(ip.ttl().saturating_sub(1));
    ip.fill_checksum();
    eth.set_dst_addr(dst);
    eth.set_src_addr(src);
}

/// The switchd process in mid and its gRPC client (see `lossless_testkit::Switchd`).
pub struct Switchd {
    client: Option<Client>,
    tokio: Option<tokio::runtime::Runtime>,
    process: lossless_testkit::Switchd,
}

impl Switchd {
    pub fn start(bin: &Path, extra: &[String], mid: &Netns, config_yaml: &str) -> anyhow::Result<Switchd> {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let mut process = SwitchdCommand::new(bin)
            .netns(mid)
            .name("fwdbench")
            .config_text("fwdbench.yaml", config_yaml)
            .port(SW_PORTS[0].0, SW_PORTS[0].1)
            .port(SW_PORTS[1].0, SW_PORTS[1].1)
            .args(extra)
            .env("RUST_LOG", "warn")
            .log(Log::Inherit)
            .stop_timeout(Duration::from_secs(5))
            .spawn()
            .context("starting switchd")?;
        let client = tokio.block_on(process.ready_unless(stopped))?;
        eprintln!("   switchd pid {} up (gRPC {})", process.pid(), process.endpoint());
        Ok(Switchd { client: Some(client), tokio: Some(tokio), process })
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Its exit status if it has exited.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.process.try_wait()
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.tokio.as_ref().expect("the runtime lives until drop")
    }

    /// Frames waiting in switchd's egress queues now.
    fn queued(&mut self) -> anyhow::Result<u64> {
        let mut client = self.client.clone().context("no gRPC client")?;
        let c = self.rt().block_on(client.get_counters(pb::GetCountersRequest {}))?.into_inner();
        Ok(c.ports.iter().flat_map(|p| p.queue_depth.iter()).sum())
    }

    /// Waits until switchd's queues are empty, so that a run does not start behind the previous one's
    /// backlog; returns how long that took.
    pub fn wait_drained(&mut self) -> anyhow::Result<Duration> {
        let start = Instant::now();
        while self.queued()? > 0 {
            check_stop()?;
            ensure!(start.elapsed() < DRAIN_LIMIT, "switchd's queues did not drain within {DRAIN_LIMIT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(start.elapsed())
    }

    pub fn counters(&mut self) -> anyhow::Result<SwitchdStats> {
        let mut client = self.client.clone().context("no gRPC client")?;
        let c = self.rt().block_on(client.get_counters(pb::GetCountersRequest {}))?.into_inner();
        let port = |name: &str| c.ports.iter().find(|p| p.name == name).cloned();
        let e0 = port(SW_PORTS[0].0).context("no Ethernet0 counters")?;
        let e4 = port(SW_PORTS[1].0).context("no Ethernet4 counters")?;
        let q3 = e4.queues.get(3).cloned().unwrap_or_default();
        Ok(SwitchdStats {
            rx_ok: e0.rx_ok,
            rx_drp: e0.rx_drp,
            pg3_packets: e0.pgs.get(3).map_or(0, |p| p.packets),
            pfc_tx: e0.pfc.iter().map(|p| p.tx).sum(),
            tx_ok: e4.tx_ok,
            tx_drp: e4.tx_drp,
            q3_packets: q3.packets,
            q3_dropped: q3.dropped_packets + q3.wred_dropped_packets,
            q3_ecn_marked: q3.ecn_marked_packets,
            e4_pfc_rx: e4.pfc.iter().map(|p| p.rx).sum(),
            e4_trapped: e4.trapped,
            drop_reasons: e0.drop_reasons.into_iter().collect(),
        })
    }
}

impl Drop for Switchd {
    fn drop(&mut self) {
        // Close the gRPC connection first: switchd waits up to 5 s for open connections when it stops. Then
        // `process` drops: SIGTERM (switchd stops cleanly and removes its socket), SIGKILL if stuck, reaped.
        self.client = None;
        if let Some(rt) = self.tokio.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::{DST_PORT, SRC_PORT};
    use lossless_dataplane::wire::build::Ipv4Flow;
    use lossless_dataplane::wire::ip::Ecn;

    #[test]
    fn the_floor_routes_like_a_router() {
        use lossless_dataplane::wire::{EthernetFrame, Ipv4Packet};
        let (a, b, r) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 3]);
        let flow = Ipv4Flow {
            src_mac: EthernetAddress(a),
            dst_mac: EthernetAddress(r),
            src_ip: H1_IP,
            dst_ip: H2_IP,
            src_port: SRC_PORT,
            dscp: 3,
            ecn: Ecn::Ect0,
            ttl: 64,
        };
        let mut frame = flow.udp(DST_PORT, &[0u8; 30]);
        route_in_place(&mut frame, EthernetAddress(b), EthernetAddress(r));
        let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
        assert_eq!((eth.dst_addr(), eth.src_addr()), (EthernetAddress(b), EthernetAddress(r)));
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum(), "header checksum redone");
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let before = arp.clone();
        route_in_place(&mut arp, EthernetAddress(b), EthernetAddress(r));
        assert_eq!(arp, before, "only IPv4 is touched");
    }
}
