//! Accepting the `:authority` real gRPC clients send on Unix sockets.
//!
//! grpcio and grpc-c++ (gRPC C-core) send the percent-encoded socket path (`%2Frun%2Flossless%2Fsw.sock`) as
//! `:authority` on `unix:` targets, grpcurl's `-unix` sends the path itself. hyperium/h2 parses `:authority`
//! as an RFC 3986 authority while it decodes the request headers and resets the stream (PROTOCOL_ERROR, which
//! clients report as INTERNAL) before tonic or any tower layer sees the request (hyperium/h2 pull request
//! 487). The authority means nothing on a Unix socket, so switchd rewrites it on the way in, below h2:
//! [`AuthorityFix`] reads the client-to-server byte stream frame by frame and, in each request header block,
//! replaces an `:authority` value h2 would refuse by one of the same length made of the characters an
//! authority may hold (`%2Frun%2Fsw.sock` becomes `-2Frun-2Fsw.sock`). Keeping the length keeps the HPACK
//! dynamic table in step: its entries are sized by their length, so the client's table and h2's evict the
//! same entries, and later references by index resolve to the rewritten value. Every other byte passes
//! unchanged. [`FixedAuthority`] applies it to a connection.
//!
//! Not covered: an `:authority` whose name is a reference to a dynamic-table entry (clients use the static
//! table's `:authority`, index 1, or a literal name); an empty authority (h2 refuses it; no client sends it).

mod huffman_table;

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client connection preface (RFC 9113 section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER_BYTES: usize = 9;
const TYPE_HEADERS: u8 = 0x1;
const TYPE_CONTINUATION: u8 = 0x9;
const FLAG_END_HEADERS: u8 = 0x4;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;
/// The largest frame payload emitted: SETTINGS_MAX_FRAME_SIZE's initial value, which a server always
/// accepts whatever it advertised.
const MAX_FRAME_PAYLOAD_BYTES: usize = 16_384;
/// A header block this large is passed on untouched rather than buffered further (h2 refuses far smaller
/// ones: its default header list limit is 16 MiB decoded, and tonic's requests are small).
const MAX_BUFFERED_BLOCK_BYTES: usize = 1 << 20;
/// The static table index of `:authority` (RFC 7541 Appendix A).
const STATIC_AUTHORITY: usize = 1;

/// Where the reader stands in the client's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting the rest of the connection preface (this many bytes of it seen).
    Preface(usize),
    /// At a frame boundary.
    Frames,
    /// Inside a frame that passes unchanged; this many payload bytes are still to come.
    Passing(usize),
    /// Not HTTP/2 as expected (or a block too large to buffer): everything passes unchanged from here on.
    Transparent,
}

/// A HEADERS frame whose header block continues in CONTINUATION frames.
#[derive(Debug)]
struct Pending {
    stream_id: [u8; 4],
    /// The HEADERS frame's flags without PADDED (the padding is not re-sent).
    flags: u8,
    priority: Option<[u8; 5]>,
    block: Vec<u8>,
}

/// The client-to-server rewriter (sans I/O): bytes in, rewritten bytes out.
#[derive(Debug)]
pub struct AuthorityFix {
    state: State,
    /// Bytes of an incomplete frame (HEADERS or CONTINUATION, or a frame header).
    buf: Vec<u8>,
    pending: Option<Pending>,
    rewritten: u64,
}

impl Default for AuthorityFix {
    fn default() -> Self {
        Self::new()
    }
}

impl AuthorityFix {
    /// A rewriter at the start of a connection.
    pub fn new() -> Self {
        Self { state: State::Preface(0), buf: Vec::new(), pending: None, rewritten: 0 }
    }

    /// How many `:authority` values were rewritten so far.
    #[cfg(test)]
    pub fn rewritten(&self) -> u64 {
        self.rewritten
    }

    /// Feeds bytes read from the client; appends what h2 should read to `out`.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            match self.state {
                State::Transparent => {
                    out.extend_from_slice(input);
                    return;
                }
                State::Preface(seen) => {
                    let n = input.len().min(PREFACE.len() - seen);
                    let (head, rest) = input.split_at(n);
                    out.extend_from_slice(head);
                    input = rest;
                    self.state = if head != &PREFACE[seen..seen + n] {
                        State::Transparent
                    } else if seen + n == PREFACE.len() {
                        State::Frames
                    } else {
                        State::Preface(seen + n)
                    };
                }
                State::Passing(left) => {
                    let n = input.len().min(left);
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    self.state = if n == left { State::Frames } else { State::Passing(left - n) };
                }
                State::Frames => {
                    // A frame header first (buffered across reads).
                    if self.buf.len() < FRAME_HEADER_BYTES {
                        let n = input.len().min(FRAME_HEADER_BYTES - self.buf.len());
                        self.buf.extend_from_slice(&input[..n]);
                        input = &input[n..];
                        if self.buf.len() < FRAME_HEADER_BYTES {
                            return;
                        }
                    }
                    let len = usize::from(self.buf[0]) << 16
                        | usize::from(self.buf[1]) << 8
                        | usize::from(self.buf[2]);
                    let kind = self.buf[3];
                    if kind != TYPE_HEADERS && kind != TYPE_CONTINUATION {
                        if self.pending.is_some() {
                            // A header block interrupted by another frame is a connection error for h2:
                            // hand it what the client sent.
                            self.give_up(out);
                            continue;
                        }
                        out.append(&mut self.buf);
                        self.state = if len == 0 { State::Frames } else { State::Passing(len) };
                        continue;
                    }
                    if len > MAX_BUFFERED_BLOCK_BYTES {
                        self.give_up(out);
                        continue;
                    }
                    let n = input.len().min(FRAME_HEADER_BYTES + len - self.buf.len());
                    self.buf.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if self.buf.len() == FRAME_HEADER_BYTES + len {
                        let frame = std::mem::take(&mut self.buf);
                        self.header_frame(frame, out);
                    }
                }
            }
        }
    }

    /// Passes on whatever is buffered as it came and stops rewriting this connection.
    fn give_up(&mut self, out: &mut Vec<u8>) {
        if let Some(p) = self.pending.take() {
            emit_headers(&p, &p.block, out);
        }
        out.append(&mut self.buf);
        self.state = State::Transparent;
    }

    /// One whole HEADERS or CONTINUATION frame.
    fn header_frame(&mut self, frame: Vec<u8>, out: &mut Vec<u8>) {
        let (kind, flags) = (frame[3], frame[4]);
        let stream_id: [u8; 4] = [frame[5], frame[6], frame[7], frame[8]];
        let payload = &frame[FRAME_HEADER_BYTES..];
        if kind == TYPE_CONTINUATION {
            let Some(p) = self.pending.as_mut().filter(|p| p.stream_id == stream_id) else {
                // Not following a HEADERS of that stream: h2's error to raise.
                self.buf = frame;
                self.give_up(out);
                return;
            };
            if p.block.len() + payload.len() > MAX_BUFFERED_BLOCK_BYTES {
                self.buf = frame;
                self.give_up(out);
                return;
            }
            p.block.extend_from_slice(payload);
            if flags & FLAG_END_HEADERS != 0 {
                let p = self.pending.take().expect("checked above");
                self.finish(p, out);
            }
            return;
        }
        if self.pending.is_some() {
            self.buf = frame;
            self.give_up(out);
            return;
        }
        // HEADERS: [pad length] [priority (5)] fragment [padding].
        let mut at = 0;
        let mut pad = 0;
        if flags & FLAG_PADDED != 0 {
            let Some(&p) = payload.first() else { return self.pass_frame(frame, out) };
            pad = usize::from(p);
            at = 1;
        }
        let mut priority = None;
        if flags & FLAG_PRIORITY != 0 {
            let Some(p) = payload.get(at..at + 5) else { return self.pass_frame(frame, out) };
            priority = Some([p[0], p[1], p[2], p[3], p[4]]);
            at += 5;
        }
        let Some(end) = payload.len().checked_sub(pad).filter(|&end| end >= at) else {
            return self.pass_frame(frame, out);
        };
        let p =
            Pending { stream_id, flags: flags & !FLAG_PADDED, priority, block: payload[at..end].to_vec() };
        if flags & FLAG_END_HEADERS != 0 {
            self.finish(p, out);
        } else {
            self.pending = Some(p);
        }
    }

    /// A malformed frame: h2 reports it.
    fn pass_frame(&mut self, frame: Vec<u8>, out: &mut Vec<u8>) {
        out.extend_from_slice(&frame);
    }

    /// A complete header block: rewritten if it needs it, re-framed.
    fn finish(&mut self, p: Pending, out: &mut Vec<u8>) {
        match rewrite_block(&p.block) {
            Some(block) => {
                self.rewritten += 1;
                emit_headers(&p, &block, out);
            }
            None => emit_headers(&p, &p.block, out),
        }
    }
}

/// A header block as one HEADERS frame and as many CONTINUATION frames as it needs.
fn emit_headers(p: &Pending, block: &[u8], out: &mut Vec<u8>) {
    let priority: &[u8] = p.priority.as_ref().map_or(&[], |p| p);
    let first = block.len().min(MAX_FRAME_PAYLOAD_BYTES - priority.len());
    let (head, mut rest) = block.split_at(first);
    let mut flags = p.flags & !FLAG_END_HEADERS;
    if rest.is_empty() {
        flags |= FLAG_END_HEADERS;
    }
    frame_header(priority.len() + head.len(), TYPE_HEADERS, flags, p.stream_id, out);
    out.extend_from_slice(priority);
    out.extend_from_slice(head);
    while !rest.is_empty() {
        let n = rest.len().min(MAX_FRAME_PAYLOAD_BYTES);
        let flags = if n == rest.len() { FLAG_END_HEADERS } else { 0 };
        frame_header(n, TYPE_CONTINUATION, flags, p.stream_id, out);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
    }
}

fn frame_header(len: usize, kind: u8, flags: u8, stream_id: [u8; 4], out: &mut Vec<u8>) {
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream_id);
}

/// The header block with every refused `:authority` value replaced, or None when it needs no change (or
/// cannot be read: h2 then reports the error on what the client sent).
fn rewrite_block(block: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(block.len() + 16);
    let mut changed = false;
    let mut at = 0;
    while at < block.len() {
        let first = block[at];
        let prefix_bits = match first {
            0x80..=0xff => {
                // Indexed field: copied.
                let (_, n) = read_int(&block[at..], 7)?;
                out.extend_from_slice(&block[at..at + n]);
                at += n;
                continue;
            }
            0x40..=0x7f => 6, // literal with incremental indexing
            0x20..=0x3f => {
                // Dynamic table size update: copied.
                let (_, n) = read_int(&block[at..], 5)?;
                out.extend_from_slice(&block[at..at + n]);
                at += n;
                continue;
            }
            _ => 4, // literal without indexing (0000) or never indexed (0001)
        };
        let start = at;
        let (name_index, n) = read_int(&block[at..], prefix_bits)?;
        at += n;
        let is_authority = if name_index == 0 {
            let (name, n) = read_string(&block[at..])?;
            at += n;
            name == b":authority"
        } else {
            name_index == STATIC_AUTHORITY
        };
        let value_start = at;
        let (value, n) = read_string(&block[at..])?;
        at += n;
        match is_authority.then(|| replacement(&value)).flatten() {
            Some(fixed) => {
                out.extend_from_slice(&block[start..value_start]);
                write_string(&fixed, &mut out);
                changed = true;
            }
            None => out.extend_from_slice(&block[start..at]),
        }
    }
    changed.then_some(out)
}

/// A same-length stand-in for an authority h2 would refuse: every character outside RFC 3986's unreserved
/// set becomes `-`. None when h2 accepts the value as it is (or it is empty: no stand-in has its length).
fn replacement(value: &[u8]) -> Option<Vec<u8>> {
    if value.is_empty() || tonic::codegen::http::uri::Authority::try_from(value).is_ok() {
        return None;
    }
    Some(
        value
            .iter()
            .map(
                |&b| {
                    if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') { b } else { b'-' }
                },
            )
            .collect(),
    )
}

/// An HPACK integer with an N-bit prefix (RFC 7541 section 5.1): (value, bytes used).
fn read_int(buf: &[u8], prefix_bits: u8) -> Option<(usize, usize)> {
    let mask = (1u16 << prefix_bits) as u8 - 1;
    let mut value = usize::from(*buf.first()? & mask);
    if value < usize::from(mask) {
        return Some((value, 1));
    }
    let mut shift = 0u32;
    for (i, &b) in buf.iter().enumerate().skip(1) {
        if shift > 28 {
            return None;
        }
        value += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
        shift += 7;
    }
    None
}

/// An HPACK string literal (RFC 7541 section 5.2), Huffman-decoded: (bytes, bytes used).
fn read_string(buf: &[u8]) -> Option<(Vec<u8>, usize)> {
    let huffman = *buf.first()? & 0x80 != 0;
    let (len, n) = read_int(buf, 7)?;
    let raw = buf.get(n..n.checked_add(len)?)?;
    let value = if huffman { huffman_decode(raw)? } else { raw.to_vec() };
    Some((value, n + len))
}

/// A raw (not Huffman-coded) HPACK string literal.
fn write_string(value: &[u8], out: &mut Vec<u8>) {
    write_int(value.len(), 7, 0x00, out);
    out.extend_from_slice(value);
}

fn write_int(value: usize, prefix_bits: u8, high_bits: u8, out: &mut Vec<u8>) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        out.push(high_bits | value as u8);
        return;
    }
    out.push(high_bits | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Decodes an HPACK Huffman string (RFC 7541 section 5.2, Appendix B). None if it is not valid: a code
/// not in the table, or padding that is longer than 7 bits or not the EOS prefix (all ones).
fn huffman_decode(raw: &[u8]) -> Option<Vec<u8>> {
    let table = huffman_lookup();
    let mut out = Vec::with_capacity(raw.len() * 8 / 5);
    let (mut code, mut len) = (0u32, 0u8);
    for &byte in raw {
        for bit in (0..8).rev() {
            code = code << 1 | u32::from(byte >> bit & 1);
            len += 1;
            if let Some(&sym) = table.get(&(len, code)) {
                out.push(sym);
                (code, len) = (0, 0);
            } else if len >= 30 {
                return None;
            }
        }
    }
    (len < 8 && code == (1 << len) - 1).then_some(out)
}

fn huffman_lookup() -> &'static std::collections::HashMap<(u8, u32), u8> {
    static TABLE: std::sync::OnceLock<std::collections::HashMap<(u8, u32), u8>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        huffman_table::HUFFMAN_CODES
            .iter()
            .enumerate()
            .map(|(sym, &(code, len))| ((len, code), sym as u8))
            .collect()
    })
}

/// A server-side connection whose incoming bytes go through [`AuthorityFix`]; writes pass straight through.
#[derive(Debug)]
pub struct FixedAuthority<S> {
    inner: S,
    fix: AuthorityFix,
    /// Rewritten bytes not yet handed to the reader.
    out: Vec<u8>,
    out_at: usize,
    scratch: Box<[u8]>,
}

impl<S> FixedAuthority<S> {
    /// Wraps a freshly accepted connection.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            fix: AuthorityFix::new(),
            out: Vec::new(),
            out_at: 0,
            scratch: vec![0; 16 * 1024].into(),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FixedAuthority<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_at < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_at);
                buf.put_slice(&this.out[this.out_at..this.out_at + n]);
                this.out_at += n;
                if this.out_at == this.out.len() {
                    this.out.clear();
                    this.out_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if read.filled().is_empty() => return Poll::Ready(Ok(())), // EOF
                Poll::Ready(Ok(())) => {
                    let filled = read.filled().len();
                    this.fix.feed(&this.scratch[..filled], &mut this.out);
                    // A partial frame produces nothing yet: read on.
                }
                other => return other,
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FixedAuthority<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for FixedAuthority<tokio::net::UnixStream> {
    type ConnectInfo = <tokio::net::UnixStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests;
