//! The scheduler's service order against a straightforward reference: strict priority by scanning every
//! queue, deficit round robin by visiting queue after queue one quantum at a time (the textbook loop of
//! Shreedhar & Varghese, which the scheduler replaces by computing the visits each queue needs, and by its
//! one-candidate and bit-mask shortcuts). Random STRICT/DWRR/WRR configurations without meters, random
//! arrivals, frame sizes and pauses (blocked queues); each dequeue must pick the same queue and frame, and
//! the line must be busy for exactly the frame's bits at the port speed.

use super::*;

/// The reference: the documented service order written as plainly as possible.
struct Reference {
    settings: [QueueSettings; QUEUES],
    queues: [VecDeque<Pkt>; QUEUES],
    deficit: [u64; QUEUES],
    turn: Option<usize>,
    last_visited: usize,
    packets: bool,
}

impl Reference {
    fn new(settings: [QueueSettings; QUEUES]) -> Self {
        let weighted = |s: &QueueSettings| matches!(s.kind, SchedulerKind::Dwrr | SchedulerKind::Wrr);
        // WRR only: packet credits; any DWRR queue makes the whole round count bytes.
        let packets = settings.iter().any(weighted)
            && settings.iter().filter(|s| weighted(s)).all(|s| s.kind == SchedulerKind::Wrr);
        Reference {
            settings,
            queues: Default::default(),
            deficit: [0; QUEUES],
            turn: None,
            last_visited: QUEUES - 1,
            packets,
        }
    }

    fn cost(&self, len: usize) -> u64 {
        if self.packets { 1 } else { len as u64 }
    }

    fn quantum(&self, q: usize) -> u64 {
        let weight = u64::from(self.settings[q].weight.max(1));
        if self.packets { weight } else { weight * DWRR_BASE_QUANTUM_BYTES }
    }

    fn open(&self, q: usize, blocked: u8) -> bool {
        blocked & (1 << q) == 0 && !self.queues[q].is_empty()
    }

    fn pick(&mut self, blocked: u8) -> Option<usize> {
        let mut strict: Option<usize> = None;
        for q in 0..QUEUES {
            if self.settings[q].kind == SchedulerKind::Strict && self.open(q, blocked) {
                let rank = |q: usize| (self.settings[q].priority.map_or(-1, i16::from), q);
                if strict.is_none_or(|s| rank(q) > rank(s)) {
                    strict = Some(q);
                }
            }
        }
        if strict.is_some() {
            return strict;
        }
        if let Some(q) = self.turn {
            if self.open(q, blocked) && self.cost(self.queues[q][0].len) <= self.deficit[q] {
                return Some(q);
            }
            self.turn = None;
        }
        let weighted = |q: usize| self.settings[q].kind != SchedulerKind::Strict;
        if !(0..QUEUES).any(|q| weighted(q) && self.open(q, blocked)) {
            return None;
        }
        let mut q = self.last_visited;
        loop {
            q = (q + 1) % QUEUES;
            if self.settings[q].kind == SchedulerKind::Strict || !self.open(q, blocked) {
                continue;
            }
            self.deficit[q] += self.quantum(q);
            self.last_visited = q;
            if self.cost(self.queues[q][0].len) <= self.deficit[q] {
                self.turn = Some(q);
                return Some(q);
            }
        }
    }

    fn dequeue(&mut self, blocked: u8) -> Option<(u8, Pkt)> {
        let q = self.pick(blocked)?;
        let p = self.queues[q].pop_front()?;
        if self.settings[q].kind != SchedulerKind::Strict {
            self.deficit[q] -= self.cost(p.len);
        }
        if self.queues[q].is_empty() {
            self.deficit[q] = 0;
            if self.turn == Some(q) {
                self.turn = None;
            }
        }
        Some((q as u8, p))
    }
}

fn plain_queue() -> BoxedStrategy<QueueSettings> {
    (
        prop_oneof![Just(SchedulerKind::Strict), Just(SchedulerKind::Dwrr), Just(SchedulerKind::Wrr)],
        0u8..=100,
        proptest::option::of(0u8..=3),
    )
        .prop_map(|(kind, weight, priority)| QueueSettings {
            kind,
            weight,
            priority,
            ..QueueSettings::default()
        })
        .boxed()
}

#[derive(Debug, Clone)]
enum Step {
    Arrive { queue: u8, len: usize },
    Send,
    Pause(u8),
    Idle(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..8, prop_oneof![Just(64usize), 40usize..1600, 1600usize..9300])
            .prop_map(|(queue, len)| Step::Arrive { queue, len }),
        5 => Just(Step::Send),
        1 => prop_oneof![Just(0u8), any::<u8>()].prop_map(Step::Pause),
        1 => (0u64..5_000).prop_map(Step::Idle),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(properties::proptest_cases(256)))]

    #[test]
    fn service_order_is_the_reference_loops(
        queues in proptest::array::uniform8(plain_queue()),
        speed_mbps in prop_oneof![Just(10_000u32), Just(25_000), Just(100_000), Just(400_000), Just(7), Just(3_000)],
        steps in proptest::collection::vec(step(), 1..300),
    ) {
        let mut s = Scheduler::new(PortSettings { speed_mbps, queues, shaper: None });
        let mut reference = Reference::new(queues);
        let (mut now, mut blocked, mut seq) = (Instant::ZERO, 0u8, 0u64);
        // The line's end in ps, computed here with the remainder as a fraction of 1/speed ps.
        let (mut line_ps, mut line_rem) = (0u128, 0u128);
        for step in steps.into_iter().chain(std::iter::repeat_n(Step::Pause(0), 1)).chain(std::iter::repeat_n(Step::Send, 600)) {
            match step {
                Step::Arrive { queue, len } => {
                    let p = pkt(queue, seq, len);
                    seq += 1;
                    prop_assert!(s.enqueue(queue, p.clone(), now).is_ok());
                    reference.queues[usize::from(queue)].push_back(p);
                }
                Step::Send => {
                    now = now.max(s.line_free_at());
                    let got = s.dequeue(now, blocked);
                    let want = reference.dequeue(blocked);
                    prop_assert_eq!(&got, &want);
                    if let Some((_, p)) = got {
                        // An idle line (now past the previous end, rounded up to the ns) starts the frame
                        // now; otherwise it follows the previous frame from its exact end.
                        if u128::from(now.as_ns()) > (line_ps + u128::from(line_rem > 0)).div_ceil(1000) {
                            (line_ps, line_rem) = (u128::from(now.as_ns()) * 1000, 0);
                        }
                        let scaled = (p.len as u128 + 24) * 8 * 1_000_000 + line_rem;
                        line_ps += scaled / u128::from(speed_mbps);
                        line_rem = scaled % u128::from(speed_mbps);
                        let end_ns = (line_ps + u128::from(line_rem > 0)).div_ceil(1000);
                        prop_assert_eq!(u128::from(s.line_free_at().as_ns()), end_ns);
                    }
                }
                Step::Pause(mask) => blocked = mask,
                Step::Idle(ns) => now += Nanos::from_ns(ns),
            }
            prop_assert_eq!(s.total_len(), reference.queues.iter().map(VecDeque::len).sum::<usize>());
        }
        prop_assert!(s.is_empty());
    }
}
