//! `lossless.v1.Switch` over the runtime's [`Handle`]: every RPC is one closure run on the model thread
//! (so a configuration applies between two frames, atomically), and conversion to protobuf happens back on
//! the gRPC side.
//!
//! A refused configuration is not a gRPC error: the response says `accepted: false` and carries every
//! issue, so a client can print them all. gRPC errors are kept for requests that cannot be carried out at
//! all: a stale `expected_generation` (ABORTED), an unknown port (NOT_FOUND), an out-of-range queue or
//! VLAN (INVALID_ARGUMENT), a stopped runtime (UNAVAILABLE).

use super::convert::{self, CountersSnapshot, PortNames, WatermarksSnapshot};
use crate::io::runtime::{Handle, ModelCtx, TimedEvent};
use crate::model::mmu::WatermarkKind;
use crate::model::{Event, PortId, Switch};
use lossless_proto::v1 as pb;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

/// The shortest counter period a subscriber may ask for; shorter requests are raised to it.
pub const MIN_COUNTERS_INTERVAL: Duration = Duration::from_millis(10);
/// Items buffered per subscriber; a subscriber that falls further behind skips events (never blocks the
/// switch, which publishes into a bounded broadcast channel).
const SUBSCRIBER_BUFFER: usize = 256;

/// The `lossless.v1.Switch` service.
#[derive(Clone)]
pub struct SwitchService {
    handle: Handle,
    /// Becomes `true` when the server shuts down: open subscriptions end, so a graceful shutdown does not
    /// wait for streams that never finish.
    shutdown: watch::Receiver<bool>,
}

impl SwitchService {
    /// A service over `handle`. Subscriptions end when their client goes away (see [`super::serve`], which
    /// also ends them on shutdown).
    pub fn new(handle: Handle) -> SwitchService {
        // A sender dropped at once: `stopped` then never fires.
        SwitchService { handle, shutdown: watch::channel(false).1 }
    }

    /// Ends open subscriptions when `shutdown` becomes `true`.
    pub fn with_shutdown(mut self, shutdown: watch::Receiver<bool>) -> SwitchService {
        self.shutdown = shutdown;
        self
    }

    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ModelCtx<'_>) -> R + Send + 'static,
    ) -> Result<R, Status> {
        self.handle.call(f).await.map_err(|gone| Status::unavailable(gone.to_string()))
    }
}

fn port_of(switch: &Switch, name: &str) -> Result<PortId, Status> {
    switch.port_id(name).ok_or_else(|| Status::not_found(format!("no port {name}")))
}

fn queue_index(queue: u32) -> Result<u8, Status> {
    u8::try_from(queue)
        .ok()
        .filter(|&q| q < 8)
        .ok_or_else(|| Status::invalid_argument(format!("queue {queue} is outside 0..7")))
}

#[tonic::async_trait]
impl pb::switch_server::Switch for SwitchService {
    async fn apply(&self, request: Request<pb::ApplyRequest>) -> Result<Response<pb::ApplyResponse>, Status> {
        let request = request.into_inner();
        let db = convert::config_db_from_proto(request.config.unwrap_or_default());
        let (dry_run, expected) = (request.dry_run, request.expected_generation);
        let response = self
            .call(move |ctx| {
                let running = ctx.switch.generation();
                if expected != 0 && expected != running {
                    return Err(Status::aborted(format!(
                        "expected generation {expected}, but the running generation is {running}"
                    )));
                }
                let refused = |e: crate::model::config::ConfigErrors| pb::ApplyResponse {
                    accepted: false,
                    generation: running,
                    issues: convert::issues_to_proto(&e.errors, &e.warnings),
                };
                Ok(if dry_run {
                    match ctx.switch.validate(&db) {
                        Ok(warnings) => pb::ApplyResponse {
                            accepted: true,
                            generation: running,
                            issues: convert::issues_to_proto(&[], &warnings),
                        },
                        Err(e) => refused(e),
                    }
                } else {
                    match ctx.switch.apply(&db, ctx.now_ns) {
                        Ok(applied) => {
                            *ctx.config = db;
                            pb::ApplyResponse {
                                accepted: true,
                                generation: applied.generation,
                                issues: convert::issues_to_proto(&[], &applied.warnings),
                            }
                        }
                        Err(e) => refused(e),
                    }
                })
            })
            .await??;
        if response.accepted && !dry_run {
            tracing::info!(generation = response.generation, "configuration applied");
        }
        Ok(Response::new(response))
    }

    async fn validate(
        &self,
        request: Request<pb::ValidateRequest>,
    ) -> Result<Response<pb::ValidateResponse>, Status> {
        let db = convert::config_db_from_proto(request.into_inner().config.unwrap_or_default());
        let response = self
            .call(move |ctx| match ctx.switch.validate(&db) {
                Ok(warnings) => {
                    pb::ValidateResponse { valid: true, issues: convert::issues_to_proto(&[], &warnings) }
                }
                Err(e) => pb::ValidateResponse {
                    valid: false,
                    issues: convert::issues_to_proto(&e.errors, &e.warnings),
                },
            })
            .await?;
        Ok(Response::new(response))
    }

    async fn get(&self, _: Request<pb::GetRequest>) -> Result<Response<pb::GetResponse>, Status> {
        let (db, generation) = self.call(|ctx| (ctx.config.clone(), ctx.switch.generation())).await?;
        Ok(Response::new(pb::GetResponse { config: Some(convert::config_db_to_proto(&db)), generation }))
    }

    async fn get_counters(
        &self,
        _: Request<pb::GetCountersRequest>,
    ) -> Result<Response<pb::GetCountersResponse>, Status> {
        let snapshot = self.call(|ctx| CountersSnapshot::take(ctx.switch, ctx.now_ns)).await?;
        Ok(Response::new(snapshot.into_proto()))
    }

    async fn get_watermarks(
        &self,
        request: Request<pb::GetWatermarksRequest>,
    ) -> Result<Response<pb::GetWatermarksResponse>, Status> {
        let request = request.into_inner();
        let kind = if request.persistent { WatermarkKind::Persistent } else { WatermarkKind::User };
        let snapshot = self
            .call(move |ctx| {
                let snapshot = WatermarksSnapshot::take(ctx.switch, kind);
                if request.clear {
                    ctx.switch.clear_watermarks(kind);
                }
                snapshot
            })
            .await?;
        Ok(Response::new(snapshot.into_proto()))
    }

    type SubscribeStream = ReceiverStream<Result<pb::SubscribeResponse, Status>>;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let request = request.into_inner();
        if !request.events && request.counters_interval_ms == 0 {
            return Err(Status::invalid_argument(
                "nothing to subscribe to: set events and/or counters_interval_ms",
            ));
        }
        // Subscribed before the response goes out: once the client has the response, no event is missed.
        let events = request.events.then(|| self.handle.subscribe());
        let counters_every = (request.counters_interval_ms > 0)
            .then(|| Duration::from_millis(request.counters_interval_ms.into()).max(MIN_COUNTERS_INTERVAL));
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BUFFER);
        let subscription = Subscription {
            handle: self.handle.clone(),
            shutdown: self.shutdown.clone(),
            events,
            counters: counters_every.map(|period| {
                let mut ticker = tokio::time::interval(period);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                ticker
            }),
            tx,
        };
        tokio::spawn(subscription.run());
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn set_hold(
        &self,
        request: Request<pb::SetHoldRequest>,
    ) -> Result<Response<pb::SetHoldResponse>, Status> {
        let request = request.into_inner();
        let queue = request.queue.map(queue_index).transpose()?;
        self.call(move |ctx| {
            let port = port_of(ctx.switch, &request.port)?;
            match queue {
                Some(q) => ctx.switch.set_queue_hold(port, q, request.hold),
                None => ctx.switch.set_port_hold(port, request.hold),
            }
            Ok::<_, Status>(())
        })
        .await??;
        Ok(Response::new(pb::SetHoldResponse {}))
    }

    async fn set_debug_storm(
        &self,
        request: Request<pb::SetDebugStormRequest>,
    ) -> Result<Response<pb::SetDebugStormResponse>, Status> {
        let request = request.into_inner();
        let queue = queue_index(request.queue)?;
        self.call(move |ctx| {
            let port = port_of(ctx.switch, &request.port)?;
            ctx.switch.set_debug_storm(port, queue, request.enabled);
            Ok::<_, Status>(())
        })
        .await??;
        Ok(Response::new(pb::SetDebugStormResponse {}))
    }

    async fn dump_fdb(
        &self,
        _: Request<pb::DumpFdbRequest>,
    ) -> Result<Response<pb::DumpFdbResponse>, Status> {
        let entries = self
            .call(|ctx| {
                let ports = &ctx.switch.config().ports;
                ctx.switch
                    .fdb()
                    .entries()
                    .into_iter()
                    .map(|(vid, mac, e)| pb::FdbEntry {
                        vlan: vid.into(),
                        mac: mac.to_string(),
                        port: ports.get(e.port).map(|p| p.name.clone()).unwrap_or_default(),
                        is_static: e.is_static,
                    })
                    .collect()
            })
            .await?;
        Ok(Response::new(pb::DumpFdbResponse { entries }))
    }

    async fn flush_fdb(
        &self,
        request: Request<pb::FlushFdbRequest>,
    ) -> Result<Response<pb::FlushFdbResponse>, Status> {
        let request = request.into_inner();
        let vid = request
            .vlan
            .map(|v| {
                u16::try_from(v)
                    .ok()
                    .filter(|v| (1..=4094).contains(v))
                    .ok_or_else(|| Status::invalid_argument(format!("VLAN {v} is outside 1..4094")))
            })
            .transpose()?;
        let flushed = self
            .call(move |ctx| {
                let port = request.port.as_deref().map(|name| port_of(ctx.switch, name)).transpose()?;
                Ok::<_, Status>(ctx.switch.flush_fdb(vid, port))
            })
            .await??;
        Ok(Response::new(pb::FlushFdbResponse { flushed: flushed as u64 }))
    }

    async fn dump_neighbors(
        &self,
        _: Request<pb::DumpNeighborsRequest>,
    ) -> Result<Response<pb::DumpNeighborsResponse>, Status> {
        let entries = self
            .call(|ctx| {
                let interfaces = &ctx.switch.config().interfaces;
                ctx.switch
                    .neighbors()
                    .entries()
                    .into_iter()
                    .map(|(ip, n)| pb::NeighborEntry {
                        ip: ip.to_string(),
                        mac: n.mac.to_string(),
                        interface: interfaces.get(n.rif).map(|r| r.name.clone()).unwrap_or_default(),
                        is_static: n.is_static,
                    })
                    .collect()
            })
            .await?;
        Ok(Response::new(pb::DumpNeighborsResponse { entries }))
    }

    async fn flush_neighbors(
        &self,
        _: Request<pb::FlushNeighborsRequest>,
    ) -> Result<Response<pb::FlushNeighborsResponse>, Status> {
        let flushed = self.call(|ctx| ctx.switch.flush_neighbors()).await?;
        Ok(Response::new(pb::FlushNeighborsResponse { flushed: flushed as u64 }))
    }
}

/// One `Subscribe` stream: a task that forwards events and counter snapshots until the client goes away,
/// the server shuts down or the runtime stops.
struct Subscription {
    handle: Handle,
    shutdown: watch::Receiver<bool>,
    events: Option<broadcast::Receiver<TimedEvent>>,
    counters: Option<tokio::time::Interval>,
    tx: mpsc::Sender<Result<pb::SubscribeResponse, Status>>,
}

enum Next {
    Event(TimedEvent),
    /// The subscriber fell this far behind the switch's event channel; the events were skipped.
    Lagged(u64),
    Counters,
    Done,
}

impl Subscription {
    async fn run(mut self) {
        let Ok(mut ports) = self.handle.call(|ctx| PortNames::take(ctx.switch)).await else {
            let _ = self.tx.send(Err(Status::unavailable("the switch runtime has stopped"))).await;
            return;
        };
        let mut last_at_ns = 0;
        loop {
            let next = tokio::select! {
                () = self.tx.closed() => Next::Done,
                () = stopped(&mut self.shutdown) => Next::Done,
                next = next_event(&mut self.events) => next,
                () = tick(&mut self.counters) => Next::Counters,
            };
            let item = match next {
                Next::Done => return,
                Next::Event(timed) => {
                    last_at_ns = timed.at_ns;
                    if let Event::ConfigApplied { generation } = timed.event
                        && generation > ports.generation
                    {
                        // Later events refer to the new port set.
                        match self.handle.call(|ctx| PortNames::take(ctx.switch)).await {
                            Ok(names) => ports = names,
                            Err(_) => return self.gone().await,
                        }
                    }
                    pb::subscribe_response::Item::Event(convert::event_to_proto(&timed, &ports))
                }
                Next::Lagged(skipped) => {
                    tracing::debug!(skipped, "a subscriber fell behind; events skipped");
                    pb::subscribe_response::Item::Event(pb::SwitchEvent {
                        timestamp_ns: last_at_ns,
                        kind: "events_lost".into(),
                        message: format!("subscriber fell behind: {skipped} event(s) skipped"),
                        port: String::new(),
                        index: u32::try_from(skipped).unwrap_or(u32::MAX),
                    })
                }
                Next::Counters => {
                    match self.handle.call(|ctx| CountersSnapshot::take(ctx.switch, ctx.now_ns)).await {
                        Ok(snapshot) => pb::subscribe_response::Item::Counters(snapshot.into_proto()),
                        Err(_) => return self.gone().await,
                    }
                }
            };
            let sent = tokio::select! {
                sent = self.tx.send(Ok(pb::SubscribeResponse { item: Some(item) })) => sent.is_ok(),
                () = stopped(&mut self.shutdown) => false,
            };
            if !sent {
                return;
            }
        }
    }

    async fn gone(self) {
        let _ = self.tx.send(Err(Status::unavailable("the switch runtime has stopped"))).await;
    }
}

/// Resolves once the server shuts down (never, for a service without a shutdown signal).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|&stop| stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn next_event(events: &mut Option<broadcast::Receiver<TimedEvent>>) -> Next {
    let Some(rx) = events else { return std::future::pending().await };
    match rx.recv().await {
        Ok(timed) => Next::Event(timed),
        Err(broadcast::error::RecvError::Lagged(skipped)) => Next::Lagged(skipped),
        Err(broadcast::error::RecvError::Closed) => Next::Done,
    }
}

async fn tick(counters: &mut Option<tokio::time::Interval>) {
    match counters {
        Some(ticker) => {
            ticker.tick().await;
        }
        None => std::future::pending().await,
    }
}
