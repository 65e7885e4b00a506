//! The simulator's calendar: the pending wake-ups, earliest first, ties in the order they were booked.
//!
//! A node has at most one pending wake-up (the instant its `poll_at` asked for) and so has a link (the
//! arrival of the first frame on it), so the calendar is an indexed heap (4-ary) with one slot per node and
//! per link: a node that asks for another instant moves its entry instead of adding one. A plain heap
//! kept every superseded wake-up until its time came; with nodes rebooking on nearly every visit it was
//! several times larger than the live set, and its pops a visible part of a run.

use super::Wake;
use crate::time::Instant;

const ABSENT: u32 = u32::MAX;
/// Children per heap node: a 4-ary heap is half as deep as a binary one, and a node's four children
/// share a cache line or two, so a pop (the most frequent operation) moves an entry through fewer levels.
const ARITY: usize = 4;

/// A pending wake-up: (instant, booking order, what).
pub(super) type Entry = (Instant, u64, Wake);

/// An entry in the heap: its instant and booking order (unique: two entries never compare equal, so
/// the order is the same whatever the heap's shape) and its slot.
#[derive(Debug, Clone, Copy)]
struct Item {
    at_ns: u64,
    order: u64,
    slot: u32,
}

impl Item {
    /// (instant, booking order) as one number, compared in one go.
    #[inline]
    fn key(&self) -> u128 {
        u128::from(self.at_ns) << 64 | u128::from(self.order)
    }

    fn entry(&self) -> Entry {
        let id = (self.slot / 2) as usize;
        let wake = if self.slot % 2 == 0 { Wake::Node(id) } else { Wake::Link(id) };
        (Instant::from_ns(self.at_ns), self.order, wake)
    }
}

#[derive(Debug, Default)]
pub(super) struct Calendar {
    heap: Vec<Item>,
    /// Per slot (node `id` at `2 id`, link `l` at `2 l + 1`): its entry's position in `heap`, or `ABSENT`.
    pos: Vec<u32>,
}

fn slot(wake: Wake) -> usize {
    match wake {
        Wake::Node(id) => 2 * id,
        Wake::Link(l) => 2 * l + 1,
    }
}

impl Calendar {
    /// The earliest entry.
    pub(super) fn peek(&self) -> Option<Entry> {
        self.heap.first().map(Item::entry)
    }

    pub(super) fn pop(&mut self) -> Option<Entry> {
        let first = self.peek()?;
        self.remove_at(0);
        Some(first)
    }

    /// Books `wake` at `at` with booking order `order`, replacing its pending entry if it has one.
    pub(super) fn book(&mut self, wake: Wake, at: Instant, order: u64) {
        let s = slot(wake);
        let item = Item { at_ns: at.as_ns(), order, slot: s as u32 };
        if self.pos.len() <= s {
            self.pos.resize(s + 1, ABSENT);
        }
        match self.pos[s] {
            ABSENT => {
                self.heap.push(item);
                self.sift_up(self.heap.len() - 1, item);
            }
            i => {
                let i = i as usize;
                if item.key() < self.heap[i].key() { self.sift_up(i, item) } else { self.sift_down(i, item) }
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
        self.pos[gone.slot as usize] = ABSENT;
        let last = self.heap.pop().expect("an entry at i");
        if i < self.heap.len() {
            // The last entry fills the hole, moving up or down from there.
            if i > 0 && last.key() < self.heap[(i - 1) / ARITY].key() {
                self.sift_up(i, last)
            } else {
                self.sift_down(i, last)
            }
        }
    }

    /// Places `item` at or above the hole at `i`, moving later parents down.
    fn sift_up(&mut self, mut i: usize, item: Item) {
        let key = item.key();
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if key >= self.heap[parent].key() {
                break;
            }
            self.place(i, self.heap[parent]);
            i = parent;
        }
        self.place(i, item);
    }

    /// Places `item` at or below the hole at `i`, moving earlier children up.
    fn sift_down(&mut self, mut i: usize, item: Item) {
        let key = item.key();
        let len = self.heap.len();
        loop {
            let first = ARITY * i + 1;
            if first >= len {
                break;
            }
            let mut child = first;
            let mut child_key = self.heap[first].key();
            for c in first + 1..(first + ARITY).min(len) {
                let k = self.heap[c].key();
                if k < child_key {
                    (child, child_key) = (c, k);
                }
            }
            if key <= child_key {
                break;
            }
            self.place(i, self.heap[child]);
            i = child;
        }
        self.place(i, item);
    }

    fn place(&mut self, i: usize, item: Item) {
        self.heap[i] = item;
        self.pos[item.slot as usize] = i as u32;
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
                let wake = if slot % 2 == 0 { Wake::Node(slot / 2) } else { Wake::Link(slot / 2) };
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
