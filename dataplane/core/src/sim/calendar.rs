//! The simulator's calendar: the pending wake-ups, earliest first, ties in the order they were booked.
//!
//! A node has at most one pending wake-up (the instant its `poll_at` asked for) and so has a link (the
//! arrival of the first frame on it), so the calendar is an indexed binary heap with one slot per node and
//! per link: a node that asks for another instant moves its entry instead of adding one. A plain heap
//! kept every superseded wake-up until its time came; with nodes rebooking on nearly every visit it was
//! several times larger than the live set, and its pops a visible part of a run.

use super::Wake;
use crate::time::Instant;

const ABSENT: u32 = u32::MAX;

/// A pending wake-up: (instant, booking order, what).
pub(super) type Entry = (Instant, u64, Wake);

#[derive(Debug, Default)]
pub(super) struct Calendar {
    heap: Vec<Entry>,
    /// Per slot (node `id` at `2 id`, link `l` at `2 l + 1`): its entry's position in `heap`, or `ABSENT`.
    pos: Vec<u32>,
}

fn slot(wake: Wake) -> usize {
    match wake {
        Wake::Node(id) => 2 * id.index(),
        Wake::Link(l) => 2 * l + 1,
    }
}

impl Calendar {
    /// The earliest entry.
    pub(super) fn peek(&self) -> Option<Entry> {
        self.heap.first().copied()
    }

    pub(super) fn pop(&mut self) -> Option<Entry> {
        let first = self.peek()?;
        self.remove_at(0);
        Some(first)
    }

    /// Books `wake` at `at` with booking order `order`, replacing its pending entry if it has one.
    pub(super) fn book(&mut self, wake: Wake, at: Instant, order: u64) {
        let entry = (at, order, wake);
        let s = slot(wake);
        if self.pos.len() <= s {
            self.pos.resize(s + 1, ABSENT);
        }
        match self.pos[s] {
            ABSENT => {
                self.heap.push(entry);
                self.sift_up(self.heap.len() - 1, entry);
            }
            i => {
                let i = i as usize;
                if entry < self.heap[i] { self.sift_up(i, entry) } else { self.sift_down(i, entry) }
            }
        }
    }

    /// Removes `wake`'s pending entry, if any.
    pub(super) fn cancel(&mut self, wake: Wake) {
        if let Some(&i) = self.pos.get(slot(wake))
            && i != ABSENT
        {
            self.remove_at(i as usize);
        }
    }

    fn remove_at(&mut self, i: usize) {
        let gone = self.heap[i];
        self.pos[slot(gone.2)] = ABSENT;
        let last = self.heap.pop().expect("an entry at i");
        if i < self.heap.len() {
            // The last entry fills the hole, moving up or down from there.
            if i > 0 && last < self.heap[(i - 1) / 2] {
                self.sift_up(i, last)
            } else {
                self.sift_down(i, last)
            }
        }
    }

    /// Places `entry` at or above the hole at `i`, moving larger parents down.
    fn sift_up(&mut self, mut i: usize, entry: Entry) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if entry >= self.heap[parent] {
                break;
            }
            self.place(i, self.heap[parent]);
            i = parent;
        }
        self.place(i, entry);
    }

    /// Places `entry` at or below the hole at `i`, moving smaller children up.
    fn sift_down(&mut self, mut i: usize, entry: Entry) {
        let len = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= len {
                break;
            }
            let child = if left + 1 < len && self.heap[left + 1] < self.heap[left] { left + 1 } else { left };
            if entry <= self.heap[child] {
                break;
            }
            self.place(i, self.heap[child]);
            i = child;
        }
        self.place(i, entry);
    }

    fn place(&mut self, i: usize, entry: Entry) {
        self.heap[i] = entry;
        self.pos[slot(entry.2)] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a sorted list of the live entries, after any sequence of bookings, cancellations and pops.
        #[test]
        fn pops_the_live_entries_in_order(
            ops in prop::collection::vec((0u8..4, 0usize..6, 0u64..20), 0..200),
        ) {
            let mut calendar = Calendar::default();
            let mut live: Vec<Entry> = Vec::new();
            for (order, (op, slot, at)) in ops.into_iter().enumerate() {
                let wake = if slot % 2 == 0 { Wake::Node(crate::sim::NodeId::new(slot / 2)) } else { Wake::Link(slot / 2) };
                match op {
                    0 | 1 => {
                        live.retain(|e| e.2 != wake);
                        let at = Instant::from_ns(at);
                        live.push((at, order as u64, wake));
                        calendar.book(wake, at, order as u64);
                    }
                    2 => {
                        live.retain(|e| e.2 != wake);
                        calendar.cancel(wake);
                    }
                    _ => {
                        live.sort();
                        let expected = (!live.is_empty()).then(|| live.remove(0));
                        prop_assert_eq!(calendar.pop(), expected);
                    }
                }
                live.sort();
                prop_assert_eq!(calendar.peek(), live.first().copied());
            }
        }
    }
}
