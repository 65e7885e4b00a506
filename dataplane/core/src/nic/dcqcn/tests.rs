//! Trajectories of the reaction point against the firmware rules, and parameter handling.

use super::*;

/// The instant `ns` after the origin (the trajectories below are written in nanoseconds).
fn at(ns: u64) -> Instant {
    Instant::from_ns(ns)
}

const G100: u64 = 100_000_000_000;
/// NVIDIA's default `rpg_byte_reset` 32767 in its 64-byte unit (DCQCN Parameters table, DOC-2790).
const BYTE_RESET_DEFAULT_BYTES: u64 = 2_097_088;

fn timer_only() -> DcqcnParams {
    DcqcnParams { rpg_byte_reset_64bytes: 0, ..DcqcnParams::default() }
}

/// The firmware's α update, applied `n` times without a CNP, on α in 1/1024 with 20 more fractional bits
/// (as the reaction point keeps it).
fn decay_fine(a_1024: u32, n: u32) -> u64 {
    let mut a = u64::from(a_1024) << 20;
    for _ in 0..n {
        a = (1019 * a) >> 10;
    }
    a
}

/// The same in 1/1024.
fn decay(a_1024: u32, n: u32) -> u32 {
    (decay_fine(a_1024, n) >> 20) as u32
}

/// `rate` cut by α/2 (α in 2^-30).
fn cut(rate: u64, alpha_fine: u64) -> u64 {
    rate - ((u128::from(rate) * u128::from(alpha_fine)) >> 31) as u64
}

#[test]
fn first_cnp_cuts_after_the_monitor_period_with_decayed_alpha() {
    let mut rp = Dcqcn::new(timer_only(), G100);
    rp.on_cnp(at(0));
    assert_eq!(rp.rate_bps(), G100, "the first CNP only arms the check (rate_to_set_on_first_cnp = 0)");
    assert_eq!(rp.poll_at(), Some(at(4_001)));
    rp.handle_timeout(at(4_000));
    assert_eq!(rp.rate_bps(), G100);
    // α: 1023 → 1018 → 1013 → 1008 → 1003 at 1..4 µs.
    assert_eq!(rp.alpha_at(at(4_001)), 1003);
    assert_eq!(decay(1023, 4), 1003);
    rp.handle_timeout(at(4_001));
    // 100 G × (1 − α/2), α = 1023/1024 × (1019/1024)^4 = 0.97964: 51.018 Gb/s.
    assert_eq!(rp.rate_bps(), cut(G100, decay_fine(1023, 4)));
    assert_eq!(rp.rate_bps() / 1_000_000, 51_017);
    assert_eq!(rp.target_bps(), G100, "no clamp before a timer increase");
    assert_eq!(rp.decreases(), 1);
    assert_eq!(rp.poll_at(), Some(at(304_001)), "rate timer armed");
}

#[test]
fn recovery_follows_the_timer_stages() {
    let mut rp = Dcqcn::new(timer_only(), G100);
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    let r0 = cut(G100, decay_fine(1023, 4));
    // Stage 0 < F: fast recovery.
    rp.handle_timeout(at(304_000));
    assert_eq!(rp.rate_bps(), r0);
    rp.handle_timeout(at(304_001));
    let r1 = (r0 + G100).div_ceil(2);
    assert_eq!((rp.rate_bps(), rp.target_bps()), (r1, G100));
    // Stage 1 == F: additive increase (target already at the cap).
    rp.handle_timeout(at(604_001));
    let r2 = (r1 + G100).div_ceil(2);
    assert_eq!(rp.rate_bps(), r2);
    // A second CNP at 1 ms: α has decayed for 1000 ticks; the flag applies at the next tick, after the
    // decrease check at 1 000 001 (grid 1 + 4 µs·k). Target is clamped (the timer has fired).
    rp.handle_timeout(at(904_001));
    let r3 = (r2 + G100).div_ceil(2);
    assert_eq!(rp.rate_bps(), r3);
    rp.on_cnp(at(1_000_000));
    assert_eq!(rp.poll_at(), Some(at(1_000_001)));
    rp.handle_timeout(at(1_000_001));
    let alpha = decay_fine(1023, 1000);
    assert_eq!(rp.alpha_at(at(1_000_001)), decay(1023, 1000));
    // (1019/1024)^1000 = 0.0076: α is 7/1024 and more, which a 10-bit α would not keep.
    assert_eq!((alpha >> 20, (rp.alpha_f64_at(at(1_000_001)) * 1e4).round()), (7, 75.0));
    let r4 = cut(r3, alpha);
    assert_eq!((rp.rate_bps(), rp.target_bps()), (r4, r3));
    // The CNP flag raises α at the next tick: G·α/1024 + 5/1024.
    assert_eq!(rp.alpha_at(at(1_001_000)), ((((1019 * alpha) >> 10) + (5 << 20)) >> 20) as u32);
    assert_eq!(rp.poll_at(), Some(at(1_300_001)));
}

#[test]
fn hyper_increase_and_return_to_line_rate() {
    let p = DcqcnParams {
        rpg_byte_reset_64bytes: 0,
        rpg_ai_rate_mbps: 1_000,
        rpg_hai_rate_mbps: 10_000,
        ..timer_only()
    };
    let mut rp = Dcqcn::new(p, G100);
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    rp.on_cnp(at(300_000)); // clamps nothing yet (time stage 0): target stays 100 G
    rp.handle_timeout(at(304_001)); // decrease at 300 001 first, rate timer restarted to 600 001
    assert_eq!(rp.decreases(), 2);
    assert_eq!(rp.poll_at(), Some(at(600_001)));
    let mut t = 600_001;
    let mut steps = 0;
    while rp.is_limited() {
        rp.handle_timeout(at(t));
        t += 300_000;
        steps += 1;
        assert!(steps < 100);
    }
    assert_eq!((rp.rate_bps(), rp.target_bps(), rp.poll_at()), (G100, G100, None));
}

#[test]
fn hyper_stage_raises_target_by_hai() {
    let p = DcqcnParams { rpg_byte_reset_64bytes: 0, ..timer_only() };
    let mut rp = Dcqcn::new(p, G100);
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    rp.handle_timeout(at(304_001)); // FR (stage 0)
    rp.on_cnp(at(310_000));
    rp.handle_timeout(at(312_001)); // decrease with clamp: target = current
    let target = rp.target_bps();
    assert!(target < G100);
    rp.handle_timeout(at(612_001)); // stage 0: FR
    assert_eq!(rp.target_bps(), target);
    rp.handle_timeout(at(912_001)); // stage 1: AI
    assert_eq!(rp.target_bps(), target + 5_000_000);
    rp.handle_timeout(at(1_212_001)); // stage 2: HAI
    assert_eq!(rp.target_bps(), target + 55_000_000);
}

#[test]
fn byte_counter_drives_increases_while_limited() {
    let mut rp = Dcqcn::new(DcqcnParams::default(), G100);
    rp.on_sent(10_000_000);
    assert_eq!(rp.increases(), 0, "not rate-limited: the byte counter is off");
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    let r0 = rp.rate_bps();
    // NVIDIA's default 32767 counts 64-byte units: 2,097,088 bytes per event, not 32,767.
    rp.on_sent(32_767);
    assert_eq!(rp.rate_bps(), r0, "32,767 bytes are 1/64 of the byte counter");
    rp.on_sent(BYTE_RESET_DEFAULT_BYTES - 32_767 - 1);
    assert_eq!(rp.rate_bps(), r0);
    rp.on_sent(1);
    // Byte stage 0, time stage 0 → fast recovery.
    assert_eq!(rp.rate_bps(), (r0 + G100).div_ceil(2));
    rp.on_sent(BYTE_RESET_DEFAULT_BYTES);
    // Byte stage 1 = F, time stage 0 → additive increase (target capped at 100 G).
    assert_eq!(rp.rate_bps(), ((r0 + G100).div_ceil(2) + G100).div_ceil(2));
    assert_eq!(rp.increases(), 2);
}

/// NVIDIA's text for `clamp_tgt_rate_after_time_inc` ("the target rate should be updated if the
/// transmission rate was increased due to the timer, and not only due to the byte counter") and ns3-rdma's
/// `rpr_cnm_received`: a byte-counter increase since the last cut makes the next cut clamp the target,
/// whatever the flags; a cut with no increase since the previous one leaves it.
#[test]
fn a_cut_after_a_byte_counter_increase_clamps_the_target() {
    for (clamp_after_timer, label) in [(true, "NVIDIA's flags"), (false, "both flags off")] {
        let p = DcqcnParams { clamp_tgt_rate_after_time_inc: clamp_after_timer, ..DcqcnParams::default() };
        let mut rp = Dcqcn::new(p, G100);
        rp.on_cnp(at(0));
        rp.handle_timeout(at(4_001));
        let r0 = rp.rate_bps();
        assert_eq!(rp.target_bps(), G100, "{label}: no increase yet, no clamp");
        // A second cut with no increase in between: the target stays at the line rate.
        rp.on_cnp(at(5_000));
        rp.handle_timeout(at(8_001));
        let r1 = rp.rate_bps();
        assert!(r1 < r0);
        assert_eq!(
            rp.target_bps(),
            G100,
            "{label}: a cut without an increase since the last keeps the target"
        );
        // One byte-counter event (fast recovery toward the target), then a CNP.
        rp.on_sent(BYTE_RESET_DEFAULT_BYTES);
        let r2 = (r1 + G100).div_ceil(2);
        assert_eq!(rp.rate_bps(), r2);
        rp.on_cnp(at(9_000));
        rp.handle_timeout(at(12_001));
        assert_eq!(rp.target_bps(), r2, "{label}: the cut after a byte-counter increase clamps the target");
        assert!(rp.rate_bps() < r2);
    }
    // Without a byte counter (HPCC's model of the firmware) only the timer rule is left, as before.
    let mut rp = Dcqcn::new(timer_only(), G100);
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    rp.on_sent(1_000_000);
    rp.on_cnp(at(5_000));
    rp.handle_timeout(at(8_001));
    assert_eq!(rp.target_bps(), G100);
}

/// The byte-counter and timer stages of google/isekai's DCQCN test (`isekai/host/rdma/
/// rdma_roce_cc_dcqcn_test.cc`, `RateUpdate`, from "Test byte-based rate increase" on), which implements
/// NVIDIA's parameter table: the expected rates are that test's formulas (fast recovery `(rate +
/// target) / 2`; additive `target + ai` once the larger stage reaches `rpg_threshold`; hyper `target +
/// hai` only once *both* stages exceed it), evaluated here in b/s. isekai rounds down in Mb/s and the
/// model rounds up in b/s, so each step may differ by one bit per second.
#[test]
fn stages_follow_isekais_rate_update_sequence() {
    const AI: u64 = 5_000_000;
    const HAI: u64 = 50_000_000;
    let close = |got: u64, want: u64, what: &str| {
        assert!(got.abs_diff(want) <= 4, "{what}: {got} b/s, isekai's formula gives {want}");
    };
    let mut rp = Dcqcn::new(DcqcnParams::default(), G100);
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    // A timer increase, then a cut: the cut clamps the target (stages reset, byte count 0).
    rp.handle_timeout(at(304_001));
    rp.on_cnp(at(305_000));
    rp.handle_timeout(at(308_001));
    let (rate, target) = (rp.rate_bps(), rp.target_bps());
    assert!(rate < target && target < G100);
    // "Test byte-based rate increase": byte_reset × 64 bytes, stages (timer 0, byte 0): fast recovery.
    rp.on_sent(BYTE_RESET_DEFAULT_BYTES);
    close(rp.rate_bps(), (rate + target) / 2, "byte fast recovery");
    assert_eq!(rp.target_bps(), target);
    // "Test rate reduction after byte-based rate increase": the target is clamped to the rate.
    let rate = rp.rate_bps();
    rp.on_cnp(at(310_000));
    rp.handle_timeout(at(312_001));
    assert_eq!(rp.target_bps(), rate);
    let (rate, target) = (rp.rate_bps(), rp.target_bps());
    // "Test additive increase": two byte events; the second, at stages (0, 1), adds ai.
    rp.on_sent(2 * BYTE_RESET_DEFAULT_BYTES);
    assert_eq!(rp.target_bps(), target + AI);
    close(rp.rate_bps(), ((rate + target) / 2 + target + AI) / 2, "byte additive increase");
    // "Test hyper increase": timer events at stages (0, 2) and (1, 2) are additive (the smaller stage
    // is not above the threshold), the one at (2, 2) hyper.
    let mut t = 612_001;
    for (step, want_target_step) in
        [("timer at (0, 2)", AI), ("timer at (1, 2)", AI), ("timer at (2, 2)", HAI)]
    {
        let (rate, target) = (rp.rate_bps(), rp.target_bps());
        rp.handle_timeout(at(t - 1));
        assert_eq!(rp.rate_bps(), rate, "{step}: not before the timer");
        rp.handle_timeout(at(t));
        assert_eq!(rp.target_bps(), target + want_target_step, "{step}");
        close(rp.rate_bps(), (rate + target + want_target_step) / 2, step);
        t += 300_000;
    }
    // "Test rate reduction": a CNP between two timer events; the cut clamps and resets both stages.
    let rate = rp.rate_bps();
    let cnp_at = t - 200_000;
    rp.on_cnp(at(cnp_at));
    rp.handle_timeout(at(cnp_at + 4_000));
    assert_eq!(rp.target_bps(), rate);
    assert!(rp.rate_bps() < rate);
    let (rate, target) = (rp.rate_bps(), rp.target_bps());
    rp.on_sent(BYTE_RESET_DEFAULT_BYTES);
    close(rp.rate_bps(), (rate + target) / 2, "stages reset: fast recovery again");
}

#[test]
fn min_rate_and_min_dec_fac_bound_the_cut() {
    let p = DcqcnParams { rpg_min_dec_fac: 80, rpg_byte_reset_64bytes: 0, ..DcqcnParams::default() };
    let mut rp = Dcqcn::new(p, G100);
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    assert_eq!(rp.rate_bps(), 80_000_000_000, "at most 20 % per decrease");
    let p = DcqcnParams { rpg_min_rate_mbps: 90_000, rpg_byte_reset_64bytes: 0, ..DcqcnParams::default() };
    let mut rp = Dcqcn::new(p, G100);
    rp.on_cnp(at(0));
    rp.handle_timeout(at(4_001));
    assert_eq!(rp.rate_bps(), 90_000_000_000);
}

#[test]
fn rate_on_first_cnp_and_hpcc_profile() {
    let p = DcqcnParams { rate_to_set_on_first_cnp_mbps: 10_000, ..DcqcnParams::default() };
    let mut rp = Dcqcn::new(p, G100);
    rp.on_cnp(at(0));
    assert_eq!((rp.rate_bps(), rp.target_bps()), (10_000_000_000, 10_000_000_000));
    let h = DcqcnParams::hpcc(100_000);
    assert_eq!((h.rpg_ai_rate_mbps, h.rpg_hai_rate_mbps, h.dce_tcp_g), (20, 200, 1020));
    assert!(h.validate().is_ok() && DcqcnParams::default().validate().is_ok());
    // HPCC: α = 1 on the first CNP, g = 1/256: after 4 ticks 1024·(255/256)^4 in fixed point.
    let mut rp = Dcqcn::new(h, G100);
    rp.on_cnp(at(0));
    assert_eq!(rp.alpha_at(at(4_001)), 1008);
}

#[test]
fn cnps_within_one_period_cause_one_decrease() {
    let mut rp = Dcqcn::new(timer_only(), G100);
    rp.on_cnp(at(0));
    for t in (100..4_000).step_by(100) {
        rp.on_cnp(at(t));
    }
    rp.handle_timeout(at(4_001));
    assert_eq!(rp.decreases(), 1);
    assert_eq!(rp.poll_at(), Some(at(304_001)), "no check pending: no CNP after the decrease");
    rp.on_cnp(at(4_001));
    assert_eq!(rp.poll_at(), Some(at(8_001)));
}

/// xorshift64*: a deterministic event schedule.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The same firmware at 100 Gb/s and, time-scaled by 500, at 200 Mb/s, fed the same CNPs and bytes
/// with the slow one's clock stretched 500×: the same α, the same decisions at 500× the instants, and
/// rates 500× lower within rounding. Both with the byte counter and with the timer only.
#[test]
fn time_scale_stretches_the_trajectory() {
    const N: u64 = 500;
    for byte_reset in [32_767, 0] {
        let p = DcqcnParams { rpg_byte_reset_64bytes: byte_reset, ..DcqcnParams::default() };
        let mut fast = Dcqcn::new(p, G100);
        let mut slow = Dcqcn::new(DcqcnParams { time_scale: N as u32, ..p }, G100 / N);
        let (mut t, mut rng, mut worst) = (0u64, 0x5eed_u64, 0u64);
        for step in 0..200_000u32 {
            let r = next(&mut rng);
            t += r % 1_500; // a 4 KB packet at 100 G takes ~330 ns; CNPs come in bursts
            fast.handle_timeout(at(t));
            slow.handle_timeout(at(t * N));
            // CNPs in bursts: a congested phase of every 2^14 steps, quiet otherwise.
            let congested = (step >> 14) % 3 != 2;
            if congested && r.is_multiple_of(7) {
                fast.on_cnp(at(t));
                slow.on_cnp(at(t * N));
            } else {
                fast.on_sent(4_136);
                slow.on_sent(4_136);
            }
            assert_eq!(
                slow.next_decrease,
                fast.next_decrease.map(|p| at(p.as_ns() * N)),
                "step {step} at {t}"
            );
            assert_eq!(slow.alpha_at(at(t * N)), fast.alpha_at(at(t)), "step {step}");
            assert_eq!(slow.decreases(), fast.decreases(), "step {step}");
            if slow.is_limited() && fast.is_limited() {
                assert_eq!(slow.rate_timer, fast.rate_timer.map(|p| at(p.as_ns() * N)), "step {step}");
                assert_eq!((slow.time_stage, slow.byte_stage), (fast.time_stage, fast.byte_stage));
            } else if slow.is_limited() != fast.is_limited() {
                // Recovery ends when current reaches the line rate. Halving the gap, the slow flow is
                // within 1 b/s of it (500 b/s at 100 G) some increase events before the fast one:
                // rounding, which the next decrease (it resets the stages) wipes out.
                let limited = if fast.is_limited() { fast.rate_bps() } else { slow.rate_bps() * N };
                assert!(limited >= G100 - G100 / 1_000_000, "step {step}: {fast:?}");
            }
            for (s, f) in [(slow.rate_bps(), fast.rate_bps()), (slow.target_bps(), fast.target_bps())] {
                worst = worst.max((s * N).abs_diff(f));
            }
        }
        assert!(fast.decreases() > 1_000 && fast.increases() > 100, "{fast:?}");
        // Rounding: tens of bit/s at 200 Mb/s at worst (× 500 at 100 Gb/s), carried from one decision
        // to the next: within 10^-6 of the line rate.
        assert!(worst <= G100 / 1_000_000, "byte_reset {byte_reset}: off by {worst} b/s at 100 G");
    }
}

#[test]
fn time_scale_divides_the_rate_steps() {
    let p = DcqcnParams {
        time_scale: 500,
        rpg_byte_reset_64bytes: 0,
        rpg_min_rate_mbps: 10,
        rate_to_set_on_first_cnp_mbps: 50_000,
        ..DcqcnParams::default()
    };
    let line = 200_000_000;
    let mut rp = Dcqcn::new(p, line);
    rp.on_cnp(at(0));
    assert_eq!(rp.rate_bps(), 100_000_000, "50 G on the first CNP ÷ 500");
    assert_eq!(rp.poll_at(), Some(at(500 + 2_000_000)), "the 4 µs check × 500, from 1 ns × 500");
    rp.handle_timeout(at(2_000_500));
    assert_eq!(rp.alpha_at(at(2_000_500)), 1003, "four 500 µs α periods");
    assert_eq!(rp.poll_at(), Some(at(2_000_500 + 150_000_000)), "the 300 µs timer × 500");
    let target = rp.target_bps();
    rp.handle_timeout(at(152_000_500)); // fast recovery
    rp.handle_timeout(at(302_000_500)); // additive increase: 5 Mb/s ÷ 500
    assert_eq!(rp.target_bps(), target + 10_000);
    assert_eq!(scaled_bps(1, 3), 333_333);
    assert_eq!(scaled_bps(1, 1_000_000), 1);
    assert_eq!(scaled_bps(0, 7), 0);
    // The floor: 10 Mb/s ÷ 500 = 20 kb/s.
    let mut rp = Dcqcn::new(DcqcnParams { rpg_min_dec_fac: 0, ..p }, line);
    for k in 0..200 {
        rp.on_cnp(at(k * 2_000_000));
        rp.handle_timeout(at(k * 2_000_000 + 1_999_999));
    }
    assert_eq!(rp.rate_bps(), 20_000);
}

#[test]
fn parameters_set_by_name_with_errors_that_name_them() {
    let mut p = DcqcnParams::default();
    p.set("time_scale", "500").unwrap();
    p.set("rpg_time_reset_ns", " 55000 ").unwrap();
    p.set("clamp_tgt_rate", "on").unwrap();
    assert_eq!((p.time_scale, p.rpg_time_reset_ns, p.clamp_tgt_rate), (500, 55_000, true));
    let names = DcqcnParams::names();
    assert_eq!(names.len(), 17);
    for name in &names {
        let e = p.clone().set(name, "x").unwrap_err();
        assert!(e.starts_with(&format!("{name}=x: expected")), "{e}");
    }
    let before = p;
    for (name, value, needle) in [
        ("rpg_bogus", "1", "unknown DCQCN parameter \"rpg_bogus\" (known: clamp_tgt_rate, "),
        ("time_scale", "0", "time_scale: 0 is outside 1..=1000000"),
        ("time_scale", "-3", "time_scale=-3: expected a whole number"),
        ("dce_tcp_g", "5000000000", "dce_tcp_g=5000000000: invalid value"),
        ("rpg_min_dec_fac", "101", "rpg_min_dec_fac: 101 is above 100 (%)"),
        ("dce_tcp_rtt_ns", "0", "dce_tcp_rtt_ns: must be > 0"),
        (
            "rpg_time_reset_ns",
            "1000000000000",
            "rpg_time_reset_ns: 1000000000000 ns × time_scale 500 is above",
        ),
        ("clamp_tgt_rate", "maybe", "clamp_tgt_rate=maybe: expected true or false"),
    ] {
        let e = p.set(name, value).unwrap_err();
        assert!(e.starts_with(needle), "{name}={value}: {e}");
        assert_eq!(p, before, "nothing changes on error");
    }
}
