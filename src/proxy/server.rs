//! The proxy's sockets and threads: accept, decide (through [`policy`]), connect, relay.
//!
//! One thread accepts on each listening socket; each connection gets a thread that reads the
//! request, asks [`policy`] and either answers with a refusal or connects out and relays, with a
//! second thread for the way back. Threads, not async: a call's connections are few, and a
//! blocking relay is the simplest thing to read. The threads start only after the helper has
//! forked everything it forks (see `run`), and they end with the helper: the proxy lives exactly
//! as long as the call.
//!
//! What it guarantees: no byte reaches the network before [`policy::check_target`],
//! [`policy::RateLimit::take`] and [`policy::usable_addresses`] said yes for that connection; a
//! plain-HTTP request goes to the host of its own absolute URI, upstream is told
//! `Connection: close` so a kept-alive client connection cannot be turned to another host, and
//! the proxy's own headers (`Proxy-Authorization`, `Proxy-Connection`) are not forwarded.
//! Every refusal is recorded in the [`Log`] for the report.
//!
//! What it trusts: the system resolver (`getaddrinfo`) for names not pinned with `--resolve`;
//! its answers are checked, not trusted (an internal address is refused unless listed).

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs as _};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::door::Listener;
use super::policy::{self, ProxyRequest, RateLimit, Refused};
use super::{Log, ResolveOverride};
use crate::flags::InternetFlags;

/// The longest request head (request line and headers) the proxy reads.
const MAX_HEAD: usize = 64 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connect to the upstream host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections open at once; past it a new one is refused (a bound on the helper's
/// threads and descriptors, not a policy).
const MAX_OPEN: usize = 256;
/// Relay buffer size.
const RELAY_BUFFER: usize = 64 * 1024;

struct Shared {
    net: InternetFlags,
    resolve: Vec<ResolveOverride>,
    rate: Mutex<RateLimit>,
    log: Arc<Mutex<Log>>,
    open: AtomicUsize,
}

/// Starts one accepting thread per listening socket. The threads run until the process ends.
pub fn serve(
    listeners: Vec<(OwnedFd, Listener)>,
    net: InternetFlags,
    resolve: Vec<ResolveOverride>,
    log: Arc<Mutex<Log>>,
) {
    let shared = Arc::new(Shared {
        rate: Mutex::new(RateLimit::new(net.per_minute)),
        net,
        resolve,
        log,
        open: AtomicUsize::new(0),
    });
    for (fd, kind) in listeners {
        let shared = Arc::clone(&shared);
        let log = Arc::clone(&shared.log);
        if let Err(e) = std::thread::Builder::new().spawn(move || accept_loop(fd, kind, shared)) {
            // Nothing serves that socket: the program's connects to it wait and fail, and the
            // report says why. Less network than asked, never more.
            super::lock(&log).refuse("", 0, &format!("cannot start the proxy: {e}"));
        }
    }
}

fn accept_loop(listener: OwnedFd, kind: Listener, shared: Arc<Shared>) {
    loop {
        let client = match rustix::net::accept_with(&listener, rustix::net::SocketFlags::CLOEXEC) {
            Ok(fd) => TcpStream::from(fd),
            Err(rustix::io::Errno::INTR | rustix::io::Errno::CONNABORTED) => continue,
            // Out of descriptors or memory: wait a little rather than spin or give up.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if shared.open.fetch_add(1, Ordering::SeqCst) >= MAX_OPEN {
            shared.open.fetch_sub(1, Ordering::SeqCst);
            super::lock(&shared.log).refuse("", 0, "too many connections open at once");
            continue;
        }
        let worker = Arc::clone(&shared);
        let kind = kind.clone();
        let spawned = std::thread::Builder::new().spawn(move || {
            match &kind {
                Listener::Proxy => handle_proxy_client(client, &worker),
                Listener::Forward { host, port } => handle_forward(client, host, *port, &worker),
            }
            worker.open.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            // The closure never ran (and dropped the client): give its slot back.
            shared.open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A connection that the policy allowed and that is now open upstream.
fn open_upstream(shared: &Shared, host: &str, port: u16) -> Result<TcpStream, (u16, String)> {
    let refuse = |why: Refused| {
        let status = if why == Refused::RateSpent { 429 } else { 403 };
        super::lock(&shared.log).refuse(host, port, &why.to_string());
        (status, why.to_string())
    };
    policy::check_target(&shared.net, host, port).map_err(refuse)?;
    shared.rate.lock().unwrap_or_else(|e| e.into_inner()).take(Instant::now()).map_err(refuse)?;
    let resolved = resolve(shared, host, port).map_err(|why| {
        super::lock(&shared.log).refuse(host, port, &why);
        (502, why)
    })?;
    let usable = policy::usable_addresses(&shared.net, &resolved).map_err(refuse)?;
    let mut last_error = String::from("no address");
    for ip in usable {
        match TcpStream::connect_timeout(&SocketAddr::new(ip, port), CONNECT_TIMEOUT) {
            Ok(stream) => {
                super::lock(&shared.log).connections += 1;
                return Ok(stream);
            }
            Err(e) => last_error = format!("{ip}: {e}"),
        }
    }
    let why = format!("the host is allowed but could not be reached ({last_error})");
    super::lock(&shared.log).refuse(host, port, &why);
    Err((502, why))
}

/// The addresses of `host`: a `--resolve` pin, the literal itself, or the system resolver's.
fn resolve(shared: &Shared, host: &str, port: u16) -> Result<Vec<IpAddr>, String> {
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let pinned: Vec<IpAddr> =
        shared.resolve.iter().filter(|r| r.name == name && r.port == port).map(|r| r.address).collect();
    if !pinned.is_empty() {
        return Ok(pinned);
    }
    if let Some(ip) = policy::parse_ip_literal(host) {
        return Ok(vec![ip]);
    }
    let found =
        (name.as_str(), port).to_socket_addrs().map_err(|e| format!("the name does not resolve: {e}"))?;
    Ok(found.map(|a| a.ip()).collect())
}

/// A client of the HTTP proxy: one request, then a tunnel (CONNECT) or one forwarded exchange.
fn handle_proxy_client(mut client: TcpStream, shared: &Shared) {
    let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
    let (head, rest) = match read_head(&mut client) {
        Ok(h) => h,
        Err(why) => return answer(&mut client, 400, &why),
    };
    let (request, upstream_head) = match policy::parse_request_head(&head) {
        Ok(r) => r,
        Err(why) => return answer(&mut client, 400, &why),
    };
    let (host, port) = match &request {
        ProxyRequest::Connect { host, port } | ProxyRequest::Forward { host, port, .. } => {
            (host.clone(), *port)
        }
    };
    let mut upstream = match open_upstream(shared, &host, port) {
        Ok(s) => s,
        Err((status, why)) => return answer(&mut client, status, &why),
    };
    let _ = client.set_read_timeout(None);
    let sent = match &request {
        ProxyRequest::Connect { .. } => client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n"),
        ProxyRequest::Forward { .. } => upstream.write_all(upstream_head.as_bytes()),
    };
    if sent.is_err() || upstream.write_all(&rest).is_err() {
        return;
    }
    relay(client, upstream);
}

/// A client of a `tcp` endpoint's forwarder: no protocol, the policy, then the bytes.
fn handle_forward(client: TcpStream, host: &str, port: u16, shared: &Shared) {
    if let Ok(upstream) = open_upstream(shared, host, port) {
        relay(client, upstream);
    }
}

/// Reads up to the blank line that ends the request head; returns the head (without it) and
/// whatever bytes came after it.
fn read_head(client: &mut TcpStream) -> Result<(String, Vec<u8>), String> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = memchr::memmem::find(&buffer, b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            buffer.truncate(end);
            let head = String::from_utf8(buffer).map_err(|_| "the request head is not UTF-8".to_owned())?;
            return Ok((head, rest));
        }
        if buffer.len() > MAX_HEAD {
            return Err(format!("the request head is longer than {MAX_HEAD} bytes"));
        }
        match client.read(&mut chunk) {
            Ok(0) => return Err("the connection closed before the request ended".into()),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("reading the request: {e}")),
        }
    }
}

/// Answers with a status and a one-line reason (also in `X-Lnk-Refused`), then closes.
fn answer(client: &mut TcpStream, status: u16, why: &str) {
    let phrase = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        429 => "Too Many Requests",
        _ => "Bad Gateway",
    };
    let reason: String = why.chars().filter(|c| !c.is_control()).collect();
    let body = format!("lnk proxy: {reason}\n");
    let response = format!(
        "HTTP/1.1 {status} {phrase}\r\nX-Lnk-Refused: {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(response.as_bytes());
    let _ = client.shutdown(Shutdown::Write);
}

/// Copies both ways until each side has closed its sending half.
fn relay(client: TcpStream, upstream: TcpStream) {
    let (Ok(client_back), Ok(upstream_back)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let back = std::thread::Builder::new().spawn(move || pump(upstream_back, client_back));
    pump(client, upstream);
    if let Ok(back) = back {
        let _ = back.join();
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = vec![0u8; RELAY_BUFFER];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
