//! rocehost: a RoCEv2 host NIC on a real Linux interface, for netns labs (see
//! [`lossless_dataplane::rocehost`]).

fn main() -> std::process::ExitCode {
    lossless_dataplane::rocehost::main()
}
