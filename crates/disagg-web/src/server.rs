//! The HTTP server: `tiny_http` with a fixed pool of worker threads, each answering one request at
//! a time through [`Api::handle`] (simulations run on the workers, never on an accept thread).

use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::{Api, ServeOptions};

/// A bound server, not yet answering.
pub struct Server {
    http: Arc<tiny_http::Server>,
    api: Arc<Api>,
    threads: usize,
    addr: SocketAddr,
}

/// A server running on its own threads (see [`Server::spawn`]).
pub struct RunningServer {
    http: Arc<tiny_http::Server>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

fn url_of(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("http://{}:{}/", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("http://[{}]:{}/", a.ip(), a.port()),
    }
}

impl Server {
    /// Binds `opts.host:opts.port` (port 0: a free port).
    pub fn bind(opts: ServeOptions) -> Result<Server, String> {
        let host = opts.host.trim_start_matches('[').trim_end_matches(']');
        let bind_to = if host.contains(':') {
            format!("[{host}]:{}", opts.port)
        } else {
            format!("{host}:{}", opts.port)
        };
        let listener = std::net::TcpListener::bind(&bind_to)
            .map_err(|e| format!("cannot listen on {bind_to}: {e}"))?;
        // Answers leave as soon as they are written: without this, Nagle's algorithm holds the
        // body back until the client acknowledges the headers, 40 ms with a delayed ACK. Accepted
        // connections inherit the option from the listener.
        socket2::SockRef::from(&listener)
            .set_tcp_nodelay(true)
            .map_err(|e| format!("cannot set TCP_NODELAY on {bind_to}: {e}"))?;
        let http = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| format!("cannot listen on {bind_to}: {e}"))?;
        let addr = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| format!("cannot listen on {bind_to}: not an IP address"))?;
        let threads = if opts.threads == 0 {
            let n = std::thread::available_parallelism().map_or(2, |n| n.get());
            (2 * n).max(4)
        } else {
            opts.threads
        };
        Ok(Server {
            http: Arc::new(http),
            api: Arc::new(Api::new(opts.catalogue, opts.limits)),
            threads,
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

    /// Answers requests on the worker threads until [`RunningServer::shutdown`].
    pub fn spawn(self) -> RunningServer {
        let stop = Arc::new(AtomicBool::new(false));
        let workers = (0..self.threads)
            .map(|i| {
                let http = Arc::clone(&self.http);
                let api = Arc::clone(&self.api);
                let stop = Arc::clone(&stop);
                std::thread::Builder::new()
                    .name(format!("disagg-web-{i}"))
                    .spawn(move || worker(&http, &api, &stop))
                    .expect("spawn a worker thread")
            })
            .collect();
        RunningServer {
            http: self.http,
            stop,
            workers,
            addr: self.addr,
        }
    }

    /// Prints `disagg serving on URL` to stderr and answers requests forever.
    pub fn run(self) -> Result<(), String> {
        eprintln!("disagg serving on {}", self.url());
        let running = self.spawn();
        for w in running.workers {
            w.join()
                .map_err(|_| "a server worker thread died".to_string())?;
        }
        Ok(())
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
    /// Stops the workers (after the requests in hand) and waits for them.
    pub fn shutdown(self) {
        self.stop.store(true, Ordering::SeqCst);
        for _ in 0..self.workers.len() {
            self.http.unblock();
        }
        for w in self.workers {
            let _ = w.join();
        }
    }
}

/// `disagg serve`: binds, prints `disagg serving on http://HOST:PORT/` to stderr once listening,
/// and answers requests until the process ends. Errors only if it cannot listen.
pub fn serve(opts: ServeOptions) -> Result<(), String> {
    Server::bind(opts)?.run()
}

fn worker(http: &tiny_http::Server, api: &Api, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let req = match http.recv() {
            Ok(r) => r,
            Err(_) => continue,
        };
        if stop.load(Ordering::SeqCst) {
            let _ = req.respond(tiny_http::Response::empty(503));
            break;
        }
        answer(api, req);
    }
}

fn answer(api: &Api, mut req: tiny_http::Request) {
    let max = api.limits().max_body_bytes;
    let method = req.method().as_str().to_ascii_uppercase();
    let url = req.url().to_string();
    let too_large = req.body_length().is_some_and(|n| n > max);
    let mut body = Vec::new();
    let read_ok = !too_large
        && req
            .as_reader()
            .take(max as u64 + 1)
            .read_to_end(&mut body)
            .is_ok();
    let r = if too_large || body.len() > max {
        let e = api.body_too_large();
        crate::Response {
            status: 413,
            content_type: "application/json",
            body: format!("{}\n", e.to_json()).into_bytes(),
            headers: vec![("Connection", "close".into())],
        }
    } else if !read_ok {
        return; // the client went away
    } else {
        api.handle(&method, &url, &body)
    };
    // tiny_http leaves the body out of answers to HEAD itself.
    let mut resp = tiny_http::Response::from_data(r.body).with_status_code(r.status);
    let mut add = |k: &str, v: &str| {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            resp.add_header(h);
        }
    };
    add("Content-Type", r.content_type);
    for (k, v) in &r.headers {
        add(k, v);
    }
    let _ = req.respond(resp);
}
