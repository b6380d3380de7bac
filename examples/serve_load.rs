//! A bounded load generator for `age2048 serve`, loopback only: `CLIENTS` clients, each on
//! its own keep-alive connection, for `SECONDS`, a mix of look-ups (`/api/best` of boards
//! sampled from the solve), game steps (`/api/game`, a game growing move by move) and
//! queries (`/api/sql`: a cheap one; on client 0 a slow one over every 3x3 state, on client 1
//! hostile ones in turn: rows that take a gigabyte, cut at the reply's 32 MiB, and a constant
//! of 100 million numbers DuckDB folds outside its memory limit). Each client connects from a
//! loopback address of its own (client `i` from 127.0.0.`i + 2`, as the server counts clients
//! by address), so that the load is the one distinct users make. It prints a Markdown table of
//! latencies by kind (median, p99, max; a hostile query's refusal counts as its answer; the
//! hostile queries also by text), the
//! requests that failed, the refused ones per kind (503, with how many carried `Retry-After`),
//! the server's resident memory sampled every second and its peak
//! (`/proc/PID/status`), and its query processes' (`serve-sql-worker`, its children).
//!
//! ```sh
//! cargo run --example serve_load -- 127.0.0.1:8048 SERVER_PID 32 60
//! ```
//! (`benches/serve.sh` starts the server over data/ and writes `reports/bench/serve.md`.)

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One keep-alive connection.
struct Client {
    addr: String,
    stream: BufReader<TcpStream>,
}

#[path = "support/loopback.rs"]
mod loopback;
use loopback::connect_from;

/// Client `i`'s own loopback address: 127.0.0.`i + 2` (127.0.0.1 samples the boards).
fn client_ip(i: usize) -> [u8; 4] {
    [127, 0, (i / 250) as u8, (i % 250 + 2) as u8]
}

impl Client {
    fn connect(addr: &str) -> std::io::Result<Client> {
        Client::on(addr, TcpStream::connect(addr)?)
    }

    /// A connection from client `i`'s own address.
    fn connect_as(addr: &str, i: usize) -> std::io::Result<Client> {
        let to: SocketAddr = addr.parse().map_err(std::io::Error::other)?;
        Client::on(addr, connect_from(client_ip(i), to)?)
    }

    fn on(addr: &str, s: TcpStream) -> std::io::Result<Client> {
        // Longer than the server's query limit (120 s by default): every answer is waited for.
        s.set_read_timeout(Some(Duration::from_secs(300)))?;
        s.set_nodelay(true)?;
        Ok(Client {
            addr: addr.to_string(),
            stream: BufReader::new(s),
        })
    }

    /// One request; the status, the body and whether the answer carried `Retry-After`.
    fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &str,
    ) -> std::io::Result<(u16, String, bool)> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        self.stream.get_mut().write_all(head.as_bytes())?;
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line '{line}'")))?;
        let mut len = 0usize;
        let mut retry = false;
        loop {
            line.clear();
            self.stream.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
                retry |= k.eq_ignore_ascii_case("retry-after");
            }
        }
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf)?;
        Ok((status, String::from_utf8_lossy(&buf).into_owned(), retry))
    }
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// xorshift64*, enough to pick boards and kinds.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn rss_mib(pid: u32) -> Option<f64> {
    status_mib(pid, "VmRSS:")
}

/// A memory figure of `/proc/PID/status` (`VmRSS:`, `VmHWM:`), in MiB.
fn status_mib(pid: u32, key: &str) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Queries whose result would take a gigabyte of memory at once (1,000 rows of 1 MB), and
/// whose constant DuckDB builds while binding, outside its memory limit and its interrupt.
const HOSTILE: [&str; 2] = [
    "SELECT repeat('x', 1000000) AS s FROM range(1000)",
    "SELECT range(100000000) AS r",
];

/// The resident memory of the server's query processes (its children running
/// `serve-sql-worker`), summed, in MiB.
fn workers_rss_mib(pid: u32) -> f64 {
    let mut total = 0.0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let ppid = stat[close + 1..].split_whitespace().nth(1);
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        if ppid == Some(pid.to_string().as_str())
            && String::from_utf8_lossy(&cmdline).contains("serve-sql-worker")
        {
            total += rss_mib(child).unwrap_or(0.0);
        }
    }
    total
}

/// Seconds of DuckDB's work over every 3x3 state: the median state value of each age.
const SLOW: &str = "SELECT age, quantile_cont(value, 0.5) AS median_value FROM states WHERE board = '3x3' AND variant = 'expectation' GROUP BY age ORDER BY age";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: serve_load ADDR SERVER_PID CLIENTS SECONDS");
        std::process::exit(2);
    }
    let addr = args[1].clone();
    let sock: SocketAddr = addr.parse().expect("ADDR is ip:port");
    assert!(sock.ip().is_loopback(), "loopback only");
    let pid: u32 = args[2].parse().expect("SERVER_PID");
    let clients: usize = args[3].parse().expect("CLIENTS");
    let seconds: u64 = args[4].parse().expect("SECONDS");
    assert!(
        clients <= 256 && seconds <= 3600,
        "bounded: at most 256 clients, an hour"
    );

    // Boards to look up: a sample of the 3x3 states, as board text.
    let mut c = Client::connect(&addr).expect("server answers");
    let q = r#"{"query": "SELECT board_text(id, board) AS b FROM states WHERE board = '3x3' AND variant = 'expectation' USING SAMPLE 5000 ROWS"}"#;
    let (status, body, _) = c.request("POST", "/api/sql", q).expect("sample");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let boards: Arc<Vec<String>> = Arc::new(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[0].as_str().unwrap().to_string())
            .collect(),
    );
    eprintln!(
        "{} boards sampled; {clients} clients for {seconds} s",
        boards.len()
    );

    let lat: Arc<Mutex<BTreeMap<&'static str, Vec<f64>>>> = Arc::default();
    // The hostile queries' latencies by text (the refusals and the answers cut apart).
    let by_text: Arc<Mutex<[Vec<f64>; 2]>> = Arc::default();
    let failed: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    // By kind: refused 503, of them with Retry-After, answered with another status.
    let refused: Arc<Mutex<BTreeMap<&'static str, [usize; 3]>>> = Arc::default();
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut rss: Vec<f64> = Vec::new();
    let mut workers_rss: Vec<f64> = Vec::new();
    let mut anon: Vec<f64> = Vec::new();
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let (addr, boards, lat, failed, refused, by_text) = (
                addr.clone(),
                boards.clone(),
                lat.clone(),
                failed.clone(),
                refused.clone(),
                by_text.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                let mut client = Client::connect_as(&addr, i).expect("connect");
                let mut moves = String::new();
                let seed = i as u64;
                let mut hostile = 0usize;
                while Instant::now() < end {
                    let r = rng.next() % 100;
                    let (kind, method, path, body): (&str, &str, String, String) = if i == 0 {
                        ("slow query", "POST", "/api/sql".into(), serde_json::json!({ "query": SLOW }).to_string())
                    } else if i == 1 {
                        hostile += 1;
                        ("hostile query", "POST", "/api/sql".into(), serde_json::json!({ "query": HOSTILE[hostile % 2] }).to_string())
                    } else if r < 70 {
                        let b = &boards[(rng.next() % boards.len() as u64) as usize];
                        ("look-up", "GET", format!("/api/best?board=3x3&b={}", enc(b)), String::new())
                    } else if r < 92 {
                        ("game step", "GET", format!("/api/game?board=3x3&seed={seed}&moves={moves}"), String::new())
                    } else {
                        ("query", "POST", "/api/sql".into(), r#"{"query": "SELECT variant, sum(n_states) FROM ages WHERE board = '3x3' GROUP BY ALL"}"#.into())
                    };
                    let t = Instant::now();
                    let res = client.request(method, &path, &body);
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    if kind == "hostile query" && matches!(res, Ok((200 | 400 | 408 | 422, _, _))) {
                        by_text.lock().unwrap()[hostile % 2].push(ms);
                    }
                    match res {
                        Ok((200, body, _)) => {
                            lat.lock().unwrap().entry(kind).or_default().push(ms);
                            if kind == "game step" {
                                // Play on by the best move, a new game when this one ends.
                                let g: serde_json::Value = serde_json::from_str(&body).unwrap();
                                match g["now"]["best"].as_str() {
                                    Some(b) => moves.push_str(b),
                                    None => moves.clear(),
                                }
                            }
                        }
                        // A hostile query's refusal (out of memory, out of time) is its answer.
                        Ok((400 | 408 | 422, body, _)) if kind == "hostile query" => {
                            lat.lock().unwrap().entry(kind).or_default().push(ms);
                            let why: String = body.chars().take(60).collect();
                            *failed.lock().unwrap().entry(format!("hostile query refused (expected): {why}")).or_default() += 1;
                        }
                        Ok((s, body, retry)) => {
                            {
                                let mut refused = refused.lock().unwrap();
                                let r = refused.entry(kind).or_default();
                                if s == 503 {
                                    r[0] += 1;
                                    r[1] += usize::from(retry);
                                } else {
                                    r[2] += 1;
                                }
                            }
                            // One line a reason, not one a count of the queue or a time.
                            let body: String = body
                                .chars()
                                .take(100)
                                .map(|c| if c.is_ascii_digit() { '#' } else { c })
                                .collect();
                            *failed.lock().unwrap().entry(format!("answered {s}: {kind}: {}", body.chars().take(100).collect::<String>())).or_default() += 1;
                        }
                        Err(e) => {
                            *failed.lock().unwrap().entry(format!("not answered: {kind}: {e}")).or_default() += 1;
                            client = match Client::connect_as(&addr, i) {
                                Ok(c) => c,
                                Err(_) => return,
                            };
                        }
                    }
                }
            })
        })
        .collect();
    while Instant::now() < end {
        if let Some(m) = rss_mib(pid) {
            rss.push(m);
        }
        workers_rss.push(workers_rss_mib(pid));
        if let Some(m) = status_mib(pid, "RssAnon:") {
            anon.push(m);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    for t in threads {
        let _ = t.join();
    }
    let rss_end = rss_mib(pid).unwrap_or(f64::NAN);
    let peak = status_mib(pid, "VmHWM:").unwrap_or(f64::NAN);
    println!("| kind | answered | refused 503 | other status | median ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut total = 0;
    let refused = refused.lock().unwrap();
    let mut lat = lat.lock().unwrap();
    for kind in [
        "look-up",
        "game step",
        "query",
        "slow query",
        "hostile query",
    ] {
        let v = lat.entry(kind).or_default();
        v.sort_by(f64::total_cmp);
        total += v.len();
        let r = refused.get(kind).copied().unwrap_or_default();
        println!(
            "| {kind} | {} | {} | {} | {:.2} | {:.2} | {:.2} |",
            v.len(),
            r[0],
            r[2],
            pct(v, 0.5),
            pct(v, 0.99),
            v.last().copied().unwrap_or(f64::NAN)
        );
    }
    let (busy, with_retry): (usize, usize) = refused
        .values()
        .fold((0, 0), |(a, b), r| (a + r[0], b + r[1]));
    println!();
    println!("{busy} requests refused 503, {with_retry} of them with Retry-After; the latencies are of the answered requests (a hostile query's refusal, 400/408/422, is its answer)");
    let failed = failed.lock().unwrap();
    let unanswered: usize = failed
        .iter()
        .filter(|(k, _)| k.starts_with("not answered"))
        .map(|(_, n)| n)
        .sum();
    let expected: usize = failed
        .iter()
        .filter(|(k, _)| k.starts_with("hostile query refused"))
        .map(|(_, n)| n)
        .sum();
    let other: usize = failed.values().sum::<usize>() - unanswered - expected;
    println!();
    println!(
        "{total} requests answered in {seconds} s ({:.0}/s; {expected} of them hostile queries refused, as expected), {other} answered with another status, {unanswered} not answered",
        total as f64 / seconds as f64
    );
    for (what, n) in failed.iter() {
        println!("- {n} × {what}");
    }
    let mut by_text = by_text.lock().unwrap();
    for (text, v) in HOSTILE.iter().zip(by_text.iter_mut()) {
        v.sort_by(f64::total_cmp);
        println!(
            "- hostile `{text}`: {} answered, median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            v.len(),
            pct(v, 0.5),
            pct(v, 0.99),
            v.last().copied().unwrap_or(f64::NAN)
        );
    }
    let first = rss.first().copied().unwrap_or(f64::NAN);
    let max = rss.iter().copied().fold(f64::NAN, f64::max);
    println!(
        "server resident memory: {first:.0} MiB at the start, at most {max:.0} MiB, {rss_end:.0} MiB at the end (sampled every second); its peak (VmHWM) {peak:.0} MiB"
    );
    let every10: Vec<String> = rss.iter().step_by(10).map(|m| format!("{m:.0}")).collect();
    println!("resident memory every 10 s, MiB: {}", every10.join(", "));
    let amax = anon.iter().copied().fold(f64::NAN, f64::max);
    println!(
        "of which its own (RssAnon, not the index files it maps): at most {amax:.0} MiB (sampled every second)"
    );
    let wmax = workers_rss.iter().copied().fold(f64::NAN, f64::max);
    let w10: Vec<String> = workers_rss
        .iter()
        .step_by(10)
        .map(|m| format!("{m:.0}"))
        .collect();
    println!(
        "query processes' resident memory, together: at most {wmax:.0} MiB (sampled every second); every 10 s, MiB: {}",
        w10.join(", ")
    );
}
