//! The receive pipeline (`rx_pipeline.rs`) driven by hand: data frames from a real sender NIC fed to a
//! receiver at chosen instants, and what the receiver puts on its line (PFC) read back. Expected instants
//! are queueing arithmetic on the configured costs, worked out in each test.

use super::*;
use crate::wire::{MacControlRepr, PfcRepr, decode, mac_control};

const B_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// IP MTU 1068: 1024 bytes of BTH payload per packet, four packets to a 4 KiB page.
const MTU: u32 = 1068;
const PAYLOAD: u64 = 1024;

/// `n` data frames of one flow (one QP) from a sender NIC at `src_ip` to B, packets 0, 1, ... of the flow.
fn data_frames(n: usize, flow_id: u32, src_ip: Ipv4Addr) -> Vec<Vec<u8>> {
    let mut a = Nic::new(NicConfig { mtu: MTU, ip: src_ip, ..NicConfig::default() }).unwrap();
    a.add_flow(FlowConfig {
        id: flow_id,
        dst_ip: B_IP,
        dst_mac: B_MAC,
        dst_qp: 0x11,
        ..FlowConfig::default()
    })
    .unwrap();
    let mut frames = Vec::new();
    let mut t = 0;
    while frames.len() < n {
        a.handle_timeout(Instant::from_ns(t));
        if let Some(f) = a.poll_transmit(Instant::from_ns(t)) {
            frames.push(f);
        }
        t = a.poll_at().unwrap().as_ns().max(t + 1);
    }
    frames
}

fn receiver(rx: RxPipelineConfig) -> Nic {
    Nic::new(NicConfig { mac: B_MAC, ip: B_IP, mtu: MTU, rx_pipeline: rx, ..NicConfig::default() }).unwrap()
}

/// The PFC frames the NIC sends at `t` (it is polled until it has nothing more).
fn pfc_sent(nic: &mut Nic, t: u64) -> Vec<PfcRepr> {
    nic.handle_timeout(Instant::from_ns(t));
    let mut out = Vec::new();
    while let Some(f) = nic.poll_transmit(Instant::from_ns(t)) {
        if let Ok(d) = decode(&f)
            && let L3::MacControl(MacControlRepr::Pfc(p)) = d.l3
        {
            out.push(p);
        }
    }
    out
}

#[test]
fn without_a_buffer_frames_are_consumed_on_arrival() {
    let mut b = receiver(RxPipelineConfig::default());
    for (i, f) in data_frames(3, 1, A_IP).iter().enumerate() {
        b.handle_frame(f, Instant::from_ns(100 * i as u64));
    }
    assert_eq!(b.rx_keys().count(), 1);
    let key = b.rx_keys().next().unwrap();
    assert_eq!(b.rx_stats(key.0, key.1).unwrap().received_packets, 3);
    assert!(b.rx_pipeline_stats().is_none());
}

#[test]
fn the_buffer_fills_at_arrival_minus_service_rate_xoff_at_the_threshold_xon_after_draining() {
    // A frame every 1000 ns, served in 2000 ns: after arrival k (at k µs) the buffer holds k + 1 − ⌊k/2⌋
    // frames (the first finishes at 2 µs, one more every 2 µs), so it reaches 10 frames at arrival 17.
    let frames = data_frames(40, 1, A_IP);
    let len = frames[0].len() as u64;
    let rx = RxPipelineConfig {
        buffer_bytes: 40 * len,
        xoff_bytes: 10 * len,
        xon_bytes: 4 * len,
        per_packet_ns: 2_000,
        ..RxPipelineConfig::default()
    };
    let mut b = receiver(rx);
    let mut xoff_at = None;
    for (k, f) in frames.iter().take(25).enumerate() {
        let t = k as u64 * 1_000;
        b.handle_frame(f, Instant::from_ns(t));
        let occupancy = b.rx_pipeline_stats().unwrap().occupancy_bytes;
        assert_eq!(occupancy, (k as u64 + 1 - k as u64 / 2) * len, "after arrival {k}");
        let sent = pfc_sent(&mut b, t);
        if !sent.is_empty() && xoff_at.is_none() {
            assert_eq!((sent[0].class_enable, sent[0].time[3], sent[0].time[4]), (0b1_1000, 0xffff, 0xffff));
            xoff_at = Some(k);
        }
    }
    assert_eq!(xoff_at, Some(17));
    assert_eq!(b.rx_pipeline_stats().unwrap().xoff_events, 1);
    // Arrivals stop after 24 (at 24 µs), holding 24 + 1 − 12 = 13 frames; completions continue every
    // 2 µs (the 12th finished at 24 µs, the 13th at 26 µs). Down to 4 frames takes 9 more completions: the
    // XON goes with the 21st, at 24 + 9 × 2 = 42 µs.
    let mut xon_at = None;
    let mut t = 24_001;
    while xon_at.is_none() && t < 100_000 {
        t = b.poll_at().unwrap().as_ns();
        let sent = pfc_sent(&mut b, t);
        if let Some(p) = sent.iter().find(|p| p.time[3] == 0) {
            assert_eq!(p.class_enable, 0b1_1000);
            xon_at = Some(t);
        }
    }
    assert_eq!(xon_at, Some(42_000));
    let stats = b.rx_pipeline_stats().unwrap();
    assert_eq!(stats.occupancy_bytes, 4 * len);
    // What the pipeline finished reached the receiving QP; the rest is still in the buffer.
    let key = b.rx_keys().next().unwrap();
    assert_eq!(b.rx_stats(key.0, key.1).unwrap().received_packets, 21);
}

#[test]
fn a_stuck_pipeline_keeps_pausing_and_the_nic_watchdog_stops_it_after_the_set_time() {
    let frames = data_frames(30, 1, A_IP);
    let len = frames[0].len() as u64;
    let rx = |watchdog_ns| RxPipelineConfig {
        buffer_bytes: 20 * len,
        xoff_bytes: 12 * len,
        xon_bytes: 4 * len,
        watchdog_ns,
        ..RxPipelineConfig::default()
    };
    // 65535 quanta at 100 Gb/s = 335,539 ns of pause; refreshed every half of it.
    let refresh_ns = mac_control::quanta_to_ns(0xffff, 100_000) / 2;
    for watchdog_ns in [0, 1_000_000] {
        let mut b = receiver(rx(watchdog_ns));
        b.set_rx_stuck(true, Instant::from_ns(0));
        for (k, f) in frames.iter().enumerate() {
            b.handle_frame(f, Instant::from_ns(10 + k as u64 * 100));
        }
        let stats = b.rx_pipeline_stats().unwrap();
        assert_eq!((stats.occupancy_bytes, stats.dropped_frames, stats.processed_frames), (20 * len, 10, 0));
        assert_eq!(b.counters().rx_buffer_drops, 10);
        let first = pfc_sent(&mut b, 2_000);
        assert_eq!(first.len(), 1, "one XOFF when the 12th frame arrived");
        // Follow the NIC for 3 ms, collecting the PFC frames it sends.
        let mut sent = Vec::new();
        let mut t = 2_000;
        while let Some(next) = b.poll_at().map(Instant::as_ns).filter(|&n| n <= 3_000_000) {
            t = next.max(t + 1);
            sent.extend(pfc_sent(&mut b, t).into_iter().map(|p| (t, p)));
        }
        assert!(sent.iter().all(|(_, p)| p.time[3] == 0xffff), "never an XON: nothing drains");
        if watchdog_ns == 0 {
            // Refreshed for as long as it stays stuck: about 3 ms / refresh interval.
            assert!(sent.len() as u64 >= 3_000_000 / refresh_ns - 1, "{} refreshes", sent.len());
            assert_eq!(b.counters().rx_pause_watchdog_events, 0);
        } else {
            // The watchdog counts from the last progress: the first frame into the empty buffer at 10 ns.
            assert!(sent.iter().all(|(at, _)| *at < 10 + watchdog_ns), "{sent:?}");
            assert_eq!(sent.len() as u64, watchdog_ns / refresh_ns);
            assert_eq!(b.counters().rx_pause_watchdog_events, 1);
            // Still stuck: more data is dropped, and no pause goes out.
            b.handle_frame(&frames[0], Instant::from_ns(3_000_001));
            assert_eq!(b.rx_pipeline_stats().unwrap().dropped_frames, 11);
            assert!(pfc_sent(&mut b, 3_000_001).is_empty());
            // Unstuck: it drains (nothing costs time here), all at once.
            b.set_rx_stuck(false, Instant::from_ns(4_000_000));
            b.handle_timeout(Instant::from_ns(4_000_000));
            assert_eq!(b.rx_pipeline_stats().unwrap().processed_frames, 20);
        }
    }
}

#[test]
fn translation_cache_misses_cost_what_is_configured() {
    // Sixteen 1024-byte payloads of one QP, packets 0..15: 16 KiB, four 4 KiB pages or part of one
    // 2 MiB page. A miss costs 500 ns; nothing else costs anything. All frames wait in a stuck pipeline,
    // which is released at 1 ms: the last one finishes 500 ns × misses later. With 4 KiB pages packets 0,
    // 4, 8 and 12 start a page, so packets 12..15 finish together; with 2 MiB pages all finish after the
    // first miss.
    let frames = data_frames(16, 1, A_IP);
    let rx = |page_bytes| RxPipelineConfig {
        buffer_bytes: 1 << 20,
        xoff_bytes: 1 << 19,
        xon_bytes: 1 << 18,
        page_bytes,
        page_cache_entries: 8,
        page_miss_ns: 500,
        region_bytes: 4 << 20,
        ..RxPipelineConfig::default()
    };
    for (page_bytes, misses, finished_before) in [(4096, 4, 12), (2 << 20, 1, 0)] {
        let mut b = receiver(rx(page_bytes));
        b.set_rx_stuck(true, Instant::from_ns(0));
        for f in &frames {
            b.handle_frame(f, Instant::from_ns(10));
        }
        b.set_rx_stuck(false, Instant::from_ns(1_000_000));
        let done = 1_000_000 + 500 * misses;
        b.handle_timeout(Instant::from_ns(done - 1));
        assert_eq!(b.rx_pipeline_stats().unwrap().processed_frames, finished_before, "page {page_bytes}");
        b.handle_timeout(Instant::from_ns(done));
        let stats = b.rx_pipeline_stats().unwrap();
        assert_eq!((stats.processed_frames, stats.page_misses), (16, misses), "page {page_bytes}");
        assert_eq!(stats.page_hits, 16 * PAYLOAD.div_ceil(page_bytes.min(PAYLOAD)) - misses);
    }
}

#[test]
fn a_cache_smaller_than_the_pages_in_use_misses_on_every_page() {
    // Two QPs interleaved, 4 KiB pages, a cache of one entry: each packet's page was evicted by the other
    // QP's, so all 16 touches miss; with two entries only the four new pages of each QP miss.
    let (a, b) = (data_frames(8, 1, A_IP), data_frames(8, 1, Ipv4Addr::new(10, 0, 0, 9)));
    for (entries, misses) in [(1, 16), (2, 4)] {
        let mut nic = receiver(RxPipelineConfig {
            buffer_bytes: 1 << 20,
            xoff_bytes: 1 << 19,
            xon_bytes: 0,
            page_cache_entries: entries,
            page_miss_ns: 1,
            ..RxPipelineConfig::default()
        });
        for (x, y) in a.iter().zip(&b) {
            nic.handle_frame(x, Instant::from_ns(0));
            nic.handle_frame(y, Instant::from_ns(0));
        }
        assert_eq!(nic.rx_pipeline_stats().unwrap().page_misses, misses, "{entries} entries");
    }
}

#[test]
fn bad_pipeline_settings_are_refused_naming_the_field() {
    let cfg = |rx| NicConfig { rx_pipeline: rx, ..NicConfig::default() };
    let e = Nic::new(cfg(RxPipelineConfig { buffer_bytes: 1000, xoff_bytes: 2000, ..Default::default() }))
        .unwrap_err()
        .to_string();
    assert!(e.contains("NicConfig.rx_pipeline: xoff_bytes: 2000 is outside 1..=1000"), "{e}");
    let e = Nic::new(cfg(RxPipelineConfig {
        buffer_bytes: 1000,
        xoff_bytes: 500,
        xon_bytes: 500,
        ..Default::default()
    }))
    .unwrap_err()
    .to_string();
    assert!(e.contains("xon_bytes: 500 is not below xoff_bytes 500"), "{e}");
}
