//! Generated code for the Lossless gRPC API (`lossless.v1`).
//!
//! The `.proto` sources live in `proto/proto/lossless/v1/`; they are compiled at build time with a vendored
//! protoc, so nothing needs to be installed on the build machine.

#![allow(clippy::all, clippy::pedantic)]

pub mod v1 {
    tonic::include_proto!("lossless.v1");

    /// Encoded `FileDescriptorSet` of every lossless.v1 file, for the gRPC reflection service.
    pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("lossless_v1_descriptor");
}
