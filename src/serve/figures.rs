//! The Figures tab: the report's per-age figures and tables, served from the report folder as
//! `age2048 report` wrote them, and rendered again (on a thread of its own, a line of
//! progress per step) when the folder is missing or was made from other data.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::http::Reply;
use super::{ApiError, Renderer};

/// Where a render stands.
#[derive(Clone, Debug, PartialEq)]
enum Render {
    Idle,
    Running,
    Done,
    Failed(String),
}

/// The report folder and its renderer.
pub struct Figures {
    data: PathBuf,
    out: PathBuf,
    renderer: Option<Renderer>,
    state: Mutex<(Render, Vec<String>)>,
}

/// Lines of progress kept (a render says about 20).
const MAX_LINES: usize = 200;

impl Figures {
    pub fn new(data: &Path, out: &Path, renderer: Option<Renderer>) -> Figures {
        Figures {
            data: data.to_path_buf(),
            out: out.to_path_buf(),
            renderer,
            state: Mutex::new((Render::Idle, Vec::new())),
        }
    }

    fn page(&self) -> &'static str {
        self.renderer.map_or("index.html", |r| r.page)
    }

    /// `{"status", "page", "lines", "error"}`: `current`, `stale` (made from other data),
    /// `missing`, `rendering` or `failed`; `page` is where the report is served.
    pub fn status(&self) -> Value {
        let (render, lines) = {
            let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            (s.0.clone(), s.1.clone())
        };
        let exists = self.out.join(self.page()).is_file();
        let (status, error) = match (&render, self.renderer) {
            (Render::Running, _) => ("rendering", None),
            (Render::Failed(e), _) => ("failed", Some(e.clone())),
            (_, None) if exists => ("current", None),
            (_, None) => ("missing", None),
            (_, Some(r)) => match (r.current)(&self.data, &self.out) {
                Ok(true) => ("current", None),
                Ok(false) if exists => ("stale", None),
                Ok(false) => ("missing", None),
                Err(e) => ("failed", Some(e)),
            },
        };
        json!({
            "status": status,
            "page": format!("/reports/{}", self.page()),
            "folder": self.out.display().to_string(),
            "can_render": self.renderer.is_some(),
            "lines": lines,
            "error": error,
        })
    }

    /// Starts rendering the report (202), unless one is under way (409) or there is no
    /// renderer (501).
    pub fn render(self: &Arc<Self>) -> Result<Value, ApiError> {
        let Some(r) = self.renderer else {
            return Err(ApiError::new(
                501,
                "this server cannot render the report (run age2048 report)",
            ));
        };
        {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if s.0 == Render::Running {
                return Err(ApiError::new(409, "the report is being rendered already"));
            }
            *s = (Render::Running, Vec::new());
        }
        let me = self.clone();
        std::thread::Builder::new()
            .name("report".into())
            .spawn(move || {
                let say = |line: &str| {
                    let mut s = me.state.lock().unwrap_or_else(|p| p.into_inner());
                    if s.1.len() < MAX_LINES {
                        s.1.push(line.to_string());
                    }
                };
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    (r.render)(&me.data, &me.out, &say)
                }))
                .unwrap_or_else(|_| Err("the report failed inside the server".into()));
                let mut s = me.state.lock().unwrap_or_else(|p| p.into_inner());
                s.0 = match result {
                    Ok(()) => Render::Done,
                    Err(e) => Render::Failed(e),
                };
            })
            .map_err(|e| ApiError::new(500, format!("cannot start the report: {e}")))?;
        Ok(self.status())
    }

    /// A file of the report folder (`rel` below `/reports/`): only plain names below it, never
    /// a way out of it.
    pub fn file(&self, rel: &str) -> Result<Reply, ApiError> {
        let not_found = || ApiError::new(404, format!("no such report file: {rel}"));
        let rel = if rel.is_empty() { self.page() } else { rel };
        let path = Path::new(rel);
        let plain = path.components().all(|c| matches!(c, Component::Normal(_)))
            && rel
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b));
        if !plain {
            return Err(not_found());
        }
        let root = self.out.canonicalize().map_err(|_| not_found())?;
        let full = root.join(path).canonicalize().map_err(|_| not_found())?;
        if !full.starts_with(&root) || !full.is_file() {
            return Err(not_found());
        }
        let content_type = match full.extension().and_then(|e| e.to_str()) {
            Some("html") => "text/html; charset=utf-8",
            Some("svg") => "image/svg+xml",
            Some("png") => "image/png",
            Some("csv") => "text/csv; charset=utf-8",
            Some("md") => "text/markdown; charset=utf-8",
            _ => "text/plain; charset=utf-8",
        };
        let bytes = std::fs::read(&full).map_err(|_| not_found())?;
        Ok(Reply::file(content_type, bytes))
    }
}
