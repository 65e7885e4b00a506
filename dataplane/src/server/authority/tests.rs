use super::*;

/// RFC 7541 Appendix C.4.1: the first request of the Huffman-coded examples (`:method GET`, `:scheme http`,
/// `:path /`, `:authority www.example.com`).
const RFC_C41: &[u8] =
    &[0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff];

/// A test-only Huffman encoder over the same table (to build blocks as gRPC C-core sends them).
fn huffman_encode(value: &[u8]) -> Vec<u8> {
    let (mut acc, mut bits, mut out) = (0u64, 0u32, Vec::new());
    for &b in value {
        let (code, len) = huffman_table::HUFFMAN_CODES[usize::from(b)];
        acc = acc << len | u64::from(code);
        bits += u32::from(len);
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        out.push((acc << (8 - bits)) as u8 | (0xff >> bits));
    }
    out
}

fn huffman_string(value: &[u8]) -> Vec<u8> {
    let coded = huffman_encode(value);
    let mut out = Vec::new();
    write_int(coded.len(), 7, 0x80, &mut out);
    out.extend_from_slice(&coded);
    out
}

/// `:method POST`, `:scheme http`, `:path /lossless.v1.Switch/GetCounters`, then `:authority` as given (a
/// literal with incremental indexing on the static name, as gRPC C-core sends it), then `te: trailers`.
fn grpc_block(authority: &[u8]) -> Vec<u8> {
    let mut b = vec![0x83, 0x86, 0x04];
    b.extend(huffman_string(b"/lossless.v1.Switch/GetCounters"));
    b.push(0x41);
    b.extend(huffman_string(authority));
    b.extend([0x40, 0x02]);
    b.extend(b"te");
    b.extend(huffman_string(b"trailers"));
    b
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    frame_header(payload.len(), kind, flags, stream.to_be_bytes(), &mut f);
    f.extend_from_slice(payload);
    f
}

/// Every field of a block, decoded (names and values), for comparing blocks.
fn fields(block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < block.len() {
        let first = block[at];
        if first & 0x80 != 0 {
            let (i, n) = read_int(&block[at..], 7).unwrap();
            out.push((format!("#{i}").into_bytes(), Vec::new()));
            at += n;
            continue;
        }
        let bits = if first & 0x40 != 0 { 6 } else { 4 };
        let (i, n) = read_int(&block[at..], bits).unwrap();
        at += n;
        let name = if i == 0 {
            let (name, n) = read_string(&block[at..]).unwrap();
            at += n;
            name
        } else {
            format!("#{i}").into_bytes()
        };
        let (value, n) = read_string(&block[at..]).unwrap();
        at += n;
        out.push((name, value));
    }
    out
}

fn run(fix: &mut AuthorityFix, input: &[u8], chunk: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for piece in input.chunks(chunk) {
        fix.feed(piece, &mut out);
    }
    out
}

#[test]
fn huffman_decodes_rfc_7541_examples() {
    // C.4.1's :authority and C.4.2's cache-control value.
    assert_eq!(huffman_decode(&RFC_C41[5..]).unwrap(), b"www.example.com");
    assert_eq!(huffman_decode(&[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]).unwrap(), b"no-cache");
    // Padding of 8 bits or more, or not all ones, is invalid (RFC 7541 section 5.2).
    assert_eq!(
        huffman_decode(&[0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff, 0xff]),
        None
    );
    assert_eq!(huffman_decode(&[0x1e]), None, "'0' (00000) then padding 110");
}

#[test]
fn a_valid_authority_is_left_alone() {
    assert_eq!(rewrite_block(RFC_C41), None);
    assert_eq!(rewrite_block(&grpc_block(b"localhost:50051")), None);
}

#[test]
fn what_grpc_clients_send_on_unix_sockets_is_refused_by_http_and_rewritten_to_what_it_accepts() {
    use tonic::codegen::http::uri::Authority;
    // gRPC C-core (grpcio, grpc-c++): the percent-encoded path; grpc-go dialers such as grpcurl's -unix:
    // the path itself.
    for sent in [&b"%2Frun%2Flossless%2Fsw.sock"[..], b"/run/lossless/sw.sock", b"unix:/run/x.sock"] {
        assert!(Authority::try_from(sent).is_err(), "h2 refuses {}", String::from_utf8_lossy(sent));
        let block = rewrite_block(&grpc_block(sent)).expect("rewritten");
        let f = fields(&block);
        let authority = &f.iter().find(|(n, _)| n == b"#1").unwrap().1;
        assert_eq!(authority.len(), sent.len(), "same length keeps the HPACK dynamic table in step");
        assert!(Authority::try_from(authority.as_slice()).is_ok(), "{}", String::from_utf8_lossy(authority));
        // Every other field is unchanged.
        let before = fields(&grpc_block(sent));
        assert_eq!(f.len(), before.len());
        for (a, b) in f.iter().zip(&before) {
            if a.0 != b"#1" {
                assert_eq!(a, b);
            }
        }
    }
    let block = rewrite_block(&grpc_block(b"%2Frun%2Flossless%2Fsw.sock")).unwrap();
    assert!(block.windows(27).any(|w| w == b"-2Frun-2Flossless-2Fsw.sock"));
}

#[test]
fn a_literal_authority_name_and_every_literal_kind_are_rewritten() {
    for kind in [0x00u8, 0x10, 0x40] {
        let mut block = vec![kind];
        block.extend([10]);
        block.extend(b":authority");
        block.extend([5]);
        block.extend(b"%2Fx1");
        let fixed = rewrite_block(&block).unwrap();
        assert_eq!(fixed, [&[kind, 10][..], b":authority", &[5], b"-2Fx1"].concat());
    }
}

#[test]
fn the_connection_stream_is_reframed_only_where_a_block_changed() {
    let settings = frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
    let good = grpc_block(b"localhost");
    let bad = grpc_block(b"%2Frun%2Fsw.sock");
    // Stream 1: a valid block. Stream 3: PADDED + PRIORITY, the block split over a CONTINUATION.
    let mut padded = vec![4u8];
    padded.extend([0x80, 0, 0, 1, 15]);
    padded.extend(&bad[..10]);
    padded.extend([0; 4]);
    let data = frame(0x0, 0x1, 3, &[0, 0, 0, 0, 2, 8, 1]);
    let input = [
        PREFACE.to_vec(),
        settings.clone(),
        frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &good),
        frame(TYPE_HEADERS, FLAG_PADDED | FLAG_PRIORITY | 0x1, 3, &padded),
        frame(TYPE_CONTINUATION, FLAG_END_HEADERS, 3, &bad[10..]),
        data.clone(),
    ]
    .concat();
    let fixed = rewrite_block(&bad).unwrap();
    let expected = [
        PREFACE.to_vec(),
        settings,
        frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &good),
        frame(
            TYPE_HEADERS,
            FLAG_PRIORITY | 0x1 | FLAG_END_HEADERS,
            3,
            &[&[0x80, 0, 0, 1, 15][..], &fixed].concat(),
        ),
        data,
    ]
    .concat();
    for chunk in [1, 7, 4096] {
        let mut fix = AuthorityFix::new();
        assert_eq!(run(&mut fix, &input, chunk), expected, "read {chunk} bytes at a time");
        assert_eq!(fix.rewritten(), 1);
    }
}

#[test]
fn a_large_block_is_split_into_continuations() {
    // A block of exactly the largest frame payload: the rewritten authority, a raw literal, is longer than
    // the Huffman-coded one it replaces, so the block no longer fits one frame.
    let mut block = grpc_block(b"%2Frun%2Fsw.sock");
    block.extend([0x40, 0x01, b'x']);
    let filler = MAX_FRAME_PAYLOAD_BYTES - block.len() - 3; // 3 bytes: the string's length
    write_int(filler, 7, 0, &mut block);
    block.extend(std::iter::repeat_n(b'a', filler));
    assert_eq!(block.len(), MAX_FRAME_PAYLOAD_BYTES);
    let input = [PREFACE.to_vec(), frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &block)].concat();
    let out = run(&mut AuthorityFix::new(), &input, 1000);
    let fixed = rewrite_block(&block).unwrap();
    let mut at = PREFACE.len();
    let mut joined = Vec::new();
    let mut kinds = Vec::new();
    while at < out.len() {
        let len = usize::from(out[at]) << 16 | usize::from(out[at + 1]) << 8 | usize::from(out[at + 2]);
        assert!(len <= MAX_FRAME_PAYLOAD_BYTES);
        kinds.push((out[at + 3], out[at + 4] & FLAG_END_HEADERS != 0));
        joined.extend_from_slice(&out[at + 9..at + 9 + len]);
        at += 9 + len;
    }
    assert_eq!(joined, fixed);
    assert_eq!(kinds.first(), Some(&(TYPE_HEADERS, false)));
    assert_eq!(kinds.last(), Some(&(TYPE_CONTINUATION, true)));
}

#[test]
fn what_is_not_http2_or_cannot_be_read_passes_unchanged() {
    let http1 = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    assert_eq!(run(&mut AuthorityFix::new(), &http1, 3), http1);
    // A truncated string literal in a block: h2 gets the client's bytes and reports the error.
    let broken = [PREFACE.to_vec(), frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &[0x41, 0x0f, b'a'])].concat();
    let mut fix = AuthorityFix::new();
    assert_eq!(run(&mut fix, &broken, 5), broken);
    assert_eq!(fix.rewritten(), 0);
    // A CONTINUATION with no HEADERS before it, then anything: passed through.
    let stray =
        [PREFACE.to_vec(), frame(TYPE_CONTINUATION, FLAG_END_HEADERS, 1, &grpc_block(b"%2F"))].concat();
    assert_eq!(run(&mut AuthorityFix::new(), &stray, 2), stray);
}

/// The connection adapter: what the server reads is the rewriter's output, whatever the client's writes were
/// cut into, and the client's end of stream is the server's.
#[tokio::test(flavor = "current_thread")]
async fn a_connection_reads_the_rewritten_stream_to_its_end() {
    let (client, server) = tokio::net::UnixStream::pair().unwrap();
    let input = [
        PREFACE.to_vec(),
        frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &grpc_block(b"%2Frun%2Flossless%2Fsw.sock")),
        frame(0x0, 0x1, 1, &[0, 0, 0, 0, 0]),
    ]
    .concat();
    let expected = run(&mut AuthorityFix::new(), &input, input.len());
    assert_ne!(expected, input);
    let writer = tokio::spawn(async move {
        for chunk in input.chunks(7) {
            let mut rest = chunk;
            while !rest.is_empty() {
                client.writable().await.unwrap();
                match client.try_write(rest) {
                    Ok(n) => rest = &rest[n..],
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        // Dropping the client ends the stream.
    });
    let mut fixed = FixedAuthority::new(server);
    let mut got = Vec::new();
    let mut buf = [0u8; 5];
    loop {
        let mut read = ReadBuf::new(&mut buf);
        std::future::poll_fn(|cx| Pin::new(&mut fixed).poll_read(cx, &mut read)).await.unwrap();
        if read.filled().is_empty() {
            break;
        }
        got.extend_from_slice(read.filled());
    }
    writer.await.unwrap();
    assert_eq!(got, expected);
}
