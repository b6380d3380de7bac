//! The web app's files (`web/`: one page, its script and its style sheet, no build step),
//! embedded into the binary so that `serve` needs nothing beside it.

/// The file served at `path`, with its content type.
pub fn get(path: &str) -> Option<(&'static str, &'static [u8])> {
    Some(match path {
        "/" | "/index.html" => (
            "text/html; charset=utf-8",
            include_bytes!("web/index.html").as_slice(),
        ),
        "/app.js" => (
            "text/javascript; charset=utf-8",
            include_bytes!("web/app.js").as_slice(),
        ),
        "/style.css" => (
            "text/css; charset=utf-8",
            include_bytes!("web/style.css").as_slice(),
        ),
        "/favicon.svg" => (
            "image/svg+xml",
            include_bytes!("web/favicon.svg").as_slice(),
        ),
        _ => return None,
    })
}
