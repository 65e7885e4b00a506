//! The arguments of swctl's subcommands (`show`, `clear`, `pfcwd`, `fdb`, `watch`).

use clap::{Subcommand, ValueEnum};

#[derive(Subcommand)]
pub(crate) enum Show {
    /// `show interfaces counters [errors|rates|detailed PORT]`, `show interfaces status`
    Interfaces {
        #[command(subcommand)]
        what: InterfacesWhat,
    },
    /// `show queue counters|wredcounters [PORT]`, `show queue watermark|persistent-watermark unicast`
    Queue {
        #[command(subcommand)]
        what: QueueWhat,
    },
    /// `show pfc counters [--history]`, `show pfc priority|asymmetric [PORT]`
    Pfc {
        #[command(subcommand)]
        what: PfcWhat,
    },
    /// `show priority-group watermark|persistent-watermark shared|headroom`, `... drop counters`
    #[command(name = "priority-group")]
    PriorityGroup {
        #[command(subcommand)]
        what: PgWhat,
    },
    /// `show buffer_pool watermark|persistent-watermark`
    #[command(name = "buffer_pool")]
    BufferPool {
        #[command(subcommand)]
        what: WatermarkOnly,
    },
    /// `show headroom-pool watermark|persistent-watermark`
    #[command(name = "headroom-pool")]
    HeadroomPool {
        #[command(subcommand)]
        what: WatermarkOnly,
    },
    /// `show dropcounters counts`: per port, the standard drop columns and every drop reason counted.
    Dropcounters {
        #[command(subcommand)]
        what: DropcountersWhat,
    },
    /// `show arp [IPADDRESS] [--iface IFACE]`: the IPv4 neighbour table, or the neighbours with that
    /// address or on that interface (`-if IFACE` as SONiC spells it, or `--iface IFACE`).
    Arp {
        ipaddress: Option<String>,
        #[arg(long)]
        iface: Option<String>,
    },
    /// `show ndp [IPADDRESS] [--iface IFACE]`: the IPv6 neighbour table.
    Ndp {
        ipaddress: Option<String>,
        #[arg(long)]
        iface: Option<String>,
    },
    /// `show mac [-v VLAN] [-p PORT] [-a MAC] [-t static|dynamic] [-c]`: the FDB (also `swctl fdb show`).
    Mac {
        #[arg(short = 'v', long, value_parser = clap::value_parser!(u32).range(1..4096))]
        vlan: Option<u32>,
        #[arg(short = 'p', long)]
        port: Option<String>,
        /// A MAC address, aa:bb:cc:dd:ee:ff.
        #[arg(short = 'a', long)]
        address: Option<String>,
        #[arg(short = 't', long = "type", value_parser = ["static", "dynamic", "Static", "Dynamic"])]
        kind: Option<String>,
        /// The number of entries only.
        #[arg(short = 'c', long)]
        count: bool,
    },
    /// `show vlan brief`
    Vlan {
        #[command(subcommand)]
        what: VlanWhat,
    },
    /// `show ip route`: connected subnets and static routes of the running configuration.
    Ip {
        #[command(subcommand)]
        what: RouteWhat,
    },
    /// `show ipv6 route`
    Ipv6 {
        #[command(subcommand)]
        what: RouteWhat,
    },
    /// `show buffer configuration` (the configured pools and profiles) / `show buffer information` (what
    /// the switch runs with).
    Buffer {
        #[command(subcommand)]
        what: BufferWhat,
    },
    /// `show mmu`: as `show buffer configuration`.
    Mmu,
    /// `show runningconfiguration all|ports [PORT]|interfaces [INTERFACE]`: the running configuration as
    /// config_db.json, or its PORT / INTERFACE table.
    Runningconfiguration {
        #[command(subcommand)]
        what: RunningWhat,
    },
}

#[derive(Subcommand)]
pub(crate) enum DropcountersWhat {
    /// Drop counts per port (dropstat -c show).
    Counts,
}

#[derive(Subcommand)]
pub(crate) enum BufferWhat {
    Configuration,
    Information,
}

#[derive(Subcommand)]
pub(crate) enum VlanWhat {
    Brief,
}

#[derive(Subcommand)]
pub(crate) enum RouteWhat {
    Route,
}

#[derive(Subcommand)]
pub(crate) enum RunningWhat {
    /// The whole running configuration (config_db.json).
    All,
    /// The PORT table, or one port's fields.
    Ports { portname: Option<String> },
    /// The INTERFACE table, or one key's fields.
    Interfaces { interfacename: Option<String> },
}

#[derive(Subcommand)]
pub(crate) enum InterfacesWhat {
    /// Port counters with rates over a sampling period (portstat); `errors`, `rates`, `detailed PORT`.
    Counters {
        /// Seconds between the two samples the rates come from (portstat -p); 0: one sample, no rates.
        #[arg(short = 'p', long, default_value_t = 1)]
        period: u64,
        /// Only this interface (`show interfaces counters -i Ethernet0`).
        #[arg(short = 'i', long)]
        interface: Option<String>,
        #[command(subcommand)]
        view: Option<CountersView>,
    },
    /// Lanes, speed, MTU, FEC, alias, VLAN mode, oper and admin state per port (intfutil status); only
    /// the ports named (`Ethernet0`, `Ethernet0,Ethernet8`, `Ethernet0-8`).
    Status { interfacename: Option<String> },
}

#[derive(Subcommand)]
pub(crate) enum CountersView {
    /// Error and drop columns (portstat -e).
    Errors,
    /// Byte, packet and utilisation rates (portstat -R).
    Rates {
        /// Seconds between the two samples the rates come from.
        #[arg(short = 'p', long, default_value_t = 1)]
        period: u64,
    },
    /// Every counter of one port (portstat -l -i PORT).
    Detailed { port: String },
}

#[derive(Subcommand)]
pub(crate) enum QueueWhat {
    Counters {
        port: Option<String>,
        /// Only queues with a counter above zero (queuestat's `-nz`).
        #[arg(long)]
        nonzero: bool,
    },
    Wredcounters {
        port: Option<String>,
        /// Only queues with a counter above zero (wredstat's `-nz`).
        #[arg(long)]
        nonzero: bool,
    },
    Watermark {
        #[command(subcommand)]
        which: QueueWatermark,
    },
    /// The persistent watermark (not cleared by `clear queue watermark`).
    #[command(name = "persistent-watermark")]
    PersistentWatermark {
        #[command(subcommand)]
        which: QueueWatermark,
    },
}

/// watermarkstat's queue tables: every queue of the model is unicast (`all` shows them as `ALL<i>`,
/// `multicast` says there are none, as SONiC does on a switch without multicast queues).
#[derive(Subcommand, Clone, Copy)]
pub(crate) enum QueueWatermark {
    Unicast,
    Multicast,
    All,
}

#[derive(Subcommand)]
pub(crate) enum PfcWhat {
    Counters {
        #[arg(long)]
        history: bool,
    },
    /// Lossless priorities per port (PORT_QOS_MAP pfc_enable).
    Priority { port: Option<String> },
    /// Asymmetric PFC per port (PORT pfc_asym).
    Asymmetric { port: Option<String> },
}

#[derive(Subcommand)]
pub(crate) enum PgWhat {
    Watermark {
        #[arg(value_enum)]
        kind: PgKind,
    },
    #[command(name = "persistent-watermark")]
    PersistentWatermark {
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
    #[command(name = "persistent-watermark")]
    PersistentWatermark,
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
    /// `sonic-clear buffer_pool watermark|persistent-watermark`.
    #[command(name = "buffer_pool")]
    BufferPool {
        #[command(subcommand)]
        what: Option<ClearWatermark>,
    },
    /// Clear the PFC watchdog statistics.
    Pfcwd,
    /// `sonic-clear queuecounters` (as `clear queue counters`).
    Queuecounters,
    /// `sonic-clear pfccounters` (as `clear pfc`).
    Pfccounters,
    /// `sonic-clear dropcounters`.
    Dropcounters,
    /// `sonic-clear headroom-pool watermark`.
    #[command(name = "headroom-pool")]
    HeadroomPool {
        #[command(subcommand)]
        what: Option<ClearWatermark>,
    },
}

/// `watermark` or `persistent-watermark` after a `sonic-clear` name.
#[derive(Subcommand, Clone, Copy)]
pub(crate) enum ClearWatermark {
    Watermark,
    #[command(name = "persistent-watermark")]
    PersistentWatermark,
}

#[derive(Subcommand)]
pub(crate) enum ClearQueue {
    Counters,
    Wredcounters,
    /// `sonic-clear queue watermark [unicast|multicast|all]`.
    Watermark {
        #[command(subcommand)]
        which: Option<QueueWatermark>,
    },
    /// `sonic-clear queue persistent-watermark [unicast|multicast|all]`.
    #[command(name = "persistent-watermark")]
    PersistentWatermark {
        #[command(subcommand)]
        which: Option<QueueWatermark>,
    },
}

#[derive(Subcommand)]
pub(crate) enum ClearPg {
    /// `sonic-clear priority-group drop counters`.
    Drop {
        #[command(subcommand)]
        what: Option<DropWhat>,
    },
    /// `sonic-clear priority-group watermark [shared|headroom]`.
    Watermark {
        #[arg(value_enum)]
        kind: Option<PgKind>,
    },
    /// `sonic-clear priority-group persistent-watermark shared|headroom`.
    #[command(name = "persistent-watermark")]
    PersistentWatermark {
        #[arg(value_enum)]
        kind: Option<PgKind>,
    },
}

#[derive(Subcommand)]
pub(crate) enum Pfcwd {
    /// `pfcwd show config` / `pfcwd show stats [-e] [--check-storm]`
    Show {
        #[command(subcommand)]
        what: PfcwdShow,
    },
    /// `pfcwd start [-a drop|forward|alert] [-r MS] [--pfc-stat-history] [PORTS...] DETECTION_MS`
    Start {
        #[arg(long, short = 'a', value_parser = ["drop", "forward", "alert"])]
        action: Option<String>,
        /// Default: twice the detection time, as SONiC's.
        #[arg(long, short = 'r')]
        restoration_time: Option<u32>,
        #[arg(long)]
        pfc_stat_history: bool,
        /// The ports (`all`, names, or a comma-joined list; none: every port), then the detection time
        /// in ms (100..=5000).
        #[arg(num_args = 1.., required = true)]
        ports_then_detection_ms: Vec<String>,
    },
    /// `pfcwd stop [PORTS...]`: stop the watchdog on these ports (none: every port).
    Stop { ports: Vec<String> },
    /// `pfcwd start_default`: the default watchdog on every lossless port, if DEVICE_METADATA
    /// default_pfcwd_status is enable.
    #[command(name = "start_default")]
    StartDefault,
    /// `pfcwd counter_poll enable|disable` (FLEX_COUNTER_TABLE|PFCWD).
    #[command(name = "counter_poll")]
    CounterPoll {
        #[arg(value_parser = ["enable", "disable"])]
        state: String,
    },
    /// `pfcwd pfc_stat_history enable|disable [PORTS...]`
    #[command(name = "pfc_stat_history")]
    PfcStatHistory {
        #[arg(value_parser = ["enable", "disable"])]
        state: String,
        ports: Vec<String>,
    },
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
        /// Only these queues (`Ethernet0:3`).
        queues: Vec<String>,
    },
}

/// `swctl watch` filters and flood folding.
#[derive(clap::Args)]
pub(crate) struct WatchArgs {
    /// Only these event kinds (repeat, or comma-join; `pfc_storm*` matches by prefix): xoff, xon,
    /// pfc_storm_detected, pfc_storm_restored, config_applied, fdb_learned, fdb_aged, neighbor_learned,
    /// neighbor_aged, port_oper_up, port_oper_down.
    #[arg(long = "kind", value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Only events on these ports (SONiC names; repeat or comma-join).
    #[arg(long = "port", value_delimiter = ',')]
    pub ports: Vec<String>,
    /// Only events on these queues or PGs (repeat or comma-join).
    #[arg(long = "queue", value_delimiter = ',')]
    pub queues: Vec<u32>,
    /// XOFF/XON of one port and PG: print the first of each window of this many milliseconds and then a
    /// summary of how many more came; 0 prints every one.
    #[arg(long, default_value_t = 1000)]
    pub summary_ms: u64,
}
