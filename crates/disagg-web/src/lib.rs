//! disagg-web: `disagg serve`, the chapter's interactive page (the hand-off calculator and the live
//! simulator) and the JSON API it runs on, over the same exact engine as the CLI.
//!
//! * [`Api`] answers one HTTP request without sockets: `api.handle("POST", "/api/run", body)`.
//!   Every endpoint, every limit and every error class lives there, so tests call it in process.
//! * [`serve`] binds a small synchronous HTTP server (`tiny_http`) with a fixed pool of worker
//!   threads, prints `disagg serving on http://HOST:PORT/` to stderr and blocks. [`Server`] is the
//!   same in two steps (bind, then run or spawn), for tests that need the address of port 0.
//!
//! The page's assets (`assets/`) are embedded with `include_str!`: nothing is fetched from the
//! network, nothing is built with npm.
//!
//! ```
//! let r = disagg_web::handle("POST", "/api/handoff",
//!     br#"{"prompt_tokens": 2048, "link": "eth-25g", "send": "layerwise"}"#);
//! assert_eq!(r.status, 200);
//! let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
//! assert_eq!(format!("{:.1}", v["exposed_s"].as_f64().unwrap() * 1e3), "28.7");
//! ```

mod api;
mod input;
mod observe;
mod page;
mod server;

use std::time::Duration;

use disagg_model::Catalogue;

pub use api::Api;
pub use server::{serve, RunningServer, Server};

/// Limits on what one API call may ask for. Over a limit the answer is 413 with a JSON error that
/// names the limit (`{"error": "...", "limit": "max_requests", "max": 200000}`).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Requests of one simulation (`requests`), per run and per sweep point.
    pub max_requests: u64,
    /// Rates in one `/api/sweep` call.
    pub max_sweep_points: usize,
    /// Simulated requests over all points of one `/api/sweep` call.
    pub max_sweep_requests: u64,
    /// Points per metric of `latency_samples` (the CDFs).
    pub max_latency_samples: usize,
    /// Request body size, bytes.
    pub max_body_bytes: usize,
    /// Wall-clock time one call may simulate for.
    pub time_limit: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_requests: 200_000,
            max_sweep_points: 32,
            max_sweep_requests: 2_000_000,
            max_latency_samples: 500,
            max_body_bytes: 64 * 1024,
            time_limit: Duration::from_secs(10),
        }
    }
}

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address to bind (`127.0.0.1`; `0.0.0.0` or `::` to listen on every interface).
    pub host: String,
    /// Port; 0 picks a free one (the URL printed says which).
    pub port: u16,
    /// Worker threads answering requests (each runs its simulations itself); 0 = twice the
    /// available parallelism, at least 4.
    pub threads: usize,
    /// Per-call limits.
    pub limits: Limits,
    /// The catalogue (the CLI passes the one `--catalogue FILE` extended).
    pub catalogue: Catalogue,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: "127.0.0.1".into(),
            port: 8080,
            threads: 0,
            limits: Limits::default(),
            catalogue: Catalogue::builtin(),
        }
    }
}

/// One HTTP answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Body bytes.
    pub body: Vec<u8>,
    /// Further headers (`Allow`, `Server-Timing`, `Cache-Control`, ...).
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The value of header `name` (case-insensitive), if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        if name.eq_ignore_ascii_case("content-type") {
            return Some(self.content_type);
        }
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// [`Api::handle`] on the built-in catalogue with the default limits.
pub fn handle(method: &str, path: &str, body: &[u8]) -> Response {
    static API: std::sync::OnceLock<Api> = std::sync::OnceLock::new();
    API.get_or_init(|| Api::new(Catalogue::builtin(), Limits::default()))
        .handle(method, path, body)
}
