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
//! [`policy::RateLimit::take`] and [`policy::usable_addresses`] said yes for that connection. A
//! plain-HTTP connection carries one request: the head [`request::parse_request_head`] wrote
//! (its `Host` the checked target's, upstream told `Connection: close`, the proxy's own headers
//! dropped), then exactly the body its framing delimits; the client is not read past that body,
//! so a pipelined or smuggled second request never reaches any upstream, and the connection
//! closes after the answer. A CONNECT tunnel is opaque: what the client sent after its head goes
//! into that tunnel only. Every refusal, a malformed request's (400) included, is recorded in the
//! [`Log`] for the report.
//!
//! Every thread that reads the program's bytes or the upstream's is confined first
//! ([`crate::thread_confinement`]: no file by any path, no process, no signal, TCP/IP sockets
//! only): the accepting threads confine themselves before their first `accept`, and the
//! connections' threads they start inherit it. A thread that cannot be confined serves nothing.
//!
//! What it trusts: the system resolver (`getaddrinfo`) for names not pinned with `--resolve`,
//! run in the [`Resolver`]'s threads, the only ones of the proxy that are not confined (the
//! resolver reads files and may ask a local daemon); they are given a name the policy already
//! allowed, never the program's bytes. Its answers are checked, not trusted (an internal address
//! is refused unless listed).

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs as _};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::door::Listener;
use super::policy::{self, RateLimit, Refused};
use super::request::{self, Body, Malformed, ProxyRequest};
use super::{Log, ResolveOverride};
use crate::flags::InternetFlags;
use crate::proxy::loopback::{ADMISSION_WAIT, Loopback};
use crate::thread_confinement::{self, RelayFilter};

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
/// How long a read of a request's body waits before checking whether the upstream has answered
/// and closed already (then the body is not waited for).
const BODY_POLL: Duration = Duration::from_millis(250);
/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long, and how many bytes, the proxy reads and drops after answering (see [`linger`]).
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1024 * 1024;

struct Shared {
    net: InternetFlags,
    resolve: Vec<ResolveOverride>,
    rate: Mutex<RateLimit>,
    log: Arc<Mutex<Log>>,
    open: AtomicUsize,
    /// On the host's loopback (the held door), the connections the helper made, which alone
    /// are served.
    admitted_by: Option<Arc<Loopback>>,
    resolver: Resolver,
}

/// Names resolved outside the confined threads. The C library's resolver reads `/etc/hosts`
/// and `/etc/resolv.conf` and asks DNS (musl's always; glibc's `files dns` whatever
/// `nsswitch.conf` says, see `crate::sys::resolve_hosts_with_files_and_dns`; no NSS module is
/// loaded): nothing a confined thread may do. One thread, started unconfined before any
/// thread reads a byte of the program's, starts a short-lived thread per lookup (a slow name
/// holds up no other) and hands the answer back.
struct Resolver {
    lookups: mpsc::Sender<Lookup>,
}

/// A name and port to resolve, and where the answer goes.
struct Lookup {
    name: String,
    port: u16,
    answer: mpsc::SyncSender<Result<Vec<IpAddr>, String>>,
}

impl Resolver {
    fn start() -> std::io::Result<Resolver> {
        // Once a process, before its first lookup (see the function's documentation).
        static FILES_AND_DNS: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        FILES_AND_DNS
            .get_or_init(|| crate::sys::resolve_hosts_with_files_and_dns().map_err(|e| e.to_string()))
            .clone()
            .map_err(std::io::Error::other)?;
        let (lookups, asked) = mpsc::channel::<Lookup>();
        std::thread::Builder::new().spawn(move || {
            for lookup in asked {
                let Lookup { name, port, answer } = lookup;
                let failed = answer.clone();
                let spawned = std::thread::Builder::new().spawn(move || {
                    let found = (name.as_str(), port)
                        .to_socket_addrs()
                        .map(|found| found.map(|a| a.ip()).collect())
                        .map_err(|e| format!("the name does not resolve: {e}"));
                    let _ = answer.send(found);
                });
                if let Err(e) = spawned {
                    let _ = failed.send(Err(format!("cannot resolve now: {e}")));
                }
            }
        })?;
        Ok(Resolver { lookups })
    }

    /// The addresses of `name`, from the system resolver, asked from a confined thread.
    fn resolve(&self, name: &str, port: u16) -> Result<Vec<IpAddr>, String> {
        let (answer, answered) = mpsc::sync_channel(1);
        let lookup = Lookup { name: name.to_owned(), port, answer };
        self.lookups.send(lookup).map_err(|_| "the proxy's resolver is gone".to_owned())?;
        answered.recv_timeout(RESOLVE_TIMEOUT).map_err(|_| "the name took too long to resolve".to_owned())?
    }
}

/// Starts one accepting thread per listening socket. The threads run until the process ends.
pub fn serve(
    listeners: Vec<(OwnedFd, Listener)>,
    net: InternetFlags,
    resolve: Vec<ResolveOverride>,
    log: Arc<Mutex<Log>>,
    admitted_by: Option<Arc<Loopback>>,
) {
    let resolver = match Resolver::start() {
        Ok(r) => r,
        Err(e) => {
            // No connection is served: less network than asked, never more.
            super::lock(&log).refuse("", 0, &format!("cannot start the proxy's resolver: {e}"));
            return;
        }
    };
    let shared = Arc::new(Shared {
        rate: Mutex::new(RateLimit::new(net.per_minute)),
        net,
        resolve,
        log,
        open: AtomicUsize::new(0),
        admitted_by,
        resolver,
    });
    let filter = RelayFilter::new();
    for (fd, kind) in listeners {
        let shared = Arc::clone(&shared);
        let log = Arc::clone(&shared.log);
        let filter = filter.clone();
        let accepting = move || match thread_confinement::confine_this_thread(&filter) {
            Ok(()) => accept_loop(fd, kind, shared),
            // Nothing reads the program's bytes unconfined: its connects to this socket wait
            // and fail, and the report says why.
            Err(why) => super::lock(&shared.log).refuse("", 0, &format!("cannot confine the proxy: {why}")),
        };
        if let Err(e) = std::thread::Builder::new().spawn(accepting) {
            // Nothing serves that socket: the program's connects to it wait and fail, and the
            // report says why. Less network than asked, never more.
            super::lock(&log).refuse("", 0, &format!("cannot start the proxy: {e}"));
        }
    }
}

fn accept_loop(listener: OwnedFd, kind: Listener, shared: Arc<Shared>) {
    loop {
        // The peer's address as `accept` gives it: still there when the peer has already reset
        // the connection (`getpeername` would fail then, and an admission stay unused).
        let (client, peer) = match rustix::net::acceptfrom_with(&listener, rustix::net::SocketFlags::CLOEXEC)
        {
            Ok((fd, peer)) => {
                (TcpStream::from(fd), peer.and_then(|p| std::net::SocketAddr::try_from(p).ok()))
            }
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
            // On the host's loopback (the held door) only the helper's own connections are
            // served; the check waits a moment for the helper's admission, here in the
            // connection's thread, so a stranger never holds up the accepting one. Another
            // process's connection is dropped unserved, and counted, not named (strangers
            // must not push the call's own refusals out of the report).
            let admitted = match &worker.admitted_by {
                Some(router) => peer.is_some_and(|peer| router.accepts(peer, ADMISSION_WAIT)),
                None => true,
            };
            match (&kind, admitted) {
                (_, false) => super::lock(&worker.log).refused += 1,
                (Listener::Proxy, true) => handle_proxy_client(client, &worker),
                (Listener::Forward { host, port }, true) => handle_forward(client, host, *port, &worker),
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
    // `tcp` endpoints by name need the own world's hosts file; the held door is the
    // Landlock-only mode's.
    let by_name = shared.admitted_by.is_none();
    let refuse = |why: Refused| {
        let status = if why == Refused::RateSpent { 429 } else { 403 };
        let words = match why.needs(host, port, by_name) {
            Some(needs) => format!("{why}; {needs}"),
            None => why.to_string(),
        };
        super::lock(&shared.log).refuse_by_policy(host, port, &words, why.fix(host, port, by_name));
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
    shared.resolver.resolve(&name, port)
}

/// A client of the HTTP proxy: one request, then a tunnel (CONNECT) or one forwarded exchange.
fn handle_proxy_client(mut client: TcpStream, shared: &Shared) {
    // Test builds only: the thread tries to open a file before it reads the request, and the
    // report says what it got (see tests/proxy_confinement.rs).
    #[cfg(feature = "fault-points")]
    if crate::fault::fails("proxy-thread-opens-a-file") {
        let opened =
            std::fs::File::open("/etc/passwd").map_or_else(|e| e.to_string(), |_| "opened".to_owned());
        super::lock(&shared.log).refuse(
            "",
            0,
            &format!("fault point: the proxy's thread opening /etc/passwd: {opened}"),
        );
    }
    let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
    let (head, rest) = match read_head(&mut client) {
        Ok(Some(h)) => h,
        // Closed before sending a byte: nothing was asked, nothing to refuse.
        Ok(None) => return,
        Err(why) => {
            let bad = Malformed { target: None, why };
            return refuse_malformed(&mut client, shared, &bad);
        }
    };
    let head = match request::parse_request_head(&head) {
        Ok(h) => h,
        Err(bad) => return refuse_malformed(&mut client, shared, &bad),
    };
    let (host, port) = head.request.target();
    let mut upstream = match open_upstream(shared, host, port) {
        Ok(s) => s,
        Err((status, why)) => return answer(&mut client, status, &why),
    };
    match &head.request {
        ProxyRequest::Connect { .. } => {
            // The tunnel is opaque from here: bytes the client sent after the CONNECT head (a
            // TLS hello, sent early) are the tunnel's first bytes, and go only to its host.
            let _ = client.set_read_timeout(None);
            let established = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
            if established.is_ok() && upstream.write_all(&rest).is_ok() {
                relay(client, upstream);
            }
        }
        ProxyRequest::Forward { .. } => {
            if upstream.write_all(head.upstream.as_bytes()).is_ok() {
                forward_one(client, upstream, &rest, head.body, shared, (host, port));
            }
        }
    }
}

/// Answers a request the proxy will not pass on with 400 and records it in the report.
fn refuse_malformed(client: &mut TcpStream, shared: &Shared, bad: &Malformed) {
    let (host, port) = bad.target.as_ref().map_or(("", 0), |(h, p)| (h.as_str(), *p));
    super::lock(&shared.log).refuse(host, port, &bad.to_string());
    answer(client, 400, &bad.to_string());
}

/// How sending a request's body upstream ended, when it did not end with the body.
enum BodyEnd {
    /// The client closed (or failed) before the body's end.
    ClientGone,
    /// The upstream stopped taking it, or answered and closed already.
    UpstreamGone,
    Malformed(String),
}

/// One plain-HTTP exchange after its head went upstream: sends exactly the request's body
/// (what `body` delimits, starting with `rest`, the bytes read after the head), relays the
/// upstream's answer meanwhile, and closes. The client is not read past the body's end, so
/// nothing it sends after it (a pipelined or smuggled request) reaches the upstream; a body
/// that breaks its framing midway is cut off there, refused and recorded.
fn forward_one(
    mut client: TcpStream,
    mut upstream: TcpStream,
    rest: &[u8],
    mut body: Body,
    shared: &Shared,
    (host, port): (&str, u16),
) {
    let (Ok(client_back), Ok(upstream_back)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    // The answer is relayed while the body goes up: a server may answer (100 Continue, or an
    // error) before the body has all come.
    let Ok(back) = std::thread::Builder::new().spawn(move || copy(upstream_back, client_back)) else {
        return;
    };
    let ended = send_body(&mut client, &mut upstream, rest, &mut body, &back);
    let mut malformed = None;
    match ended {
        Ok(()) | Err(BodyEnd::UpstreamGone) => {}
        Err(BodyEnd::ClientGone) => {
            let _ = upstream.shutdown(Shutdown::Both);
        }
        Err(BodyEnd::Malformed(why)) => {
            let bad = Malformed { target: Some((host.to_owned(), port)), why };
            super::lock(&shared.log).refuse(host, port, &bad.to_string());
            let _ = upstream.shutdown(Shutdown::Both);
            malformed = Some(bad);
        }
    }
    let relayed = back.join().unwrap_or(0);
    match malformed {
        // Nothing of an answer went back yet: the client can still be told why.
        Some(bad) if relayed == 0 => answer(&mut client, 400, &bad.to_string()),
        _ => {
            let _ = client.shutdown(Shutdown::Write);
            linger(&mut client);
        }
    }
}

/// Sends `body`'s bytes upstream, from `rest` and then from the client, through the body's end
/// and no further. Reads the client in short waits so that an upstream that has answered and
/// closed (`back` finished) ends it too.
fn send_body(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    rest: &[u8],
    body: &mut Body,
    back: &std::thread::JoinHandle<u64>,
) -> Result<(), BodyEnd> {
    let _ = client.set_read_timeout(Some(BODY_POLL));
    let mut buffer = vec![0u8; RELAY_BUFFER];
    let mut pending = rest;
    loop {
        let used = body.take(pending).map_err(BodyEnd::Malformed)?;
        upstream.write_all(&pending[..used]).map_err(|_| BodyEnd::UpstreamGone)?;
        if body.is_done() {
            return Ok(());
        }
        let n = loop {
            match client.read(&mut buffer) {
                Ok(0) => return Err(BodyEnd::ClientGone),
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    if back.is_finished() {
                        return Err(BodyEnd::UpstreamGone);
                    }
                }
                Err(_) => return Err(BodyEnd::ClientGone),
            }
        };
        pending = &buffer[..n];
    }
}

/// A client of a `tcp` endpoint's forwarder: no protocol, the policy, then the bytes.
fn handle_forward(client: TcpStream, host: &str, port: u16, shared: &Shared) {
    if let Ok(upstream) = open_upstream(shared, host, port) {
        relay(client, upstream);
    }
}

/// Reads up to the blank line that ends the request head; returns the head (without it) and
/// whatever bytes came after it, or nothing if the client closed without sending a byte.
fn read_head(client: &mut TcpStream) -> Result<Option<(String, Vec<u8>)>, String> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = memchr::memmem::find(&buffer, b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            buffer.truncate(end);
            let head = String::from_utf8(buffer).map_err(|_| "the request head is not UTF-8".to_owned())?;
            return Ok(Some((head, rest)));
        }
        if buffer.len() > MAX_HEAD {
            return Err(format!("the request head is longer than {MAX_HEAD} bytes"));
        }
        match client.read(&mut chunk) {
            Ok(0) if buffer.is_empty() => return Ok(None),
            Ok(0) => return Err("the connection closed before the request head ended".into()),
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
    linger(client);
}

/// After the answer, reads and drops what the client still sends, for a little while, until it
/// closes: closing a socket with unread bytes would reset the connection, and a reset can
/// discard the answer before the client has read it. Nothing read here goes anywhere.
fn linger(client: &mut TcpStream) {
    let _ = client.set_read_timeout(Some(LINGER));
    let started = Instant::now();
    let mut buffer = [0u8; 4096];
    let mut dropped = 0usize;
    while started.elapsed() < LINGER && dropped < LINGER_BYTES {
        match client.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => dropped += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Copies both ways until each side has closed its sending half (a CONNECT tunnel, a `tcp`
/// endpoint).
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

fn pump(from: TcpStream, to: TcpStream) {
    let to_after = to.try_clone();
    copy(from, to);
    if let Ok(to) = to_after {
        let _ = to.shutdown(Shutdown::Write);
    }
}

/// Copies until `from` closes or either side fails; returns how many bytes went across.
fn copy(mut from: TcpStream, mut to: TcpStream) -> u64 {
    let mut buffer = vec![0u8; RELAY_BUFFER];
    let mut copied = 0u64;
    loop {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
                copied += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    copied
}
