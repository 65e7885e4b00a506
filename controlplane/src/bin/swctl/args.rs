//! The arguments of swctl's subcommands (`show`, `clear`, `pfcwd`, `fdb`).

use clap::{Subcommand, ValueEnum};

#[derive(Subcommand)]
pub(crate) enum Show {
    /// `show interfaces counters`
    Interfaces {
        #[command(subcommand)]
        what: InterfacesWhat,
    },
    /// `show queue counters|wredcounters [PORT]`, `show queue watermark unicast`
    Queue {
        #[command(subcommand)]
        what: QueueWhat,
    },
    /// `show pfc counters [--history]`
    Pfc {
        #[command(subcommand)]
        what: PfcWhat,
    },
    /// `show priority-group watermark shared|headroom`, `show priority-group drop counters`
    #[command(name = "priority-group")]
    PriorityGroup {
        #[command(subcommand)]
        what: PgWhat,
    },
    /// `show buffer_pool watermark`
    #[command(name = "buffer_pool")]
    BufferPool {
        #[command(subcommand)]
        what: WatermarkOnly,
    },
    /// `show headroom-pool watermark`
    #[command(name = "headroom-pool")]
    HeadroomPool {
        #[command(subcommand)]
        what: WatermarkOnly,
    },
}

#[derive(Subcommand)]
pub(crate) enum InterfacesWhat {
    /// Port counters with rates over a sampling period (portstat).
    Counters {
        /// Seconds between the two samples the rates come from (portstat -p); 0: one sample, no rates.
        #[arg(short = 'p', long, default_value_t = 1)]
        period: u64,
    },
    /// Lanes, speed, MTU, FEC, alias, VLAN mode, oper and admin state per port (intfutil status).
    Status,
}

#[derive(Subcommand)]
pub(crate) enum QueueWhat {
    Counters {
        port: Option<String>,
    },
    Wredcounters {
        port: Option<String>,
    },
    Watermark {
        #[command(subcommand)]
        which: QueueWatermark,
    },
}

#[derive(Subcommand)]
pub(crate) enum QueueWatermark {
    Unicast,
}

#[derive(Subcommand)]
pub(crate) enum PfcWhat {
    Counters {
        #[arg(long)]
        history: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum PgWhat {
    Watermark {
        #[arg(value_enum)]
        kind: PgKind,
    },
    Drop {
        #[command(subcommand)]
        what: DropWhat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum PgKind {
    Shared,
    Headroom,
}

#[derive(Subcommand)]
pub(crate) enum DropWhat {
    Counters,
}

#[derive(Subcommand)]
pub(crate) enum WatermarkOnly {
    Watermark,
}

#[derive(Subcommand)]
pub(crate) enum Clear {
    /// `sonic-clear counters` (interface counters).
    Counters,
    /// `sonic-clear queuecounters` / `sonic-clear queue wredcounters` / `sonic-clear queue watermark`.
    Queue {
        #[command(subcommand)]
        what: ClearQueue,
    },
    /// `sonic-clear pfccounters`.
    Pfc,
    /// `sonic-clear priority-group drop counters` / `... watermark shared|headroom`.
    #[command(name = "priority-group")]
    PriorityGroup {
        #[command(subcommand)]
        what: ClearPg,
    },
    /// Clear the buffer and headroom pool watermarks.
    #[command(name = "buffer_pool")]
    BufferPool,
    /// Clear the PFC watchdog statistics.
    Pfcwd,
}

#[derive(Subcommand)]
pub(crate) enum ClearQueue {
    Counters,
    Wredcounters,
    Watermark,
}

#[derive(Subcommand)]
pub(crate) enum ClearPg {
    Drop,
    Watermark,
}

#[derive(Subcommand)]
pub(crate) enum Pfcwd {
    /// `pfcwd show config` / `pfcwd show stats [-e] [--check-storm]`
    Show {
        #[command(subcommand)]
        what: PfcwdShow,
    },
    /// `pfcwd start --action drop|forward|alert [--restoration-time MS] PORTS DETECTION_MS`
    Start {
        #[arg(long, default_value = "drop")]
        action: String,
        #[arg(long, short = 'r')]
        restoration_time: Option<u32>,
        /// `all` or a comma-joined list of ports.
        ports: String,
        detection_time: u32,
    },
    /// Stop the watchdog on every port.
    Stop,
    /// Set the poll interval (ms, 100..1000).
    Interval { ms: u32 },
    /// Enable or disable the big red switch.
    #[command(name = "big_red_switch")]
    BigRedSwitch {
        #[arg(value_parser = ["enable", "disable"])]
        state: String,
    },
    /// Force (or stop forcing) the storm condition on a queue: SONiC's `DEBUG_STORM` fake storm.
    #[command(name = "debug_storm")]
    DebugStorm {
        port: String,
        queue: u32,
        #[arg(value_parser = ["enable", "disable"])]
        state: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum PfcwdShow {
    Config,
    Stats {
        /// Show every monitored queue, also those with nothing to report.
        #[arg(short = 'e', long)]
        all: bool,
        /// Exit 1 if any queue is stormed.
        #[arg(long)]
        check_storm: bool,
    },
}
