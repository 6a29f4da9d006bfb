//! The HTTP server: axum on tokio/hyper, in front of the socket-free [`Api::handle`].
//!
//! * The accept loop bounds the open connections, in all (`max_connections`) and per peer
//!   address (`max_connections_per_peer`). At a bound a new connection closes the least recently
//!   active idle connection (no request in flight; of that peer at the peer bound) instead of
//!   being refused, so that idle sockets cannot lock the page out; only when every connection in
//!   the way is busy does the new one get a 503 and close. hyper's head-read timeout closes a
//!   connection that sends no complete request head in `read_timeout`, which also ends idle
//!   keep-alive connections.
//! * Tower layers, outside in: JSON bodies for the layers' own error answers, a whole-request
//!   timeout, the request guard (one `Host` and at most one `Origin`, both this server's;
//!   CORS preflight; `Content-Type`), the body limit.
//! * The handler reads the body within `read_timeout` (408 after), then answers. Simulations
//!   (`POST /api/run`, `/api/sweep`) run on the blocking pool, at most `threads` at once; up to
//!   `sim_queue` more wait for a turn and beyond that the answer is 503. Everything else (the page,
//!   `/api/catalogue`, `/api/presets`, `/api/handoff`) is answered on the async workers at once.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use http_body_util::BodyExt;
use tokio::sync::{watch, Notify, Semaphore};

use crate::input::ApiError;
use crate::{Api, ServeOptions};

/// A bound server, not yet answering.
pub struct Server {
    listener: std::net::TcpListener,
    state: Arc<Shared>,
    max_connections: usize,
    max_connections_per_peer: usize,
    addr: SocketAddr,
}

/// A server running on its own threads (see [`Server::spawn`]).
pub struct RunningServer {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

/// What every request handler shares.
struct Shared {
    api: Arc<Api>,
    /// The bound address.
    addr: SocketAddr,
    /// `--allow-origin`: origins besides the server's own that may call it (lower case, no
    /// trailing `/`).
    allow_origins: Vec<String>,
    read_timeout: Duration,
    /// One permit per simulation that may run at once.
    sims: Arc<Semaphore>,
    /// Simulations waiting for a permit, and how many may wait.
    queued: AtomicUsize,
    max_queued: usize,
}

/// The open connections, in all and per peer address, and what closing an idle one needs.
struct Connections {
    max: usize,
    per_peer: usize,
    epoch: Instant,
    table: Mutex<ConnTable>,
}

#[derive(Default)]
struct ConnTable {
    next_id: u64,
    /// The connections that count against the bounds (not yet told to close).
    open: HashMap<u64, (IpAddr, Arc<ConnState>)>,
    by_peer: HashMap<IpAddr, usize>,
}

/// One connection as the accept loop sees it.
#[derive(Default)]
struct ConnState {
    /// Requests being answered on it.
    in_flight: AtomicUsize,
    /// When a request last ended on it (or it was accepted), ns since [`Connections::epoch`].
    last_active_ns: AtomicU64,
    /// Told to close (gracefully: a request in flight is still answered).
    close: Notify,
}

/// A connection's place in [`Connections`], given back on drop.
struct ConnSlot {
    conns: Arc<Connections>,
    id: u64,
    state: Arc<ConnState>,
}

/// Why a connection was not admitted: every connection in the way is busy.
enum Full {
    Peer,
    All,
}

impl Connections {
    fn new(max: usize, per_peer: usize) -> Self {
        Connections {
            max,
            per_peer,
            epoch: Instant::now(),
            table: Mutex::new(ConnTable::default()),
        }
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos().min(u64::MAX as u128) as u64
    }

    fn table(&self) -> std::sync::MutexGuard<'_, ConnTable> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a connection from `peer`, first closing the least recently active idle connection
    /// (of `peer` at the per-peer bound, of any peer at the global bound) where a bound is reached.
    fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<ConnSlot, Full> {
        let mut t = self.table();
        if t.by_peer.get(&peer).copied().unwrap_or(0) >= self.per_peer
            && !t.close_idlest(|p| p == peer)
        {
            return Err(Full::Peer);
        }
        if t.open.len() >= self.max && !t.close_idlest(|_| true) {
            return Err(Full::All);
        }
        let id = t.next_id;
        t.next_id += 1;
        let state = Arc::new(ConnState::default());
        state.last_active_ns.store(self.now_ns(), Ordering::Relaxed);
        t.open.insert(id, (peer, Arc::clone(&state)));
        *t.by_peer.entry(peer).or_insert(0) += 1;
        Ok(ConnSlot {
            conns: Arc::clone(self),
            id,
            state,
        })
    }
}

impl ConnTable {
    fn forget(&mut self, id: u64) {
        if let Some((peer, _)) = self.open.remove(&id) {
            if let Some(n) = self.by_peer.get_mut(&peer) {
                *n -= 1;
                if *n == 0 {
                    self.by_peer.remove(&peer);
                }
            }
        }
    }

    /// Tells the least recently active connection without a request in flight whose peer
    /// matches to close, and stops counting it; false if there is none.
    fn close_idlest(&mut self, peer_matches: impl Fn(IpAddr) -> bool) -> bool {
        let idlest = self
            .open
            .iter()
            .filter(|(_, (p, c))| peer_matches(*p) && c.in_flight.load(Ordering::SeqCst) == 0)
            .min_by_key(|(id, (_, c))| (c.last_active_ns.load(Ordering::Relaxed), **id))
            .map(|(id, (_, c))| (*id, Arc::clone(c)));
        let Some((id, c)) = idlest else {
            return false;
        };
        self.forget(id);
        c.close.notify_one();
        true
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.conns.table().forget(self.id);
    }
}

/// A request in flight on a connection (the connection is busy while it lives).
struct Busy {
    state: Arc<ConnState>,
    conns: Arc<Connections>,
}

impl Busy {
    fn new(slot: &ConnSlot) -> Self {
        slot.state.in_flight.fetch_add(1, Ordering::SeqCst);
        Busy {
            state: Arc::clone(&slot.state),
            conns: Arc::clone(&slot.conns),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.state
            .last_active_ns
            .store(self.conns.now_ns(), Ordering::Relaxed);
        self.state.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The peer's address, an IPv4-mapped IPv6 address as IPv4.
fn peer_ip(peer: &SocketAddr) -> IpAddr {
    match peer.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The local address a connection was accepted on (a request extension).
#[derive(Clone, Copy)]
struct Local(SocketAddr);

fn url_of(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("http://{}:{}/", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("http://[{}]:{}/", a.ip(), a.port()),
    }
}

/// The warning `disagg serve` prints when it listens on an address other machines can reach.
pub fn exposure_warning(addr: &SocketAddr) -> Option<String> {
    (!addr.ip().is_loopback()).then(|| {
        format!(
            "warning: listening on {addr}, reachable from other machines; the API has no \
             authentication: anyone who can reach this port can run simulations on this machine"
        )
    })
}

/// An `--allow-origin` value as compared with `Origin` headers: `scheme://host[:port]`, lower
/// case, without a trailing `/`.
fn parse_origin(o: &str) -> Result<String, String> {
    let t = o.trim().trim_end_matches('/').to_ascii_lowercase();
    let ok = match t.split_once("://") {
        Some((scheme, rest)) => {
            (scheme == "http" || scheme == "https")
                && !rest.is_empty()
                && !rest.contains(['/', '?', '#', '@', ' ', '*'])
        }
        None => false,
    };
    if ok {
        Ok(t)
    } else {
        Err(format!(
            "--allow-origin {o:?}: expected an origin such as http://localhost:3000 \
             (scheme://host[:port], no path)"
        ))
    }
}

impl Server {
    /// Binds `opts.host:opts.port` (port 0: a free port).
    pub fn bind(opts: ServeOptions) -> Result<Server, String> {
        let allow_origins = opts
            .allow_origins
            .iter()
            .map(|o| parse_origin(o))
            .collect::<Result<Vec<_>, _>>()?;
        let host = opts.host.trim_start_matches('[').trim_end_matches(']');
        let bind_to = if host.contains(':') {
            format!("[{host}]:{}", opts.port)
        } else {
            format!("{host}:{}", opts.port)
        };
        let listener = std::net::TcpListener::bind(&bind_to)
            .map_err(|e| format!("cannot listen on {bind_to}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot listen on {bind_to}: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {bind_to}: {e}"))?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = if opts.threads == 0 {
            cores
        } else {
            opts.threads
        };
        Ok(Server {
            listener,
            state: Arc::new(Shared {
                api: Arc::new(Api::new(opts.catalogue, opts.limits)),
                addr,
                allow_origins,
                read_timeout: opts.read_timeout,
                sims: Arc::new(Semaphore::new(threads.max(1))),
                queued: AtomicUsize::new(0),
                max_queued: opts.sim_queue,
            }),
            max_connections: opts.max_connections.max(1),
            max_connections_per_peer: opts.max_connections_per_peer.max(1),
            addr,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://HOST:PORT/`.
    pub fn url(&self) -> String {
        url_of(&self.addr)
    }

    /// Answers requests on its own threads until [`RunningServer::shutdown`].
    pub fn spawn(self) -> RunningServer {
        let (stop, stopped) = watch::channel(false);
        let addr = self.addr;
        let thread = std::thread::Builder::new()
            .name("disagg-web".into())
            .spawn(move || self.block_on(stopped))
            .expect("spawn the server thread");
        RunningServer {
            stop,
            thread: Some(thread),
            addr,
        }
    }

    /// Prints `disagg serving on URL` to stderr (after a warning if the address is reachable
    /// from other machines) and answers requests forever.
    pub fn run(self) -> Result<(), String> {
        if let Some(w) = exposure_warning(&self.addr) {
            eprintln!("{w}");
        }
        eprintln!("disagg serving on {}", self.url());
        let (_stop, stopped) = watch::channel(false);
        self.block_on(stopped);
        Ok(())
    }

    fn block_on(self, stopped: watch::Receiver<bool>) {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cores.clamp(2, 4))
            .max_blocking_threads(self.state.sims.available_permits() + 4)
            .thread_name("disagg-web")
            .enable_all()
            .build()
            .expect("a tokio runtime");
        rt.block_on(accept_loop(self, stopped));
        // Simulations still running end by their own time limit; do not wait for them.
        rt.shutdown_timeout(Duration::from_millis(100));
    }
}

impl RunningServer {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// `http://HOST:PORT/`.
    pub fn url(&self) -> String {
        url_of(&self.addr)
    }
    /// Stops accepting, drops the open connections and waits for the server thread.
    pub fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// `disagg serve`: binds, prints `disagg serving on http://HOST:PORT/` to stderr once listening,
/// and answers requests until the process ends. Errors only if it cannot listen.
pub fn serve(opts: ServeOptions) -> Result<(), String> {
    Server::bind(opts)?.run()
}

fn router(state: Arc<Shared>) -> axum::Router {
    use tower_http::limit::RequestBodyLimitLayer;
    use tower_http::timeout::TimeoutLayer;
    let limits = state.api.limits();
    // A backstop only: the API's own time limit ends simulations; this ends anything else stuck.
    let whole = limits.time_limit + 2 * state.read_timeout + Duration::from_secs(60);
    let max_body = limits.max_body_bytes;
    axum::Router::new()
        .fallback(answer)
        .layer(RequestBodyLimitLayer::new(max_body))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            guard,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            whole,
        ))
        .layer(axum::middleware::map_response_with_state(
            Arc::clone(&state),
            json_errors,
        ))
        .with_state(state)
}

async fn accept_loop(server: Server, mut stopped: watch::Receiver<bool>) {
    let listener = match tokio::net::TcpListener::from_std(server.listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", server.addr);
            return;
        }
    };
    let state = server.state;
    let app = router(Arc::clone(&state));
    let connections = Arc::new(Connections::new(
        server.max_connections,
        server.max_connections_per_peer,
    ));
    loop {
        let (sock, peer) = tokio::select! {
            _ = stopped.changed() => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                // Out of file descriptors and the like: wait a moment rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let slot = match connections.admit(peer_ip(&peer)) {
            Ok(slot) => slot,
            Err(full) => {
                tokio::spawn(refuse_connection(sock, full));
                continue;
            }
        };
        // Answers leave as soon as they are written (no Nagle delay behind a delayed ACK).
        let _ = sock.set_nodelay(true);
        let local = sock.local_addr().unwrap_or(state.addr);
        let app = app.clone();
        let read_timeout = state.read_timeout;
        tokio::spawn(async move {
            use tower::ServiceExt;
            let slot = Arc::new(slot);
            let in_slot = Arc::clone(&slot);
            let svc = tower::service_fn(move |mut req: Request<hyper::body::Incoming>| {
                let busy = Busy::new(&in_slot);
                req.extensions_mut().insert(Local(local));
                let req = req.map(Body::new);
                let app = app.clone();
                async move {
                    let r = app.oneshot(req).await;
                    drop(busy);
                    r
                }
            });
            let svc = hyper_util::service::TowerToHyperService::new(svc);
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(read_timeout)
                .max_buf_size(64 * 1024)
                .serve_connection(hyper_util::rt::TokioIo::new(sock), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = slot.state.close.notified() => {
                    // Closed to make room: at once if idle, after its answer if a request has
                    // just begun.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(slot);
        });
    }
}

/// Over a connection bound with every connection in the way busy: a short 503 and close, without
/// reading the request.
async fn refuse_connection(sock: tokio::net::TcpStream, full: Full) {
    let body = match full {
        Full::Peer => {
            "{\"error\":\"too many open connections from your address, all busy; try again shortly\"}\n"
        }
        Full::All => "{\"error\":\"too many open connections, all busy; try again shortly\"}\n",
    };
    let msg = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // A fresh socket's send buffer holds these few bytes: one write, no waiting on the client.
    if tokio::time::timeout(Duration::from_secs(1), sock.writable())
        .await
        .is_err()
    {
        return;
    }
    let _ = sock.try_write(msg.as_bytes());
    // Closing with the request unread would reset the connection and lose the answer: end the
    // answer, then read and drop what the client sends for up to a second.
    let Ok(std) = sock.into_std() else { return };
    let _ = std.shutdown(std::net::Shutdown::Write);
    let Ok(sock) = tokio::net::TcpStream::from_std(std) else {
        return;
    };
    let drain = async {
        let mut buf = [0u8; 4096];
        let mut left: usize = 64 * 1024;
        while left > 0 {
            if sock.readable().await.is_err() {
                return;
            }
            match sock.try_read(&mut buf) {
                Ok(0) => return,
                Ok(n) => left = left.saturating_sub(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => return,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

fn to_http(r: crate::Response) -> axum::response::Response {
    let mut b = axum::response::Response::builder()
        .status(r.status)
        .header(header::CONTENT_TYPE, r.content_type);
    for (k, v) in &r.headers {
        if let Ok(v) = HeaderValue::from_str(v) {
            b = b.header(*k, v);
        }
    }
    b.body(Body::from(r.body)).unwrap_or_else(|_| {
        let mut x = axum::response::Response::new(Body::empty());
        *x.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        x
    })
}

fn error(status: u16, msg: impl Into<String>) -> axum::response::Response {
    let e = ApiError {
        status,
        ..ApiError::bad(None, msg)
    };
    json_error(&e)
}

fn json_error(e: &ApiError) -> axum::response::Response {
    let mut body = e.to_json().to_string().into_bytes();
    body.push(b'\n');
    to_http(crate::Response {
        status: e.status,
        content_type: "application/json",
        body,
        headers: vec![
            ("Cache-Control", "no-store".into()),
            ("X-Content-Type-Options", "nosniff".into()),
        ],
    })
}

/// The layers' own answers (413 from the body limit, 503 from the timeout) as the API's JSON
/// errors; everything else passes unchanged.
async fn json_errors(
    State(st): State<Arc<Shared>>,
    r: axum::response::Response,
) -> axum::response::Response {
    let is_json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json || r.status().as_u16() < 400 {
        return r;
    }
    let mut out = match r.status() {
        StatusCode::PAYLOAD_TOO_LARGE => json_error(&st.api.body_too_large()),
        StatusCode::SERVICE_UNAVAILABLE => error(503, "the request took too long; try again"),
        s => error(
            s.as_u16(),
            s.canonical_reason().unwrap_or("request refused"),
        ),
    };
    // The body may be unread: do not keep the connection.
    out.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    out
}

/// The `Host` header's name and port: `name`, `name:port`, `[v6]`, `[v6]:port`.
fn split_host(h: &str) -> Option<(&str, Option<u16>)> {
    let (name, port) = if let Some(rest) = h.strip_prefix('[') {
        let end = rest.find(']')?;
        let (name, after) = (&rest[..end], &rest[end + 1..]);
        match after {
            "" => (name, None),
            p => (name, Some(p.strip_prefix(':')?)),
        }
    } else {
        match h.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (h, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    Some((name, port))
}

/// Is `host` (a `Host` header) this server: the bound address, the address the connection came
/// in on, `localhost`, or on loopback `127.0.0.1` / `[::1]`; with no port or the bound one.
fn host_ok(host: &str, bound: SocketAddr, local: SocketAddr) -> bool {
    let Some((name, port)) = split_host(host) else {
        return false;
    };
    if port.is_some_and(|p| p != bound.port() && p != local.port()) {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let Ok(ip) = name.parse::<IpAddr>() else {
        return false;
    };
    let loopback = bound.ip().is_loopback() || local.ip().is_loopback();
    (ip == bound.ip() && !ip.is_unspecified()) || ip == local.ip() || (loopback && ip.is_loopback())
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// The request guard: `Host` (421), `Origin` (403), CORS preflight, `Content-Type` on POST (415).
async fn guard(
    State(st): State<Arc<Shared>>,
    req: Request,
    next: Next,
) -> axum::response::Response {
    let local = req.extensions().get::<Local>().map_or(st.addr, |l| l.0);
    let h = req.headers();
    // Two `Host`s (or `Origin`s) could be read differently by a proxy and by this check.
    for (name, shown) in [(header::HOST, "Host"), (header::ORIGIN, "Origin")] {
        if h.get_all(&name).iter().nth(1).is_some() {
            return error(
                400,
                format!("more than one {shown} header; send exactly one"),
            );
        }
    }
    let host = header_str(h, header::HOST)
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_string()));
    let Some(host) = host.filter(|x| host_ok(x, st.addr, local)) else {
        let mut shown = header_str(h, header::HOST).unwrap_or("(none)").to_string();
        shown.truncate(100);
        return error(
            421,
            format!(
                "Host {shown:?} is not this server; use {} or localhost:{}",
                url_of(&st.addr)
                    .trim_start_matches("http://")
                    .trim_end_matches('/'),
                st.addr.port()
            ),
        );
    };
    let origin =
        header_str(h, header::ORIGIN).map(|o| o.trim_end_matches('/').to_ascii_lowercase());
    let mut cors = None;
    if let Some(o) = &origin {
        let own = *o == format!("http://{}", host.to_ascii_lowercase());
        let allowed = st.allow_origins.iter().any(|a| a == o);
        if !own && !allowed {
            let mut shown = o.clone();
            shown.truncate(100);
            return error(
                403,
                format!(
                    "Origin {shown:?} may not call this server (cross-origin); start it with \
                     --allow-origin {shown} to allow it"
                ),
            );
        }
        if allowed {
            cors = Some(o.clone());
        }
    }
    if req.method() == Method::OPTIONS && h.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        // A preflight: only for an allowed origin (checked above); the server's own origin never
        // needs one.
        let Some(o) = cors else {
            return error(403, "CORS preflight without an allowed Origin");
        };
        let mut r = axum::response::Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        let hs = r.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&o) {
            hs.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
        }
        hs.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD, POST"),
        );
        hs.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("content-type"),
        );
        hs.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        hs.insert(header::VARY, HeaderValue::from_static("Origin"));
        return r;
    }
    if req.method() == Method::POST {
        let ct = header_str(h, header::CONTENT_TYPE).unwrap_or("");
        let media = ct.split(';').next().unwrap_or("").trim();
        if !media.eq_ignore_ascii_case("application/json") {
            let mut shown = ct.to_string();
            shown.truncate(100);
            return error(
                415,
                format!(
                    "Content-Type {shown:?}: POST bodies must be sent as Content-Type: \
                     application/json"
                ),
            );
        }
    }
    let mut r = next.run(req).await;
    if let Some(o) = cors {
        if let Ok(v) = HeaderValue::from_str(&o) {
            r.headers_mut()
                .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
        }
        r.headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Origin"));
    }
    r
}

/// Lowers the calling thread's CPU priority (nice 10) once: simulations are background work, the
/// page and the quick endpoints come first. The threads a sweep starts inherit it. Only the
/// blocking pool's threads call this, and they only ever run simulations.
fn background_priority() {
    #[cfg(target_os = "linux")]
    {
        thread_local!(static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        DONE.with(|d| {
            if !d.replace(true) {
                // SAFETY: plain syscalls on the calling thread's own id; failure is harmless.
                unsafe {
                    let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                    libc::setpriority(libc::PRIO_PROCESS, tid, 10);
                }
            }
        });
    }
}

/// Counts a request waiting for a simulation permit while it waits.
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn answer(State(st): State<Arc<Shared>>, req: Request) -> axum::response::Response {
    let (parts, mut body) = req.into_parts();
    let method = parts.method.as_str().to_ascii_uppercase();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let max = st.api.limits().max_body_bytes;
    let read = async {
        let mut buf = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                // Over the limit (the limit layer's error) or the client went away.
                return Err(buf.len() + 1 > max);
            };
            if let Ok(d) = frame.into_data() {
                if buf.len() + d.len() > max {
                    return Err(true);
                }
                buf.extend_from_slice(&d);
            }
        }
        Ok(buf)
    };
    let body = match tokio::time::timeout(st.read_timeout, read).await {
        Ok(Ok(b)) => b,
        Ok(Err(true)) => {
            let mut r = json_error(&st.api.body_too_large());
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
        Ok(Err(false)) => return error(400, "the request body could not be read"),
        Err(_) => {
            let mut r = error(
                408,
                format!(
                    "the request body did not arrive within {} s",
                    st.read_timeout.as_secs_f64()
                ),
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
    };
    let p = path.split(['?', '#']).next().unwrap_or("");
    let simulation = method == "POST" && (p == "/api/run" || p == "/api/sweep");
    if !simulation {
        return to_http(st.api.handle(&method, &path, &body));
    }
    let permit = match Arc::clone(&st.sims).try_acquire_owned() {
        Ok(p) => p,
        Err(_) => {
            if st.queued.fetch_add(1, Ordering::SeqCst) >= st.max_queued {
                st.queued.fetch_sub(1, Ordering::SeqCst);
                let mut r = error(
                    503,
                    "the server is busy with other simulations; try again shortly",
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return r;
            }
            let _waiting = Queued(&st.queued);
            match Arc::clone(&st.sims).acquire_owned().await {
                Ok(p) => p,
                Err(_) => return error(503, "the server is shutting down"),
            }
        }
    };
    let api = Arc::clone(&st.api);
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        background_priority();
        api.handle(&method, &path, &body)
    });
    match job.await {
        Ok(r) => to_http(r),
        Err(_) => error(500, "internal error: the simulation failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let bound: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:8080",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(host_ok(ok, bound, bound), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost:8081",
            "127.0.0.1:80",
            "localhost.evil.example",
            "127.0.0.1:8080:1",
            "[::1",
            "",
            "10.0.0.1:8080",
        ] {
            assert!(!host_ok(bad, bound, bound), "{bad}");
        }
        let any: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        let via: SocketAddr = "192.168.1.5:9000".parse().unwrap();
        assert!(host_ok("192.168.1.5:9000", any, via));
        assert!(!host_ok("0.0.0.0:9000", any, via));
        assert!(!host_ok("127.0.0.1:9000", any, via));
        assert!(!host_ok("rebind.example:9000", any, via));
    }

    #[test]
    fn origins_and_warning() {
        assert_eq!(
            parse_origin("http://LocalHost:3000/").unwrap(),
            "http://localhost:3000"
        );
        for bad in ["localhost:3000", "http://x/path", "*", "ftp://x", "http://"] {
            let e = parse_origin(bad).unwrap_err();
            assert!(e.starts_with("--allow-origin"), "{e}");
        }
        assert!(exposure_warning(&"127.0.0.1:1".parse().unwrap()).is_none());
        assert!(exposure_warning(&"[::1]:1".parse().unwrap()).is_none());
        let w = exposure_warning(&"0.0.0.0:8080".parse().unwrap()).unwrap();
        assert!(w.starts_with("warning:") && w.contains("no authentication"));
        assert!(!w.contains('\n'));
    }
}
