//! The console: a browser UI served at `/_fake/ui/` (fakecloud/README.md, "Console").
//!
//! Plain HTML, CSS and JavaScript compiled into the binary, so there is no build step and
//! nothing to fetch at run time. The pages read the admin API and the console's read-only
//! data endpoints (`data.rs`) and poll them while the tab is visible.

mod data;

use crate::app::App;
use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// One embedded file: its name under `/_fake/ui/`, its content type and its bytes.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
/// ES modules must come with a JavaScript type or browsers refuse to run them.
const JS: &str = "text/javascript; charset=utf-8";
const SVG: &str = "image/svg+xml";

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("assets/", $name)),
        }
    };
}

/// Every file of the console; `index.html` is served at `/_fake/ui` and `/_fake/ui/`.
pub const ASSETS: &[Asset] = &[
    asset!("index.html", HTML),
    asset!("console.css", CSS),
    asset!("favicon.svg", SVG),
    asset!("app.js", JS),
    asset!("dom.js", JS),
    asset!("account.js", JS),
    asset!("lb.js", JS),
    asset!("timeline.js", JS),
    asset!("requests.js", JS),
    asset!("faults.js", JS),
    asset!("clock.js", JS),
];

/// The console's routes, relative to `/_fake`.
pub fn routes() -> Router<App> {
    // `/_fake/ui/` reaches the router as `/_fake/ui`: the server strips trailing slashes
    // (fakecloud/README.md, "Behaviour"), so the index uses absolute asset paths.
    Router::new()
        .route("/ui", get(index))
        .route("/ui/{file}", get(asset))
        .merge(data::routes())
}

async fn index() -> Response {
    serve("index.html")
}

async fn asset(Path(file): Path<String>) -> Response {
    serve(&file)
}

fn serve(name: &str) -> Response {
    let Some(a) = ASSETS.iter().find(|a| a.name == name) else {
        return (StatusCode::NOT_FOUND, "no such console file").into_response();
    };
    (
        [
            (header::CONTENT_TYPE, a.content_type),
            // Revalidated on every load: a new fakecloud binary brings new assets.
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            // Only its own files and the same origin's admin API: no inline script, no CDN.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
            ),
        ],
        a.body,
    )
        .into_response()
}
