//! The page's assets, embedded in the binary.

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLE_CSS: &str = include_str!("../assets/style.css");

/// The asset at `path`: content type and text.
pub fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/" | "/index.html" => Some(("text/html; charset=utf-8", INDEX_HTML)),
        "/assets/app.js" => Some(("text/javascript; charset=utf-8", APP_JS)),
        "/assets/style.css" => Some(("text/css; charset=utf-8", STYLE_CSS)),
        _ => None,
    }
}

/// Headers of an asset: nothing but this server may load anything into the page.
pub fn headers(content_type: &str) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("Cache-Control", "no-cache".to_string()),
        ("X-Content-Type-Options", "nosniff".to_string()),
    ];
    if content_type.starts_with("text/html") {
        h.push((
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
                .to_string(),
        ));
        h.push(("Referrer-Policy", "no-referrer".to_string()));
    }
    h
}
