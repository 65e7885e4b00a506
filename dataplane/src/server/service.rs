//! `lossless.v1.Switch` over the runtime's [`Handle`].
//!
//! Reads (counters, watermarks, the running configuration) are served from what the model thread
//! publishes, never by running code there per request. An Apply is validated and compiled here, off the
//! model thread (on a blocking-pool thread), and only swapped in there; Applies are serialised, so the
//! generation and removal checks see the configuration they replace.
//!
//! gRPC errors carry `google.rpc` details: a refused configuration is INVALID_ARGUMENT with a
//! `BadRequest` whose field violations name `TABLE|key|field`; a push that would remove ports, router
//! interfaces, buffer pools or profiles without `replace` is FAILED_PRECONDITION with a
//! `PreconditionFailure` naming each `TABLE|key`; a stale `expected_generation` is ABORTED, an unknown port
//! NOT_FOUND, a stopped runtime UNAVAILABLE. `Validate` answers `valid: false` with the issues instead: for
//! it, an invalid configuration is an answer, not an error.

use super::convert;
use super::streams::{Limits, Streams, Subscription};
use crate::io::runtime::{Handle, ModelCtx};
use crate::model::config::{ConfigDb, ConfigErrors};
use crate::model::mmu::{WatermarkKind, WatermarkTables};
use crate::model::{PortId, Switch};
use lossless_proto::v1 as pb;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, FieldViolation, PreconditionViolation, StatusExt};

/// The shortest counter period a subscriber may ask for; shorter requests are raised to it.
pub const MIN_COUNTERS_INTERVAL: Duration = Duration::from_millis(10);

/// The `lossless.v1.Switch` service.
#[derive(Clone)]
pub struct SwitchService {
    handle: Handle,
    /// Becomes `true` when the server shuts down: open subscriptions end, so a graceful shutdown does not
    /// wait for streams that never finish.
    shutdown: watch::Receiver<bool>,
    /// One Apply at a time.
    apply_lock: Arc<tokio::sync::Mutex<()>>,
    streams: Arc<Streams>,
}

impl SwitchService {
    /// A service over `handle` with the default [`Limits`]. Subscriptions end when their client goes away
    /// (see [`super::serve`], which also ends them on shutdown).
    pub fn new(handle: Handle) -> SwitchService {
        // A sender dropped at once: `stopped` then never fires.
        SwitchService {
            handle,
            shutdown: watch::channel(false).1,
            apply_lock: Arc::default(),
            streams: Arc::new(Streams::new(Limits::default())),
        }
    }

    /// Ends open subscriptions when `shutdown` becomes `true`.
    pub fn with_shutdown(mut self, shutdown: watch::Receiver<bool>) -> SwitchService {
        self.shutdown = shutdown;
        self
    }

    /// Bounds the `Subscribe` streams.
    pub fn with_limits(mut self, limits: Limits) -> SwitchService {
        self.streams = Arc::new(Streams::new(limits));
        self
    }

    /// The registry of open `Subscribe` streams.
    pub fn streams(&self) -> Arc<Streams> {
        self.streams.clone()
    }

    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ModelCtx<'_>) -> R + Send + 'static,
    ) -> Result<R, Status> {
        self.handle.call(f).await.map_err(|gone| Status::unavailable(gone.to_string()))
    }

    async fn snapshot(&self) -> Result<Arc<crate::io::runtime::Snapshot>, Status> {
        self.handle.snapshot().await.map_err(|gone| Status::unavailable(gone.to_string()))
    }
}

fn port_of(switch: &Switch, name: &str) -> Result<PortId, Status> {
    switch.port_id(name).ok_or_else(|| Status::not_found(format!("no port {name}")))
}

fn queue_index(queue: u32) -> Result<u8, Status> {
    u8::try_from(queue).ok().filter(|&q| q < 8).ok_or_else(|| {
        bad_request(format!("queue {queue} is outside 0..7"), [("queue", "outside 0..7".to_owned())])
    })
}

/// INVALID_ARGUMENT with a `BadRequest` listing `(field, description)`.
fn bad_request(message: String, violations: impl IntoIterator<Item = (&'static str, String)>) -> Status {
    let violations: Vec<FieldViolation> =
        violations.into_iter().map(|(field, why)| FieldViolation::new(field, why)).collect();
    Status::with_error_details(Code::InvalidArgument, message, ErrorDetails::with_bad_request(violations))
}

/// A refused configuration: INVALID_ARGUMENT, one field violation per error (`TABLE|key|field`).
fn refused(e: &ConfigErrors) -> Status {
    let violations: Vec<FieldViolation> =
        e.errors.iter().map(|issue| FieldViolation::new(issue.location(), issue.message.clone())).collect();
    let first = e.errors.first().map(|i| i.to_string()).unwrap_or_default();
    let message = match e.errors.len() {
        1 => format!("configuration refused: {first}"),
        n => format!("configuration refused: {n} errors; the first: {first}"),
    };
    Status::with_error_details(Code::InvalidArgument, message, ErrorDetails::with_bad_request(violations))
}

/// The config of an Apply or Validate: absent is an error, never "an empty configuration". Converted on
/// a blocking-pool thread: a large one takes a while.
async fn required_config(config: Option<pb::ConfigDb>) -> Result<Arc<ConfigDb>, Status> {
    match config {
        Some(config) => background(move || Arc::new(convert::config_db_from_proto(config)))
            .await
            .map_err(|e| Status::internal(format!("reading the configuration failed: {e}"))),
        None => Err(bad_request(
            "the request has no config (an empty configuration must be sent as an empty ConfigDb)".into(),
            [("config", "required".to_owned())],
        )),
    }
}

/// Validates and compiles on a blocking-pool thread: never on the model thread, never on the thread that
/// runs the gRPC tasks; and at a lower priority, so that compiling a large configuration on a busy machine
/// does not take CPU time from forwarding.
async fn prepare(db: Arc<ConfigDb>) -> Result<Result<crate::model::Prepared, ConfigErrors>, Status> {
    background(move || Switch::prepare(&db))
        .await
        .map_err(|e| Status::internal(format!("validation failed: {e}")))
}

/// Runs `f` on a blocking-pool thread niced to [`BACKGROUND_NICE`].
pub(super) async fn background<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, tokio::task::JoinError> {
    tokio::task::spawn_blocking(move || {
        lower_priority();
        f()
    })
    .await
}

/// The nice value of the threads that read, compile and drop configurations.
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority (Linux nice values are per thread); best effort.
#[allow(unsafe_code)]
fn lower_priority() {
    // SAFETY: gettid has no preconditions; setpriority on our own thread id only changes its nice value.
    unsafe {
        let tid = libc::gettid();
        if libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) < BACKGROUND_NICE {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
        }
    }
}

#[tonic::async_trait]
impl pb::switch_server::Switch for SwitchService {
    async fn apply(&self, request: Request<pb::ApplyRequest>) -> Result<Response<pb::ApplyResponse>, Status> {
        let request = request.into_inner();
        let db = required_config(request.config).await?;
        let _one_at_a_time = self.apply_lock.lock().await;
        let running = self.handle.running();
        let expected = request.expected_generation;
        if expected != 0 && expected != running.generation {
            return Err(Status::aborted(format!(
                "expected generation {expected}, but the running generation is {}",
                running.generation
            )));
        }
        if !request.replace {
            let removed = running.config.guarded_removals(&db);
            if !removed.is_empty() {
                let shown = removed.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
                let more = if removed.len() > 5 {
                    format!(" and {} more", removed.len() - 5)
                } else {
                    String::new()
                };
                let violations: Vec<PreconditionViolation> = removed
                    .iter()
                    .map(|key| {
                        PreconditionViolation::new("REMOVAL", key, "absent from the new configuration")
                    })
                    .collect();
                return Err(Status::with_error_details(
                    Code::FailedPrecondition,
                    format!(
                        "the configuration would remove {shown}{more}; to replace the running configuration \
                         with it, resend with replace (swctl apply --replace)"
                    ),
                    ErrorDetails::with_precondition_failure(violations),
                ));
            }
        }
        let prepared = prepare(db.clone()).await?.map_err(|e| refused(&e))?;
        if request.dry_run {
            return Ok(Response::new(pb::ApplyResponse {
                accepted: true,
                generation: running.generation,
                issues: convert::issues_to_proto(&[], &prepared.warnings),
            }));
        }
        let (applied, retired) = self.call(move |ctx| ctx.switch.install(prepared, ctx.now)).await?;
        let replaced = self.handle.set_running(db, applied.generation);
        // The old configuration and its tables can be large: dropped off the model thread and off the
        // threads that serve requests.
        tokio::spawn(background(move || drop((retired, replaced))));
        tracing::info!(generation = applied.generation, "configuration applied");
        Ok(Response::new(pb::ApplyResponse {
            accepted: true,
            generation: applied.generation,
            issues: convert::issues_to_proto(&[], &applied.warnings),
        }))
    }

    async fn validate(
        &self,
        request: Request<pb::ValidateRequest>,
    ) -> Result<Response<pb::ValidateResponse>, Status> {
        let db = required_config(request.into_inner().config).await?;
        let response = match prepare(db).await? {
            Ok(prepared) => pb::ValidateResponse {
                valid: true,
                issues: convert::issues_to_proto(&[], &prepared.warnings),
            },
            Err(e) => pb::ValidateResponse {
                valid: false,
                issues: convert::issues_to_proto(&e.errors, &e.warnings),
            },
        };
        Ok(Response::new(response))
    }

    async fn get(&self, _: Request<pb::GetRequest>) -> Result<Response<pb::GetResponse>, Status> {
        let running = self.handle.running();
        Ok(Response::new(pb::GetResponse {
            config: Some(convert::config_db_to_proto(&running.config)),
            generation: running.generation,
        }))
    }

    async fn get_counters(
        &self,
        _: Request<pb::GetCountersRequest>,
    ) -> Result<Response<pb::GetCountersResponse>, Status> {
        let mut response = self.snapshot().await?.counters.to_proto();
        let (longest_command_ns, longest_snapshot_ns) = self.handle.stalls().longest();
        response.stalls = Some(pb::RuntimeStalls { longest_command_ns, longest_snapshot_ns });
        Ok(Response::new(response))
    }

    async fn get_watermarks(
        &self,
        request: Request<pb::GetWatermarksRequest>,
    ) -> Result<Response<pb::GetWatermarksResponse>, Status> {
        let request = request.into_inner();
        let kind = if request.persistent { WatermarkKind::Persistent } else { WatermarkKind::User };
        if request.clear {
            let tables = watermark_tables(&request.clear_tables)?;
            // Read and clear in one step on the model thread, so no peak falls between the two.
            let snapshot = self
                .call(move |ctx| {
                    let snapshot = convert::WatermarksSnapshot::take(ctx.switch, kind);
                    ctx.switch.clear_watermark_tables(kind, tables);
                    snapshot
                })
                .await?;
            return Ok(Response::new(snapshot.to_proto()));
        }
        let snapshot = self.snapshot().await?;
        let watermarks = match kind {
            WatermarkKind::User => &snapshot.watermarks,
            WatermarkKind::Persistent => &snapshot.persistent_watermarks,
        };
        Ok(Response::new(watermarks.to_proto()))
    }

    type SubscribeStream = super::streams::SubscribeStream;
    type CaptureStream = tokio_stream::wrappers::ReceiverStream<Result<pb::CapturedFrame, Status>>;

    async fn capture(
        &self,
        request: Request<pb::CaptureRequest>,
    ) -> Result<Response<Self::CaptureStream>, Status> {
        use crate::io::capture::{Direction, Sink};
        let request = request.into_inner();
        // Ports by name, in port order (the model's port ids); a later Apply that changes the port set does
        // not move a running capture.
        let snapshot = self.snapshot().await?;
        let names: Vec<String> = snapshot.counters.ports().iter().map(|p| p.name.clone()).collect();
        let mut ports = vec![request.ports.is_empty(); names.len()];
        for name in &request.ports {
            let i = names.iter().position(|n| n == name).ok_or_else(|| {
                bad_request(format!("no port {name}"), [("ports", format!("{name}: no such port"))])
            })?;
            ports[i] = true;
        }
        let (sink, mut captured) = Sink::new(ports, request.drops, request.snaplen as usize);
        let lost = sink.lost();
        let captures = self.handle.captures().clone();
        captures.add(sink);
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let mut shutdown = self.shutdown.clone();
        let wall = crate::clock::WallClock::process();
        let max = request.max_frames;
        tokio::spawn(async move {
            let mut sent = 0u64;
            loop {
                let frame = tokio::select! {
                    frame = captured.recv() => frame,
                    _ = shutdown.wait_for(|&stop| stop) => None,
                    () = tx.closed() => None,
                };
                let Some(c) = frame else { break };
                let message = pb::CapturedFrame {
                    timestamp_ns: c.timestamp_ns,
                    wall_time_unix_ns: wall.unix_ns(c.timestamp_ns),
                    port: names.get(c.port.index()).cloned().unwrap_or_default(),
                    direction: match c.direction {
                        Direction::Received => pb::captured_frame::Direction::Received,
                        Direction::Sent => pb::captured_frame::Direction::Sent,
                    } as i32,
                    frame: c.frame,
                    original_length: c.original_length as u32,
                    drop_reason: c.drop.map(|(reason, _)| reason.to_owned()).unwrap_or_default(),
                    queue: c.drop.and_then(|(_, q)| q).map_or(0, u32::from),
                    lost: lost.load(std::sync::atomic::Ordering::Relaxed),
                };
                if tx.send(Ok(message)).await.is_err() {
                    break;
                }
                sent += 1;
                if max > 0 && sent >= max {
                    break;
                }
            }
            drop(captured);
            captures.prune();
        });
        Ok(Response::new(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let peer = request.remote_addr().map_or_else(|| "local".to_owned(), |a| a.to_string());
        let request = request.into_inner();
        if !request.events && request.counters_interval_ms == 0 {
            return Err(bad_request(
                "nothing to subscribe to: set events and/or counters_interval_ms".into(),
                [("events", "false".to_owned()), ("counters_interval_ms", "0".to_owned())],
            ));
        }
        let counters_every = (request.counters_interval_ms > 0)
            .then(|| Duration::from_millis(request.counters_interval_ms.into()).max(MIN_COUNTERS_INTERVAL));
        let slot = self.streams.open(peer, request.events, counters_every)?;
        // Subscribed before the response goes out: once the client has the response, no event is missed.
        let events = request.events.then(|| self.handle.subscribe());
        let (subscription, stream) =
            Subscription::new(self.handle.clone(), self.shutdown.clone(), slot, events, counters_every);
        tokio::spawn(subscription.run());
        Ok(Response::new(stream))
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
        let entries = self.call(|ctx| super::convert::fdb_to_proto(ctx.switch)).await?;
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
        let entries = self.call(|ctx| super::convert::neighbors_to_proto(ctx.switch)).await?;
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

/// The tables a watermark clear names (none named: every table); an unknown number is refused.
fn watermark_tables(named: &[i32]) -> Result<WatermarkTables, Status> {
    if named.is_empty() {
        return Ok(WatermarkTables::ALL);
    }
    let mut tables = WatermarkTables::NONE;
    for &n in named {
        match pb::WatermarkTable::try_from(n) {
            Ok(pb::WatermarkTable::PgShared) => tables.pg_shared = true,
            Ok(pb::WatermarkTable::PgHeadroom) => tables.pg_headroom = true,
            Ok(pb::WatermarkTable::QueueUnicast) => tables.queue_shared = true,
            Ok(pb::WatermarkTable::BufferPool) => tables.pool_shared = true,
            Ok(pb::WatermarkTable::HeadroomPool) => tables.pool_headroom = true,
            Ok(pb::WatermarkTable::Unspecified) | Err(_) => {
                return Err(bad_request(
                    format!("clear_tables: {n} is not a watermark table"),
                    [("clear_tables", n.to_string())],
                ));
            }
        }
    }
    Ok(tables)
}
