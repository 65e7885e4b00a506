//! Lossless control plane: SONiC-style configuration and operations.
//!
//! This crate will hold the CONFIG_DB-like schema (YAML and config_db.json), the headroom calculators, the
//! SONiC-style `show` tables, the netns lab and the `swctl` CLI, built on [`lossless_dataplane`] and the
//! gRPC API in [`lossless_proto`].

#![forbid(unsafe_code)]
