//! The HTTP side of a request: its path and query string decoded, its body read within a cap,
//! and a [`Reply`] sent with the headers every answer carries (no CORS header, no sniffing,
//! the page's own origin only).

use std::io::Read;

use tiny_http::{Header, Request, Response};

use super::ApiError;

/// An answer to a request.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// A file that does not change while the server runs (the app's own files).
    pub immutable: bool,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, value: &serde_json::Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec()),
            immutable: false,
        }
    }

    /// `{"error": "…"}` with the error's status.
    pub fn error(e: &ApiError) -> Reply {
        Reply::json(e.status, &serde_json::json!({ "error": e.message }))
    }

    /// A file's bytes.
    pub fn file(content_type: &'static str, body: Vec<u8>, immutable: bool) -> Reply {
        Reply {
            status: 200,
            content_type,
            body,
            immutable,
        }
    }
}

/// Sends `reply` (`tiny_http` leaves the body out for HEAD); a client that went away is not an
/// error worth more than dropping it.
pub fn send(rq: Request, reply: Reply) {
    let mut headers = vec![
        ("Content-Type", reply.content_type),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        // The app loads only its own files; the report's page may sit in a frame of it.
        (
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'self'",
        ),
        (
            "Cache-Control",
            if reply.immutable {
                "max-age=3600"
            } else {
                "no-store"
            },
        ),
    ];
    if reply.content_type.starts_with("text/html") {
        headers.push(("X-Frame-Options", "SAMEORIGIN"));
    }
    let len = reply.body.len();
    let mut resp = Response::new(
        reply.status.into(),
        Vec::new(),
        std::io::Cursor::new(reply.body),
        Some(len),
        None,
    );
    for (k, v) in headers {
        if let Ok(h) = Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            resp.add_header(h);
        }
    }
    let _ = rq.respond(resp);
}

/// The value of header `name` (case-insensitive), if the request has it.
pub fn header<'a>(rq: &'a Request, name: &'static str) -> Option<&'a str> {
    rq.headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// Reads the body, at most `cap` bytes: 413 beyond it.
pub fn read_body(rq: &mut Request, cap: usize) -> Result<Vec<u8>, ApiError> {
    let too_big = || {
        ApiError::new(
            413,
            format!("the request body is larger than {} KiB", cap / 1024),
        )
    };
    if rq.body_length().is_some_and(|n| n > cap) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    rq.as_reader()
        .take(cap as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| ApiError::bad(format!("reading the request body: {e}")))?;
    if body.len() > cap {
        return Err(too_big());
    }
    Ok(body)
}

/// A request target split into its path and its query parameters, both decoded.
pub struct Target {
    pub path: String,
    pub params: Vec<(String, String)>,
}

impl Target {
    pub fn parse(url: &str) -> Target {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let params = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect();
        Target {
            path: decode_path(path),
            params,
        }
    }

    /// The first value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.params
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The value of `key`, or 400 naming it.
    pub fn need(&self, key: &str) -> Result<&str, ApiError> {
        self.get(key)
            .ok_or_else(|| ApiError::bad(format!("missing parameter '{key}'")))
    }
}

/// Decodes a query-string component: `%XX` escapes and `+` for a space.
fn decode(s: &str) -> String {
    percent(&s.replace('+', " "))
}

/// Decodes a path (`+` stays itself there).
fn decode_path(s: &str) -> String {
    percent(s)
}

fn percent(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_decode() {
        let t = Target::parse("/api/best?board=3x3&b=2+0+4%2F0+8+0%2F0+0+2&b=x&flag");
        assert_eq!(t.path, "/api/best");
        assert_eq!(t.get("board"), Some("3x3"));
        assert_eq!(t.all("b"), vec!["2 0 4/0 8 0/0 0 2", "x"]);
        assert_eq!(t.get("flag"), Some(""));
        assert_eq!(t.get("none"), None);
        assert!(t.need("none").unwrap_err().message.contains("'none'"));
        // A broken escape stays as it is; a trailing one too.
        assert_eq!(decode("a%zzb%4"), "a%zzb%4");
        assert_eq!(decode("%41%"), "A%");
    }
}
