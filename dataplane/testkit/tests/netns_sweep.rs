//! Stale test namespaces: a test process killed outright (nextest's timeout sends SIGKILL) runs no drop, so
//! its namespaces stay; the next process that creates a test namespace deletes them, with the processes
//! inside, and leaves those of live owners alone. The owners here are child processes (this test binary run
//! again, on the ignored helper below). Needs root and iproute2.

use lossless_dataplane::io::netns::{exec_in, namespace_exists};
use lossless_dataplane::process::Pid;
use lossless_testkit::child::{after_marker, rerun_test};
use lossless_testkit::netns::{self, OWNERS_DIR};
use std::io::{BufRead, BufReader, Lines, Read};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Tells the helper what to do: `hold` (two namespaces joined by a veth pair, a process inside the first,
/// then wait until stdin closes) or `create` (one namespace, then exit).
const CHILD_MODE: &str = "LOSSLESS_TESTKIT_SWEEP_CHILD";

#[test]
#[ignore = "a helper that the sweep test runs in a child process"]
fn sweep_child() {
    let Ok(mode) = std::env::var(CHILD_MODE) else { return };
    let a = netns::unique("tsa").unwrap();
    if mode == "create" {
        return;
    }
    let b = netns::unique("tsb").unwrap();
    a.veth("va", &b, "vb").unwrap();
    // `ip netns exec` execs `sleep`: the pid is the sleeper's, and it lives in namespace `a`.
    let mut sleeper = exec_in(a.name(), "sleep").arg("600").spawn().unwrap();
    println!("HOLDING {} {} {}", a.name(), b.name(), sleeper.id());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

/// A helper child holding namespaces: their names, the pid of the process inside, and the child's stdin
/// (closing it ends the child cleanly) and stdout (kept open until it ends: it still prints).
struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    namespaces: [String; 2],
    sleeper: u32,
}

fn helper(mode: &str) -> Command {
    rerun_test("sweep_child", CHILD_MODE, mode)
}

fn hold() -> Holder {
    let mut child = helper("hold").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let stdin = child.stdin.take();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let line =
        after_marker(&mut stdout, "HOLDING ").expect("the helper printed its namespaces (run as root)");
    let fields: Vec<&str> = line.split_whitespace().collect();
    Holder {
        namespaces: [fields[0].to_owned(), fields[1].to_owned()],
        sleeper: fields[2].parse().unwrap(),
        child,
        stdin,
        stdout,
    }
}

fn owner_file_exists(name: &str) -> bool {
    Path::new(OWNERS_DIR).join(name).exists()
}

/// Gone, or a zombie its new parent has not reaped yet. SIGKILL takes effect shortly after kill(2) returns,
/// so this waits for it, up to `limit`.
fn dies_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let dead = Pid::of(pid).is_none();
        if dead || Instant::now() >= deadline {
            return dead;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_owners_namespaces_are_swept_by_the_next_creation_and_a_live_owners_are_left() {
    let mut killed = hold();
    let mut live = hold();
    for ns in killed.namespaces.iter().chain(&live.namespaces) {
        assert!(namespace_exists(ns) && owner_file_exists(ns), "{ns} was not created with its owner file");
    }

    // SIGKILL: no drop runs, so the namespaces, the veth pair and the sleeper stay behind.
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    drop(killed.stdin.take());

    // The next process that creates a test namespace sweeps them.
    let out = helper("create").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    for ns in &killed.namespaces {
        assert!(!namespace_exists(ns), "{ns} of the killed owner is still there");
        assert!(!owner_file_exists(ns), "the owner file of {ns} is still there");
    }
    assert!(
        dies_within(killed.sleeper, Duration::from_secs(5)),
        "the process inside the killed owner's namespace (pid {}) still runs",
        killed.sleeper
    );
    for ns in &live.namespaces {
        assert!(namespace_exists(ns), "{ns} of a live owner was deleted");
    }
    assert!(!dies_within(live.sleeper, Duration::ZERO), "the live owner's process was killed");

    // The live owner, ended cleanly, deletes its own.
    drop(live.stdin.take());
    live.stdout.by_ref().for_each(drop);
    assert!(live.child.wait().unwrap().success());
    for ns in &live.namespaces {
        assert!(!namespace_exists(ns) && !owner_file_exists(ns), "{ns} left after a clean exit");
    }
}
