//! Counter snapshots behind `swctl clear ...`: like SONiC's `sonic-clear counters`, clearing stores the
//! switch's current (monotonic) counters in a file, and `show` prints the difference. One file per switch
//! endpoint and kind (`counters`, `queue`, `pfc`, `pg-drop`, `wred`, `pfcwd`: each `clear` command has its
//! own, as in SONiC) under `$XDG_RUNTIME_DIR/lossless` (or `/tmp/lossless-<uid>`), so nothing mixes.

use anyhow::Context;
use lossless_proto::v1::GetCountersResponse;
use prost::Message;
use std::path::PathBuf;

/// Where the snapshot of the switch at `endpoint` lives.
pub fn path(endpoint: &str, kind: &str) -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .map(|d| d.join("lossless"))
        .unwrap_or_else(|| {
            let uid =
                std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap_or(0);
            std::env::temp_dir().join(format!("lossless-{uid}"))
        });
    let name: String =
        endpoint.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect();
    base.join(format!("{name}.{kind}"))
}

/// Stores a snapshot (the baseline later shows subtract).
pub fn save(endpoint: &str, kind: &str, counters: &GetCountersResponse) -> anyhow::Result<PathBuf> {
    let path = path(endpoint, kind);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, counters.encode_to_vec()).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The stored baseline, if any (an unreadable one is ignored: showing totals is the safe fallback).
pub fn load(endpoint: &str, kind: &str) -> Option<GetCountersResponse> {
    let bytes = std::fs::read(path(endpoint, kind)).ok()?;
    GetCountersResponse::decode(bytes.as_slice()).ok()
}

/// When the baseline was stored (the last clear), as RFC 3339 UTC; `None` if there is none.
pub fn modified(endpoint: &str, kind: &str) -> Option<String> {
    let time = std::fs::metadata(path(endpoint, kind)).ok()?.modified().ok()?;
    let unix_ns = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    Some(lossless_dataplane::clock::format_unix_ns(u64::try_from(unix_ns).ok()?))
}

/// Forgets the baseline (`show` prints totals again).
pub fn remove(endpoint: &str, kind: &str) {
    let _ = std::fs::remove_file(path(endpoint, kind));
}
