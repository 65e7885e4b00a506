//! Compiles `proto/lossless/v1/*.proto` with the protoc shipped in the `protoc-bin-vendored` crate, so a
//! fresh machine needs no system protoc. A file descriptor set is emitted for gRPC reflection.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY of intent: build scripts are single-threaded; prost-build reads PROTOC from the environment.
    unsafe { std::env::set_var("PROTOC", protoc) };

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let protos = ["proto/lossless/v1/common.proto", "proto/lossless/v1/switch.proto"];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    tonic_prost_build::configure()
        .file_descriptor_set_path(out_dir.join("lossless_v1_descriptor.bin"))
        .compile_protos(&protos, &["proto"])?;
    Ok(())
}
