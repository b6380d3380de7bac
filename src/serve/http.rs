//! The HTTP side of a request as the app sees it: a [`Request`] made from what hyper read (its
//! framing strict and bounded there), its target decoded ([`Target`]), and a [`Reply`] turned
//! into hyper's response with the headers every answer carries (no CORS header, no sniffing,
//! the page's own origin only, no caching).

use std::net::SocketAddr;

use bytes::Bytes;

use super::ApiError;

/// A request, read whole.
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
}

impl Request {
    /// The value of header `name` (case-insensitive), if the request has it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// GET or HEAD: a request that only reads.
    pub fn reads(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD")
    }
}

/// An answer to a request.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Seconds for `Retry-After` (a busy server's refusal).
    pub retry_after: Option<u64>,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, value: &serde_json::Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec()),
            retry_after: None,
        }
    }

    /// `{"error": "…"}` with the error's status.
    pub fn error(e: &ApiError) -> Reply {
        Reply {
            retry_after: e.retry_after,
            ..Reply::json(e.status, &serde_json::json!({ "error": e.message }))
        }
    }

    /// A file's bytes.
    pub fn file(content_type: &'static str, body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            content_type,
            body,
            retry_after: None,
        }
    }
}

/// The security headers every answer carries (and HTML pages one more).
const HEADERS: [(&str, &str); 4] = [
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    (
        "Content-Security-Policy",
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'self'",
    ),
    ("Cache-Control", "no-store"),
];

impl Reply {
    /// The response hyper writes (its length from the body; hyper leaves the body out of an
    /// answer to HEAD); `close` asks hyper to end the connection after it.
    pub fn into_response(self, close: bool) -> hyper::Response<Bytes> {
        let mut b = hyper::Response::builder()
            .status(self.status)
            .header("Content-Type", self.content_type);
        for (k, v) in HEADERS {
            b = b.header(k, v);
        }
        if self.content_type.starts_with("text/html") {
            b = b.header("X-Frame-Options", "SAMEORIGIN");
        }
        if close {
            b = b.header("Connection", "close");
        }
        if let Some(s) = self.retry_after {
            b = b.header("Retry-After", s);
        }
        b.body(Bytes::from(self.body))
            .unwrap_or_else(|_| hyper::Response::new(Bytes::new()))
    }
}

/// A 503 answer with `e`'s message as bytes on the wire, for a connection refused before
/// hyper reads it (then closed), with its `Retry-After` (1 s if it has none).
pub fn busy_wire(e: &ApiError) -> Vec<u8> {
    let reply = Reply::error(e);
    let mut out = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\nRetry-After: {}\r\n",
        reply.content_type,
        reply.body.len(),
        e.retry_after.unwrap_or(1)
    );
    for (k, v) in HEADERS {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&reply.body);
    bytes
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
            path: percent(path),
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

/// Decodes `%XX` escapes (a broken one stays as it is): the store's decoding of partition
/// values is the same.
fn percent(s: &str) -> String {
    crate::store::layout::unescape(s)
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
        assert_eq!(decode("a%zzb%4"), "a%zzb%4");
        assert_eq!(decode("%41%"), "A%");
    }
}
