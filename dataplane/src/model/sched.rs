//! Egress queues of one port and the choice of what leaves next.
//!
//! Eight FIFO queues served round-robin, one packet each turn. This is the interface the SP/DWRR scheduler
//! (with shapers, PFC pause and egress hold) replaces: `enqueue` a packet on a queue, `dequeue` the next one.

use std::collections::VecDeque;

/// A packet waiting in an egress queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedFrame {
    pub frame: Vec<u8>,
    /// The port it came in on (`None` for frames the switch originates: ARP, PFC).
    pub ingress_port: Option<usize>,
    pub tc: u8,
    pub pg: u8,
    pub enqueued_ns: u64,
}

/// The egress queues of one port.
#[derive(Debug, Clone, Default)]
pub struct Scheduler {
    queues: [VecDeque<QueuedFrame>; 8],
    /// Queue to look at first on the next dequeue.
    next: usize,
}

impl Scheduler {
    pub fn enqueue(&mut self, queue: u8, item: QueuedFrame) {
        self.queues[usize::from(queue & 7)].push_back(item);
    }

    /// The next packet to transmit and the queue it came from.
    pub fn dequeue(&mut self) -> Option<(u8, QueuedFrame)> {
        for i in 0..8 {
            let q = (self.next + i) % 8;
            if let Some(item) = self.queues[q].pop_front() {
                self.next = (q + 1) % 8;
                return Some((q as u8, item));
            }
        }
        None
    }

    /// Packets waiting in one queue.
    pub fn len(&self, queue: u8) -> usize {
        self.queues[usize::from(queue & 7)].len()
    }

    /// Packets waiting in all queues.
    pub fn total_len(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.queues.iter().all(VecDeque::is_empty)
    }
}
