//! switchd's Prometheus endpoint (`--metrics`), on the real binary in network namespaces: what it serves
//! agrees with the gRPC counters, passes `promtool check metrics`, and a real Prometheus scrapes it.
//! Needs root, iproute2 and Debian's `prometheus` package (promtool, prometheus); CI installs them. Outside CI
//! a missing Prometheus skips those two checks with a message.

use lossless_dataplane::io::netns::exec_in;
use lossless_proto::v1 as pb;
use lossless_testkit::frames::{send_all, star_roce};
use lossless_testkit::netns::Star;
use lossless_testkit::{Switchd, SwitchdCommand};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CONFIG: &str = include_str!("configs/switchd_congestion.yaml");
const METRICS: &str = "127.0.0.1:9101";

struct Lab {
    switchd: Switchd,
    star: Star,
    tokio: tokio::runtime::Runtime,
}

impl Lab {
    fn start() -> Lab {
        let star = Star::new("m", 3).unwrap();
        // The metrics listener is on the namespace's loopback.
        star.switch.ip(&["link", "set", "lo", "up"]).unwrap();
        let mut switchd = SwitchdCommand::new(env!("CARGO_BIN_EXE_switchd"))
            .netns(&star.switch)
            .name("m")
            .config_text("switch.yaml", CONFIG)
            .port("Ethernet0", "p0")
            .port("Ethernet4", "p1")
            .port("Ethernet8", "p2")
            .args(["--metrics", METRICS])
            .spawn()
            .expect("switchd starts");
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio.block_on(switchd.ready()).unwrap();
        Lab { switchd, star, tokio }
    }

    fn counters(&mut self) -> pb::GetCountersResponse {
        let mut c = self.tokio.block_on(self.switchd.client()).unwrap();
        self.tokio.block_on(c.get_counters(pb::GetCountersRequest {})).unwrap().into_inner()
    }

    /// `GET path` on the switch namespace's loopback: (status line, content type, body).
    fn http_get(&self, addr: &str, path: &str) -> (String, String, String) {
        let response = self
            .star
            .switch
            .within(|| {
                let mut s = TcpStream::connect(addr)?;
                s.set_read_timeout(Some(Duration::from_secs(10)))?;
                write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
                let mut out = String::new();
                s.read_to_string(&mut out)?;
                Ok(out)
            })
            .unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        let status = head.lines().next().unwrap_or_default().to_owned();
        let content_type = head
            .lines()
            .find_map(|l| l.strip_prefix("content-type: ").or_else(|| l.strip_prefix("Content-Type: ")))
            .unwrap_or_default()
            .to_owned();
        (status, content_type, body.to_owned())
    }
}

/// The value of the sample `name{labels}` (labels exactly as written) in an exposition.
fn sample(exposition: &str, series: &str) -> Option<f64> {
    exposition.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn tool(name: &str) -> bool {
    let found = Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "{name} is missing: .ci/run installs Debian's prometheus");
        eprintln!("{name} not installed (Debian's prometheus package): that check is skipped");
    }
    found
}

#[test]
fn metrics_agree_with_the_grpc_counters_and_pass_promtool() {
    let mut lab = Lab::start();
    let mut h1 = lab.star.hosts[0].open_port("eth0").unwrap();
    send_all(h1.as_mut(), &star_roce(1, 3, 3, 50, 200));
    // Until the frames stop moving: all 50 received on Ethernet0 and sent from Ethernet8's queue 3 (counting
    // them in is not enough: Ethernet8 is paced at its speed, and a snapshot taken while they are still queued
    // would disagree with a later one).
    let deadline = Instant::now() + Duration::from_secs(10);
    let counters = loop {
        let c = lab.counters();
        let port = |name: &str| c.ports.iter().find(|p| p.name == name);
        if port("Ethernet0").is_some_and(|p| p.rx_ok >= 50)
            && port("Ethernet8").is_some_and(|p| p.queues.get(3).is_some_and(|q| q.packets >= 50))
        {
            break c;
        }
        assert!(Instant::now() < deadline, "switchd did not count the 50 frames: {c:?}");
    };
    let (status, content_type, body) = lab.http_get(METRICS, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");

    // The exposition is the same snapshot kind the API serves: frames no longer move, so they agree.
    for port in &counters.ports {
        let get = |name: &str| sample(&body, &format!("{name}{{port=\"{}\"}}", port.name));
        assert_eq!(get("lossless_port_rx_packets_total"), Some(port.rx_ok as f64), "{}", port.name);
        assert_eq!(get("lossless_port_tx_packets_total"), Some(port.tx_ok as f64), "{}", port.name);
        assert_eq!(get("lossless_port_rx_drops_total"), Some(port.rx_drp as f64), "{}", port.name);
        assert_eq!(get("lossless_port_oper_up"), Some(1.0), "{}", port.name);
        for (q, queue) in port.queues.iter().enumerate() {
            let series = format!("lossless_queue_packets_total{{port=\"{}\",queue=\"{q}\"}}", port.name);
            assert_eq!(sample(&body, &series), Some(queue.packets as f64), "{series}");
        }
    }
    // Ethernet8 sent the 50 lossless frames from queue 3.
    let q3 = sample(&body, "lossless_queue_packets_total{port=\"Ethernet8\",queue=\"3\"}");
    assert_eq!(q3, Some(50.0), "{body}");
    let ledger = counters.ledger.unwrap();
    assert_eq!(sample(&body, "lossless_frames_total{outcome=\"received\"}"), Some(ledger.received as f64));
    assert_eq!(sample(&body, "lossless_config_generation"), Some(counters.generation as f64));
    // Watermarks in both periods; PFC per priority; the watchdog's status for the queues it monitors.
    assert!(
        body.contains(
            "lossless_queue_shared_watermark_bytes{port=\"Ethernet8\",queue=\"3\",period=\"user\"}"
        )
    );
    assert!(body.contains("period=\"persistent\""));
    assert!(body.contains("lossless_pfc_tx_frames_total{port=\"Ethernet0\",priority=\"3\"} 0"));
    // Every family is declared once.
    let mut declared: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("# TYPE ")).collect();
    let n = declared.len();
    declared.sort();
    declared.dedup();
    assert_eq!(declared.len(), n, "a family declared twice");

    // The shipped Grafana dashboard queries only families the switch serves.
    let dashboard: serde_json::Value =
        serde_json::from_str(include_str!("../../configs/grafana/lossless-switch.json")).unwrap();
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for name in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if name.starts_with("lossless_") {
                    queried += 1;
                    assert!(
                        body.contains(&format!("# TYPE {name} ")),
                        "{}: {name} is not served",
                        panel["title"]
                    );
                }
            }
        }
    }
    assert!(queried >= 15, "{queried}");

    if tool("promtool") {
        let mut check = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        check.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
        let out = check.wait_with_output().unwrap();
        let said =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.trim().is_empty(), "promtool check metrics: {said}");
    }
}

/// A Prometheus server in the switch's namespace; killed on drop.
struct Prometheus {
    server: Child,
    /// Its configuration and database, removed after it stops.
    _dir: tempdir::Dir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

mod tempdir {
    /// A directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);

    impl Dir {
        pub fn new(tag: &str) -> Dir {
            let path = std::env::temp_dir().join(format!("lossless-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn a_real_prometheus_scrapes_the_switch() {
    if !tool("prometheus") {
        return;
    }
    let lab = Lab::start();
    let dir = tempdir::Dir::new("prometheus");
    let config = dir.0.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{ scrape_interval: 1s, scrape_timeout: 900ms }}\n\
             scrape_configs:\n  - job_name: lossless\n    static_configs:\n      - targets: ['{METRICS}']\n"
        ),
    )
    .unwrap();
    let web = "127.0.0.1:9090";
    let server = exec_in(lab.star.switch.name(), "prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.0.join("data").display()))
        .arg(format!("--web.listen-address={web}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    let _prometheus = Prometheus { server, _dir: dir };

    // Prometheus answers a query for the switch's series once it has scraped it: wait for that answer.
    let query = "/api/v1/query?query=lossless_port_oper_up%7Bport%3D%22Ethernet8%22%7D";
    let deadline = Instant::now() + Duration::from_secs(60);
    let answer = loop {
        let response = lab.star.switch.within(|| {
            let mut s = TcpStream::connect(web)?;
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            write!(s, "GET {query} HTTP/1.1\r\nHost: {web}\r\nConnection: close\r\n\r\n")?;
            let mut out = String::new();
            s.read_to_string(&mut out)?;
            Ok(out)
        });
        if let Ok(text) = &response
            && text.contains("\"job\":\"lossless\"")
        {
            break text.clone();
        }
        assert!(Instant::now() < deadline, "Prometheus did not scrape the switch in 60 s: {response:?}");
        std::thread::sleep(Duration::from_millis(200)); // polling Prometheus's API: no event to await
    };
    assert!(answer.contains("\"port\":\"Ethernet8\""), "{answer}");
    assert!(answer.contains("\"1\"]"), "Ethernet8 is up: {answer}");
}
