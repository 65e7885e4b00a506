//! The simulator's calendar: the pending wake-ups, earliest first; ties to the one booked first, then
//! in an order drawn from the booking and what they wake ([`tie`]).
//!
//! A node has at most one pending wake-up (the instant its `poll_at` asked for) and so has a link (the
//! arrival of the first frame on it), so the calendar has one slot per node and per link: a node that asks
//! for another instant moves its entry instead of adding one.
//!
//! "Booked first" is by the virtual instant of the booking, not by the order the calls came in: a
//! simulation split into parts that run side by side ([`super::Sim::partition`]) makes the same bookings
//! in another order and must pop them in the same one. A frame queued behind another on its wire is
//! booked when that one arrives. Bookings of one instant are ranked by a hash of the instant and the link
//! (or node), not by link: in a symmetric incast 16 senders' frames arrive at the same nanosecond again
//! and again, and a fixed order serves the same link first every time (a 16:1 DCQCN incast held by PFC
//! gave one flow 93 % of its fair share with links in index order, every flow within 1.5 % of it with
//! this one). [`super::TieOrder`] says what the hash takes.
//!
//! Nearly every wake-up falls within a few microseconds of now (a line frees up, a frame arrives), and a
//! busy fabric has about one per nanosecond, so those go on a timing wheel of one-nanosecond buckets
//! covering [`WHEEL_NS`] from the latest instant popped: booking, moving and popping an entry cost a few
//! list and bit operations instead of a walk down a heap. A bucket holds the entries of one instant in a
//! list in their order. Wake-ups further out (or, from a model's odd request, in the past) wait in an
//! indexed binary heap; the earliest entry is the earlier of the wheel's first and the heap's top.

use super::Wake;
use crate::time::Instant;

const ABSENT: u32 = u32::MAX;

/// The wheel's span: one bucket per nanosecond.
const WHEEL_NS: u64 = 4096;
const WORDS: usize = WHEEL_NS as usize / 64;

/// A pending wake-up: (instant, its slot's order, what).
pub(super) type Entry = (Instant, u64, Wake);

#[derive(Debug, Clone, Copy)]
enum Place {
    Absent,
    /// In the wheel's bucket of its instant, between `prev` and `next` (slots, or `ABSENT`).
    Wheel {
        prev: u32,
        next: u32,
    },
    /// In the heap, at this position.
    Far(u32),
}

/// A bucket's first and last slot.
#[derive(Debug, Clone, Copy)]
struct Ends {
    head: u32,
    tail: u32,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    at: Instant,
    order: u64,
    place: Place,
}

const EMPTY: Slot = Slot { at: Instant::ZERO, order: 0, place: Place::Absent };

#[derive(Debug)]
pub(super) struct Calendar {
    /// Per slot (node `id` at `2 id`, link `l` at `2 l + 1`): its pending entry.
    slots: Vec<Slot>,
    /// Every wheel entry is at or after `base` and before `base + WHEEL_NS`; `base` is at most the
    /// earliest wheel entry (the latest instant popped, or 0).
    base: Instant,
    /// Per bucket (instant modulo `WHEEL_NS`): its first and last slot, or `ABSENT`, side by side (a
    /// booking reads both: one cache line).
    ends: Vec<Ends>,
    /// A bit per non-empty bucket, and a bit per non-zero word of those.
    occupied: [u64; WORDS],
    summary: u64,
    /// Entries outside the wheel's span: (instant, order, slot), a binary heap.
    far: Vec<(Instant, u64, u32)>,
    /// The earliest entry (instant, order, slot), when known: `Some(None)` when the calendar is empty,
    /// `None` when it must be looked for again (its entry was removed). A step asks for it once to know
    /// the next instant and again for each entry it pops, and bookings in between rarely come first: it
    /// is kept across them.
    first: Option<Option<(Instant, u64, u32)>>,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar {
            slots: Vec::new(),
            base: Instant::ZERO,
            ends: vec![Ends { head: ABSENT, tail: ABSENT }; WHEEL_NS as usize],
            occupied: [0; WORDS],
            summary: 0,
            far: Vec::new(),
            first: Some(None),
        }
    }
}

/// A node `n`'s slot is `2 n`, a wire `w`'s `2 w + 1` (indices within a part). Only the order of wires
/// matters: a node's wake-up only marks it to be visited after the step's deliveries.
fn slot_of(wake: Wake) -> usize {
    match wake {
        Wake::Node(n) => 2 * n as usize,
        Wake::Link(w) => 2 * w as usize + 1,
    }
}

/// An entry's rank among the entries of its instant (lower first): booked earlier first, then by a mix
/// of `key` (SplitMix64's finaliser; [`super::Part::tie_key`] says what goes into it). Bookings past 2^40
/// ns (18 minutes) of virtual time share the last booking rank, and are then ranked by the mix alone.
pub(super) fn tie(booked: Instant, key: u64) -> u64 {
    const MIX_BITS: u32 = 24;
    let mut z = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    booked.as_ns().min((1 << (64 - MIX_BITS)) - 1) << MIX_BITS | (z ^ (z >> 31)) >> (64 - MIX_BITS)
}

fn wake_of(slot: usize) -> Wake {
    if slot.is_multiple_of(2) { Wake::Node((slot / 2) as u32) } else { Wake::Link((slot / 2) as u32) }
}

fn bucket(at: Instant) -> usize {
    (at.as_ns() % WHEEL_NS) as usize
}

impl Calendar {
    /// The earliest entry.
    pub(super) fn peek(&mut self) -> Option<Entry> {
        let (at, order, s) = self.earliest()?;
        Some((at, order, wake_of(s as usize)))
    }

    /// The earliest entry as (instant, order, slot), from the cache or found again.
    fn earliest(&mut self) -> Option<(Instant, u64, u32)> {
        let first = match self.first {
            Some(first) => first,
            None => {
                let first = self.find_first();
                self.first = Some(first);
                first
            }
        };
        debug_assert_eq!(first, self.find_first(), "the cached earliest entry is the earliest");
        first
    }

    /// The earliest entry: the earlier of the wheel's first bucket's head and the heap's top.
    fn find_first(&self) -> Option<(Instant, u64, u32)> {
        let near = self.first_bucket().map(|b| {
            let s = self.ends[b].head;
            let slot = &self.slots[s as usize];
            (slot.at, slot.order, s)
        });
        match (near, self.far.first().copied()) {
            (Some(n), Some(f)) => Some(n.min(f)),
            (n, f) => n.or(f),
        }
    }

    #[cfg(test)]
    fn pop(&mut self) -> Option<Entry> {
        self.pop_due(Instant::MAX)
    }

    /// The earliest entry, removed, if it is due by `now`.
    #[inline]
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<Entry> {
        let (at, order, s) = self.earliest().filter(|e| e.0 <= now)?;
        match self.slots[s as usize].place {
            // The earliest wheel entry is its bucket's head: unlinked without `remove`'s general case.
            Place::Wheel { prev, next } => {
                debug_assert_eq!(prev, ABSENT, "the earliest entry heads its bucket");
                let b = bucket(at);
                self.ends[b].head = next;
                self.slots[s as usize].place = Place::Absent;
                if next == ABSENT {
                    self.ends[b].tail = ABSENT;
                    self.clear_bucket_bit(b);
                    self.first = None;
                } else {
                    self.set_prev(next as usize, ABSENT);
                    // The next in its bucket comes next unless the heap holds an entry of the same instant
                    // (booked when the instant was beyond the wheel's span, or in the past) before it.
                    let next = (at, self.slots[next as usize].order, next);
                    self.first = Some(Some(self.far.first().map_or(next, |&f| f.min(next))));
                }
            }
            _ => self.remove(s as usize),
        }
        // Nothing is earlier than what was just popped: the wheel may start there.
        self.base = self.base.max(at);
        Some((at, order, wake_of(s as usize)))
    }

    /// Books `wake` at `at`, replacing its pending entry if it has one. Ties at `at` go to the entry booked
    /// first (`booked`: the instant of the booking as the simulation runs as one part, whatever part books
    /// it when), then by `key`, which names the entry in the whole simulation ([`super::Part::tie_key`]).
    pub(super) fn book(&mut self, wake: Wake, at: Instant, booked: Instant, key: u64) {
        let s = slot_of(wake);
        let order = tie(booked, key);
        if self.slots.len() <= s {
            self.slots.resize(s + 1, EMPTY);
        }
        self.remove(s);
        self.slots[s].at = at;
        self.slots[s].order = order;
        // A known earliest entry stays the earliest unless this one comes first.
        if let Some(first) = &mut self.first
            && first.is_none_or(|f| (at, order, s as u32) < f)
        {
            *first = Some((at, order, s as u32));
        }
        if at >= self.base && at.as_ns() - self.base.as_ns() < WHEEL_NS {
            let b = bucket(at);
            // After the last entry that comes before it (buckets hold one instant's few entries).
            let mut prev = self.ends[b].tail;
            while prev != ABSENT && (self.slots[prev as usize].order, prev as usize) > (order, s) {
                prev = match self.slots[prev as usize].place {
                    Place::Wheel { prev, .. } => prev,
                    _ => unreachable!("a bucket's entries are on the wheel"),
                };
            }
            let next = if prev == ABSENT { self.ends[b].head } else { self.next_of(prev as usize) };
            self.slots[s].place = Place::Wheel { prev, next };
            match prev {
                ABSENT => self.ends[b].head = s as u32,
                p => self.set_next(p as usize, s as u32),
            }
            match next {
                ABSENT => self.ends[b].tail = s as u32,
                n => self.set_prev(n as usize, s as u32),
            }
            self.occupied[b / 64] |= 1 << (b % 64);
            self.summary |= 1 << (b / 64);
        } else {
            self.far.push((at, order, s as u32));
            self.sift_up(self.far.len() - 1);
        }
    }

    /// Removes `wake`'s pending entry, if any.
    pub(super) fn cancel(&mut self, wake: Wake) {
        let s = slot_of(wake);
        if s < self.slots.len() {
            self.remove(s);
        }
    }

    fn remove(&mut self, s: usize) {
        if self.first.is_some_and(|f| f.is_some_and(|f| f.2 as usize == s)) {
            self.first = None;
        }
        match self.slots[s].place {
            Place::Absent => {}
            Place::Wheel { prev, next } => {
                let b = bucket(self.slots[s].at);
                match prev {
                    ABSENT => self.ends[b].head = next,
                    p => self.set_next(p as usize, next),
                }
                match next {
                    ABSENT => self.ends[b].tail = prev,
                    n => self.set_prev(n as usize, prev),
                }
                if self.ends[b].head == ABSENT {
                    self.clear_bucket_bit(b);
                }
            }
            Place::Far(i) => self.remove_far(i as usize),
        }
        self.slots[s].place = Place::Absent;
    }

    /// Bucket `b` became empty.
    fn clear_bucket_bit(&mut self, b: usize) {
        self.occupied[b / 64] &= !(1 << (b % 64));
        if self.occupied[b / 64] == 0 {
            self.summary &= !(1 << (b / 64));
        }
    }

    fn next_of(&self, s: usize) -> u32 {
        match self.slots[s].place {
            Place::Wheel { next, .. } => next,
            _ => ABSENT,
        }
    }

    fn set_next(&mut self, s: usize, to: u32) {
        if let Place::Wheel { next, .. } = &mut self.slots[s].place {
            *next = to;
        }
    }

    fn set_prev(&mut self, s: usize, to: u32) {
        if let Place::Wheel { prev, .. } = &mut self.slots[s].place {
            *prev = to;
        }
    }

    /// The first non-empty bucket from `base`'s on, round the wheel (its entries are the earliest: every
    /// wheel entry lies within one turn from `base`).
    fn first_bucket(&self) -> Option<usize> {
        if self.summary == 0 {
            return None;
        }
        let from = bucket(self.base);
        let (w, bit) = (from / 64, from % 64);
        let here = self.occupied[w] & (!0u64 << bit);
        if here != 0 {
            return Some(w * 64 + here.trailing_zeros() as usize);
        }
        let later = if w + 1 < WORDS { self.summary & (!0u64 << (w + 1)) } else { 0 };
        // Past the last word, round to the first: those buckets hold the instants after the wrap.
        let w = if later != 0 { later } else { self.summary }.trailing_zeros() as usize;
        Some(w * 64 + self.occupied[w].trailing_zeros() as usize)
    }

    fn remove_far(&mut self, i: usize) {
        let last = self.far.pop().expect("an entry at i");
        if i < self.far.len() {
            // The last entry fills the hole, moving up or down from there.
            self.far[i] = last;
            self.slots[last.2 as usize].place = Place::Far(i as u32);
            if i > 0 && last < self.far[(i - 1) / 2] { self.sift_up(i) } else { self.sift_down(i) }
        }
    }

    /// Moves the heap entry at `i` up to its place.
    fn sift_up(&mut self, mut i: usize) {
        let entry = self.far[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if entry >= self.far[parent] {
                break;
            }
            self.place_far(i, self.far[parent]);
            i = parent;
        }
        self.place_far(i, entry);
    }

    /// Moves the heap entry at `i` down to its place.
    fn sift_down(&mut self, mut i: usize) {
        let entry = self.far[i];
        let len = self.far.len();
        loop {
            let left = 2 * i + 1;
            if left >= len {
                break;
            }
            let child = if left + 1 < len && self.far[left + 1] < self.far[left] { left + 1 } else { left };
            if entry <= self.far[child] {
                break;
            }
            self.place_far(i, self.far[child]);
            i = child;
        }
        self.place_far(i, entry);
    }

    fn place_far(&mut self, i: usize, entry: (Instant, u64, u32)) {
        self.far[i] = entry;
        self.slots[entry.2 as usize].place = Place::Far(i as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Against a sorted list of the live entries, after any sequence of bookings, cancellations, pops
    /// and pops of all that is due by an instant (as a step does, the earliest entry cached between),
    /// with instants close together (the wheel), far apart (the heap) and before the latest pop.
    fn check(ops: Vec<(u8, usize, u64)>) -> Result<(), TestCaseError> {
        let mut calendar = Calendar::default();
        let mut live: Vec<Entry> = Vec::new();
        let mut popped = 0;
        for (op, slot, at) in ops {
            let wake = wake_of(slot);
            match op {
                0 | 1 => {
                    live.retain(|e| e.2 != wake);
                    // Mostly at or after the latest pop, as the simulator books.
                    let at = Instant::from_ns(if op == 0 { popped + at } else { at });
                    // Booked now: as the simulator books, at the latest instant popped.
                    let booked = Instant::from_ns(popped);
                    live.push((at, tie(booked, slot as u64), wake));
                    calendar.book(wake, at, booked, slot as u64);
                }
                2 => {
                    live.retain(|e| e.2 != wake);
                    calendar.cancel(wake);
                }
                3 => {
                    live.sort();
                    let expected = (!live.is_empty()).then(|| live.remove(0));
                    let got = calendar.pop();
                    prop_assert_eq!(got, expected);
                    if let Some((at, _, _)) = got {
                        popped = popped.max(at.as_ns());
                    }
                }
                _ => {
                    // As a step pops: everything due by an instant, then nothing more.
                    let now = Instant::from_ns(popped + at);
                    live.sort();
                    let due = live.iter().take_while(|e| e.0 <= now).count();
                    for expected in live.drain(..due) {
                        prop_assert_eq!(calendar.pop_due(now), Some(expected));
                        popped = popped.max(expected.0.as_ns());
                    }
                    prop_assert_eq!(calendar.pop_due(now), None);
                }
            }
            live.sort();
            prop_assert_eq!(calendar.peek(), live.first().copied());
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn pops_the_live_entries_in_order(
            ops in prop::collection::vec((0u8..5, 0usize..8, 0u64..20), 0..200),
        ) {
            check(ops)?;
        }

        #[test]
        fn pops_in_order_across_the_wheel_and_the_heap(
            ops in prop::collection::vec(
                (0u8..5, 0usize..12, prop_oneof![0u64..3 * WHEEL_NS, WHEEL_NS - 2..WHEEL_NS + 2]),
                0..300,
            ),
        ) {
            check(ops)?;
        }
    }
}
