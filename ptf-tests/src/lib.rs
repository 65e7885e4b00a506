//! PTF-style packet tests for Lossless.
//!
//! The harness (fresh topologies in network namespaces, PTF's send/verify verbs and frame builders) and the
//! sonic-mgmt catalog of QoS and PFC-watchdog tests will live here, driving real `switchd` processes.

#![forbid(unsafe_code)]
