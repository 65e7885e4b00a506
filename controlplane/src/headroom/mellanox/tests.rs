//! The formula term by term, by hand, and the ASIC_TABLE figures.

use super::*;
use crate::show::thousands;

const HUNDRED_PERCENT: TrafficPattern = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 100 };

fn term_bytes(h: &Headroom) -> Vec<u64> {
    h.terms.iter().map(|(_, bytes)| *bytes).collect()
}

/// An ASIC, its table key, cell, pipeline, mac_phy, peer response, reserved and max shared headroom.
type Figures = (Asic, &'static str, u32, f64, f64, f64, u32, u32);

/// `asic_table.j2` and sonic-vs's `asic_table.json`, field by field.
#[test]
fn asic_table_figures() {
    let figures: Vec<Figures> = Asic::ALL
        .iter()
        .map(|a| {
            let p = a.params();
            (
                *a,
                a.table_key(),
                p.cell_size_bytes,
                p.pipeline_latency_kb,
                p.mac_phy_delay_kb,
                p.peer_response_time_kb,
                p.port_reserved_shp_cells,
                p.port_max_shp_cells,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (Asic::Vs, "VS-ASIC", 128, 18.0, 0.8, 3.8, 0, 0),
            (Asic::Spectrum1, "MELLANOX-SPECTRUM", 96, 19.0, 0.8, 3.8, 20, 8192),
            (Asic::Spectrum2, "MELLANOX-SPECTRUM-2", 144, 19.0, 0.8, 3.8, 20, 8192),
            (Asic::Spectrum3, "MELLANOX-SPECTRUM-3", 144, 19.0, 0.8, 3.8, 20, 8192),
            (Asic::Spectrum4, "MELLANOX-SPECTRUM-4", 192, 19.0, 0.8, 3.8, 20, 8192),
            (Asic::Spectrum5, "MELLANOX-SPECTRUM-5", 192, 19.0, 0.8, 3.8, 20, 6144),
            (Asic::Spectrum6, "MELLANOX-SPECTRUM-6", 256, 42.0, 0.8, 3.8, 20, 6144),
        ]
    );
    assert_eq!(Asic::Spectrum4.params().port_max_shared_headroom_bytes(), (8192 + 20) * 192);
    assert_eq!(AsicParams::vs(), Asic::Vs.params());
    assert_eq!(AsicParams::spectrum1(), Asic::Spectrum1.params());
    assert_eq!(Asic::Vs.params().formula, FormulaOptions::MASTER);
}

#[test]
fn asics_by_name_platform_and_hwsku() {
    for asic in Asic::ALL {
        assert_eq!(Asic::from_name(asic.cli_name()), Some(asic));
        assert_eq!(Asic::from_name(asic.table_key()), Some(asic));
        assert_eq!(Asic::from_name(asic.label()), Some(asic));
    }
    assert_eq!(Asic::from_name("SP3"), Some(Asic::Spectrum3));
    assert_eq!(Asic::from_name("tomahawk"), None);
    assert_eq!(Asic::for_platform("x86_64-mlnx_msn3800-r0"), Some(Asic::Spectrum2));
    assert_eq!(Asic::for_platform("x86_64-nvidia_sn6810_ld-r0"), Some(Asic::Spectrum6));
    assert_eq!(Asic::for_platform("x86_64-dell_s6100_c2538-r0"), None);
    let hwskus = [
        ("ACS-MSN2700", Some(Asic::Spectrum1)),
        ("ACS-SN2201", Some(Asic::Spectrum1)),
        ("Mellanox-SN3800-D112C8", Some(Asic::Spectrum2)),
        ("Mellanox-SN4600C-D24C52", Some(Asic::Spectrum3)),
        ("Mellanox-SN4280-O28", Some(Asic::Spectrum3)),
        ("Mellanox-SN5610N-C256S2", Some(Asic::Spectrum4)),
        ("Mellanox-SN5640-C512S2", Some(Asic::Spectrum5)),
        ("ACS-SN6600_LD", Some(Asic::Spectrum6)),
        ("Force10-S6100", None),
        ("Mellanox-SN9999", None),
    ];
    for (hwsku, asic) in hwskus {
        assert_eq!(Asic::for_hwsku(hwsku), asic, "{hwsku}");
    }
    assert_eq!(Asic::platform_gearbox_delay_ns("x86_64-mlnx_msn3800-r0"), 400);
    assert_eq!(Asic::platform_gearbox_delay_ns("x86_64-mlnx_msn3700-r0"), 0);
}

#[test]
fn formula_revisions_by_name() {
    for (name, options) in FormulaOptions::NAMED {
        assert_eq!(FormulaOptions::from_name(name), Some(options));
        assert_eq!(options.name(), name);
    }
    let custom = FormulaOptions { tile_bytes: false, ..FormulaOptions::MASTER };
    assert_eq!(custom.name(), "custom");
    assert_eq!(FormulaOptions::from_name("2019"), None);
}

/// sonic-vs (cell 128, pipeline 18 KB, mac_phy 0.8 KB), 100G, 5 m, port MTU 9100, lossless MTU 1024,
/// 100 % small packets, by hand:
///
/// ```text
/// worst_case_factor = ⌈2·128 / 129⌉ = ⌈1.984496⌉                    = 2
/// cell_occupancy    = (100 − 100 + 100 · 2) / 100                    = 2
/// cable             = 2 · 5 · 100,000 · 10⁹ / 198,000,000 / 8000     =    631.31
/// mac_phy_delay     = 0.8 · 1024                                     =    819.20
/// peer_response     = 394 quanta · 512 / 8                           = 25,216
/// propagation_delay = 9,100 + 631.31 + 819.20 + 25,216               = 35,766.51
/// xoff              = 1,024 + 35,766.51 · 2 = 72,557.0 → 71 KB       = 72,704
/// xon               = 18 · 1024                                      = 18,432
/// size              = 18,432 + 72,704                                = 91,136   (SHP: 18,432)
/// ```
#[test]
fn dynamic_formula_on_vs_by_hand() {
    let port = PortParams::new(100_000, 5, 9100);
    let h = sonic_dynamic(&AsicParams::vs(), &port, &HUNDRED_PERCENT, false);
    assert_eq!((h.xon, h.xoff, h.size), (18_432, 72_704, 91_136));
    assert_eq!(term_bytes(&h), [9_100, 631, 819, 25_216, 35_767, 71_533, 1_024, 18_432]);
    assert!(h.terms[3].0.contains("394 pause quanta"), "{:?}", h.terms[3]);
    assert_eq!(h.terms[5].0, "× cell_occupancy 2.0000 (factor 2 = ⌈1.9845⌉, 100.0 % small by bytes)");

    let shp = sonic_dynamic(&AsicParams::vs(), &port, &HUNDRED_PERCENT, true);
    assert_eq!((shp.xon, shp.xoff, shp.size), (18_432, 72_704, 18_432));
}

/// 50 % small packets (`buffers_config.j2`'s), lossless MTU 1024, the vs port above (propagation
/// 35,766.51, worst-case factor 2):
///
/// ```text
/// by bytes:   small% = 100·64 / ((50·64 + 50·1024) / 100) = 11.7647; cell_occupancy = 1.117647
///             xoff = 1,024 + 35,766.51 · 1.117647 = 40,998.3 → 41,984
///             at 100 %: 1,024 + 35,766.51 · 2 = 72,557.0 → 72,704; 41,984 + 2,048 < 72,704: +2 KB = 44,032
/// by packets: cell_occupancy = (50 + 50 · 2) / 100 = 1.5; xoff = 54,673.8 → 55,296
/// ```
#[test]
fn small_packets_and_their_compensation() {
    let port = PortParams::new(100_000, 5, 9100);
    let half = TrafficPattern::BUFFERS_CONFIG;
    assert_eq!(half, TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 50 });
    let h = sonic_dynamic(&AsicParams::vs(), &port, &half, false);
    assert_eq!((h.xon, h.xoff, h.size), (18_432, 44_032, 62_464));
    let (label, bytes) = h.terms.iter().find(|(l, _)| l.starts_with("small-packet")).unwrap();
    assert_eq!(
        (label.as_str(), *bytes),
        ("small-packet compensation added (xoff at 100 % small packets: 72704)", 2048)
    );
    // With a shared headroom pool the Lua does not compensate.
    let shp = sonic_dynamic(&AsicParams::vs(), &port, &half, true);
    assert_eq!((shp.xoff, shp.size), (41_984, 18_432));
    // Before #4757, none either; before #3235, small packets were counted as packets.
    let mut asic = AsicParams { formula: FormulaOptions::SWSS_3235, ..AsicParams::vs() };
    assert_eq!(sonic_dynamic(&asic, &port, &half, false).xoff, 41_984);
    asic.formula.small_packets_by_bytes = false;
    assert_eq!(sonic_dynamic(&asic, &port, &half, false).xoff, 55_296);
    // 0 %: the Lua's "by bytes" expression still counts 6,400 / 1,024 = 6.25 %: 39,025.9 → 39,936, + 2 KB.
    let none = TrafficPattern { lossless_mtu: 1024, small_packet_percentage: 0 };
    assert_eq!(sonic_dynamic(&AsicParams::vs(), &port, &none, false).xoff, 41_984);
    // When the reduced xoff is within 2 KB of the 100 % one (here equal: lossless packets of 64 bytes are
    // all small), nothing is added.
    let tiny = TrafficPattern { lossless_mtu: 64, small_packet_percentage: 50 };
    let h = sonic_dynamic(&AsicParams::vs(), &port, &tiny, false);
    assert_eq!(h.xoff, 71_680);
    assert!(h.terms.iter().any(|(l, b)| l.starts_with("small-packet compensation not needed") && *b == 0));
}

/// Spectrum-6 adds 18 KB after rounding (#4797), before the small-packet check. 10G, 5 m, 9100, 50 %:
/// cell 256 → factor 4; small% 11.7647 → cell_occupancy 1.352941; propagation 9,100 + 63.13 + 819.2 +
/// 67 · 64 = 14,270.33; xoff = 1,024 + 19,307.2 → 20,480 (the ACS-SN6600_LD row) + 18,432 = 38,912; at 100 %
/// 1,024 + 57,081.3 → 58,368, and 38,912 + 2,048 < 58,368: 40,960. xon 42 KB = 43,008.
#[test]
fn spectrum6_compensation() {
    let port = PortParams::new(10_000, 5, 9100);
    let pattern = TrafficPattern::BUFFERS_CONFIG;
    let h = sonic_dynamic(&Asic::Spectrum6.params(), &port, &pattern, false);
    assert_eq!((h.xon, h.xoff, h.size), (43_008, 40_960, 83_968));
    assert!(h.terms.contains(&("Spectrum-6 compensation".to_owned(), 18_432)), "{h}");
    let before = AsicParams { formula: FormulaOptions::SWSS_3235, ..Asic::Spectrum6.params() };
    let h = sonic_dynamic(&before, &port, &pattern, false);
    assert_eq!((h.xon, h.xoff, h.size), (43_008, 20_480, 63_488));
    // Only Spectrum-6: the key's last character, as the Lua tests it.
    let h = sonic_dynamic(&Asic::Spectrum5.params(), &port, &pattern, false);
    assert!(!h.terms.iter().any(|(l, _)| l.starts_with("Spectrum-6")), "{h}");
}

/// Spectrum-4/5: `speed / 1000 · 120 / 8` bytes on tile; 100G: 1,500. 100G, 5 m, 9100, 100 %: factor
/// 192/64 = 3; propagation 35,766.51 + 1,500 = 37,266.51; xoff = 1,024 + 111,799.5 → 113,664 (the
/// ACS-SN5600 table's row, at its port MTU 9216).
#[test]
fn tile_bytes_on_spectrum4_and_5() {
    let port = PortParams::new(100_000, 5, 9100);
    for asic in [Asic::Spectrum4, Asic::Spectrum5] {
        let h = sonic_dynamic(&asic.params(), &port, &HUNDRED_PERCENT, false);
        assert!(h.terms.contains(&("tile bytes, Spectrum-4/5 (speed / 1000 · 120 / 8)".to_owned(), 1_500)));
        assert_eq!(h.xoff, 113_664, "{asic}");
    }
    let h = sonic_dynamic(&Asic::Spectrum3.params(), &port, &HUNDRED_PERCENT, false);
    assert!(!h.terms.iter().any(|(l, _)| l.starts_with("tile")));
}

/// 8 lanes: xon is twice the pipeline latency (once `2 · pipeline − 1 KB`) and size carries the port MTU.
/// Spectrum-3, 400G, 5 m, 9100, 100 %: propagation 9,100 + 2,525.25 + 819.2 + 905 · 64 = 70,364.45;
/// xoff = ⌈1,024 + 70,364.45 · 3⌉₁ₖ = 212,992; xon 38 KB; size ⌈212,992 + 38,912 + 9,100⌉₁ₖ = 261,120.
#[test]
fn eight_lane_ports() {
    let asic = Asic::Spectrum3.params();
    let port = PortParams::new(400_000, 5, 9100).with_lanes(8);
    let h = sonic_dynamic(&asic, &port, &HUNDRED_PERCENT, false);
    assert_eq!((h.xon, h.xoff, h.size), (38_912, 212_992, 261_120));
    assert!(h.terms.contains(&("pipeline_latency (xon, doubled for 8 lanes)".to_owned(), 38_912)));
    assert!(h.terms.contains(&("8-lane overhead in size (port_mtu)".to_owned(), 9_100)));
    let shp = sonic_dynamic(&asic, &port, &HUNDRED_PERCENT, true);
    assert_eq!((shp.xon, shp.size), (38_912, 38_912));
    let old = AsicParams { formula: FormulaOptions::SWSS_1930, ..asic };
    assert_eq!(sonic_dynamic(&old, &port, &HUNDRED_PERCENT, false).xon, 37_888);
    let four = sonic_dynamic(&asic, &port.with_lanes(4), &HUNDRED_PERCENT, false);
    assert_eq!((four.xon, four.size), (19_456, 212_992 + 19_456));
}

/// The gearbox term as the Lua has it, `speed · delay / (8 · 1024)`: 100 ns at 100G is 1,220.7 bytes a
/// way, 2,441 both ways (exactly, 1,250 and 2,500).
#[test]
fn gearbox_divides_by_8_kib() {
    let asic = AsicParams { gearbox_delay_ns: 100, ..AsicParams::vs() };
    let h = sonic_dynamic(&asic, &PortParams::new(100_000, 5, 9100), &HUNDRED_PERCENT, false);
    assert_eq!(h.terms[2], ("gearbox 2 × 100 ns (÷ 8·1024)".to_owned(), 2_441));
    let exact = AsicParams { formula: FormulaOptions::MELLANOX_TABLES, ..asic };
    let h = sonic_dynamic(&exact, &PortParams::new(100_000, 5, 9100), &HUNDRED_PERCENT, false);
    assert_eq!(h.terms[2], ("gearbox 2 × 100 ns (÷ 8·1000)".to_owned(), 2_500));
}

#[test]
fn cable_bytes_before_and_after_3235() {
    let port = PortParams::new(100_000, 300, 9100);
    let now = sonic_dynamic(&AsicParams::vs(), &port, &HUNDRED_PERCENT, false);
    let old = AsicParams { formula: FormulaOptions::SWSS_1930, ..AsicParams::vs() };
    let then = sonic_dynamic(&old, &port, &HUNDRED_PERCENT, false);
    // 2 · 300 · 100,000 · 10⁹ / 198,000,000 = 303,030,303; / 8000 = 37,879; / 8192 = 36,991.
    assert_eq!((now.terms[1].1, then.terms[1].1), (37_879, 36_991));
    assert!(then.terms[1].0.ends_with("(÷ 8·1024)"));
}

#[test]
fn peer_response_falls_back_to_the_asic_for_unknown_speeds() {
    let h = sonic_dynamic(&AsicParams::vs(), &PortParams::new(5_000, 5, 9100), &HUNDRED_PERCENT, false);
    let (label, bytes) = &h.terms[3];
    assert_eq!((label.as_str(), *bytes), ("peer_response_time (ASIC_TABLE 3.8 KB)", 3_891));
    assert_eq!(pause_quanta(800_000), Some(905));
    assert_eq!(pause_quanta(25_000), Some(80));
    assert_eq!(pause_quanta(5_000), None);
}

#[test]
fn shared_headroom_pool_from_the_over_subscribe_ratio() {
    // 32 lossless PGs of (19,456 + 38,912 − 19,456) on 16 ports, ratio 2.
    let pgs_xoff_sum = 32 * 38_912;
    let private = 16 * PRIVATE_HEADROOM_PER_PORT_BYTES;
    assert_eq!(shared_headroom_pool_size(pgs_xoff_sum, private, 2), (1_245_184 - 163_840) / 2);
    assert_eq!(shared_headroom_pool_size(10, 0, 3), 4);
    assert_eq!(shared_headroom_pool_size(100, 200, 2), SHARED_HEADROOM_POOL_FALLBACK_BYTES);
    assert_eq!(shared_headroom_pool_size(1_000_000, 0, 0), SHARED_HEADROOM_POOL_FALLBACK_BYTES);
}

#[test]
fn display_lists_every_term_in_bytes() {
    let h = sonic_dynamic(&AsicParams::vs(), &PortParams::new(100_000, 5, 9100), &HUNDRED_PERCENT, false);
    let text = h.to_string();
    let expected = "\
xon                                                                      18,432 bytes
xoff                                                                     72,704 bytes
size                                                                     91,136 bytes
  port_mtu                                                                9,100 bytes
  cable 5 m, round trip at 198,000,000 m/s (÷ 8·1000)                       631 bytes
  mac_phy_delay (ASIC_TABLE 0.8 KB)                                         819 bytes
  peer_response (394 pause quanta, IEEE 802.3 31B.3.7)                   25,216 bytes
  propagation_delay (sum of the above)                                   35,767 bytes
  × cell_occupancy 2.0000 (factor 2 = ⌈1.9845⌉, 100.0 % small by bytes)  71,533 bytes
  lossless_mtu                                                            1,024 bytes
  pipeline_latency (xon)                                                 18,432 bytes
";
    assert_eq!(text, expected);
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(12_345_678), "12,345,678");
}

#[test]
fn config_helpers() {
    let mut db = ConfigDb::default();
    assert_eq!(TrafficPattern::from_config(&db), Ok(None));
    assert!(!shp_enabled_in_config(&db));
    db.set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "mtu", "1024")
        .set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "small_packet_percentage", "50")
        .set("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "AZURE", "over_subscribe_ratio", "0")
        .set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "0");
    assert_eq!(TrafficPattern::from_config(&db), Ok(Some(TrafficPattern::BUFFERS_CONFIG)));
    assert!(!shp_enabled_in_config(&db));
    db.set("BUFFER_POOL", "ingress_lossless_pool", "xoff", "4194112");
    assert!(shp_enabled_in_config(&db));
    db.set("LOSSLESS_TRAFFIC_PATTERN", "AZURE", "small_packet_percentage", "101");
    let issue = TrafficPattern::from_config(&db).unwrap_err();
    assert_eq!(issue.location(), "LOSSLESS_TRAFFIC_PATTERN|AZURE|small_packet_percentage");
}
