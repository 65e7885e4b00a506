//! The simulator's calendar: the pending wake-ups, earliest first, ties in the order they were booked.
//!
//! A node has at most one pending wake-up (the instant its `poll_at` asked for) and so has a link (the
//! arrival of the first frame on it), so the calendar is an indexed binary heap with one slot per node and
//! per link: a node that asks for another instant moves its entry instead of adding one. A plain heap
//! kept every superseded wake-up until its time came; with nodes rebooking on nearly every visit it was
//! several times larger than the live set, and its pops a visible part of a run.

use super::Wake;

const ABSENT: u32 = u32::MAX;

/// A pending wake-up: (instant, booking order, what).
pub(super) type Entry = (u64, u64, Wake);

#[derive(Debug, Default)]
pub(super) struct Calendar {
    heap: Vec<Entry>,
    /// Per node and per link: its entry's position in `heap`, or `ABSENT`.
    node_pos: Vec<u32>,
    link_pos: Vec<u32>,
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
    pub(super) fn book(&mut self, wake: Wake, at: u64, order: u64) {
        let entry = (at, order, wake);
        match self.pos(wake) {
            Some(i) => {
                let earlier = entry < self.heap[i];
                self.heap[i] = entry;
                if earlier { self.sift_up(i) } else { self.sift_down(i) }
            }
            None => {
                self.heap.push(entry);
                let i = self.heap.len() - 1;
                self.set_pos(wake, i as u32);
                self.sift_up(i);
            }
        }
    }

    /// Removes `wake`'s pending entry, if any.
    pub(super) fn cancel(&mut self, wake: Wake) {
        if let Some(i) = self.pos(wake) {
            self.remove_at(i);
        }
    }

    fn pos(&self, wake: Wake) -> Option<usize> {
        let p = match wake {
            Wake::Node(id) => self.node_pos.get(id),
            Wake::Link(l) => self.link_pos.get(l),
        };
        p.copied().filter(|&p| p != ABSENT).map(|p| p as usize)
    }

    fn set_pos(&mut self, wake: Wake, p: u32) {
        let (v, i) = match wake {
            Wake::Node(id) => (&mut self.node_pos, id),
            Wake::Link(l) => (&mut self.link_pos, l),
        };
        if v.len() <= i {
            v.resize(i + 1, ABSENT);
        }
        v[i] = p;
    }

    fn remove_at(&mut self, i: usize) {
        let gone = self.heap.swap_remove(i);
        self.set_pos(gone.2, ABSENT);
        if i < self.heap.len() {
            self.set_pos(self.heap[i].2, i as u32);
            if i > 0 && self.heap[i] < self.heap[(i - 1) / 2] {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] >= self.heap[parent] {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && self.heap[l] < self.heap[least] {
                least = l;
            }
            if r < self.heap.len() && self.heap[r] < self.heap[least] {
                least = r;
            }
            if least == i {
                break;
            }
            self.swap(i, least);
            i = least;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.set_pos(self.heap[a].2, a as u32);
        self.set_pos(self.heap[b].2, b as u32);
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
