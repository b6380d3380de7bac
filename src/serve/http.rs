//! HTTP/1.1 as far as the app needs it, over `std::net`: a request read with every part
//! bounded (request line, headers, a body of at most [`MAX_BODY`](super::MAX_BODY) bytes given
//! by `Content-Length`), its target decoded, and a [`Reply`] written with the headers every
//! answer carries (its length, no CORS header, no sniffing, the page's own origin only).

use std::io::{self, BufRead, Read, Write};
use std::net::SocketAddr;

use super::ApiError;

/// The longest request line or header line read.
const MAX_LINE: usize = 8 * 1024;
/// The most header lines read.
const MAX_HEADERS: usize = 64;

/// A request, read whole.
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
    /// HTTP/1.0, or `Connection: close`: the connection ends after the reply.
    pub close: bool,
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

/// Why no request was read.
pub enum ReadError {
    /// The client closed the connection, or said nothing within the idle time.
    Closed,
    /// A request the server will not read on: answered with this, then the connection ends.
    Refused(ApiError),
}

/// One line without its CRLF, at most [`MAX_LINE`] bytes.
fn line(r: &mut impl BufRead) -> Result<Option<String>, ReadError> {
    let mut buf = Vec::new();
    let n = r
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut buf)
        .map_err(|_| ReadError::Closed)?;
    if n == 0 {
        return Ok(None);
    }
    if !buf.ends_with(b"\n") {
        if buf.len() <= MAX_LINE {
            return Err(ReadError::Closed); // the client stopped mid-line
        }
        return Err(ReadError::Refused(ApiError::new(
            431,
            "a request line or header is longer than 8 KiB",
        )));
    }
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| ReadError::Refused(ApiError::bad("the request head is not UTF-8")))
}

/// Reads the next request of a connection (`max_body`: the largest body taken).
pub fn read_request(
    r: &mut impl BufRead,
    peer: SocketAddr,
    max_body: usize,
) -> Result<Request, ReadError> {
    let bad = |m: &str| ReadError::Refused(ApiError::bad(m.to_string()));
    // Blank lines between requests are allowed (RFC 9112 §2.2).
    let first = loop {
        match line(r)? {
            None => return Err(ReadError::Closed),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("a malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Refused(ApiError::new(
            505,
            "only HTTP/1.x is spoken here",
        )));
    }
    let mut headers = Vec::new();
    loop {
        let Some(l) = line(r)? else {
            return Err(ReadError::Closed);
        };
        if l.is_empty() {
            break;
        }
        if headers.len() == MAX_HEADERS {
            return Err(ReadError::Refused(ApiError::new(431, "too many headers")));
        }
        let Some((k, v)) = l.split_once(':') else {
            return Err(bad("a malformed header line"));
        };
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut rq = Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
        peer,
        close: version == "HTTP/1.0",
    };
    if let Some(c) = rq.header("Connection") {
        let c = c.to_ascii_lowercase();
        rq.close = c.contains("close") || (rq.close && !c.contains("keep-alive"));
    }
    if rq.header("Transfer-Encoding").is_some() {
        return Err(ReadError::Refused(ApiError::new(
            411,
            "send the body with a Content-Length",
        )));
    }
    let len = match rq.header("Content-Length") {
        None => 0,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| bad("a malformed Content-Length"))?,
    };
    if len > max_body {
        // A body up to 16 times the cap is read and dropped, so that the client, still
        // sending it, reads the refusal instead of a reset connection.
        if len <= 16 * max_body {
            let _ = io::copy(&mut r.take(len as u64), &mut io::sink());
        }
        return Err(ReadError::Refused(ApiError::new(
            413,
            format!("the request body is larger than {} KiB", max_body / 1024),
        )));
    }
    rq.body = vec![0; len];
    r.read_exact(&mut rq.body).map_err(|_| ReadError::Closed)?;
    Ok(rq)
}

/// An answer to a request.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, value: &serde_json::Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec()),
        }
    }

    /// `{"error": "…"}` with the error's status.
    pub fn error(e: &ApiError) -> Reply {
        Reply::json(e.status, &serde_json::json!({ "error": e.message }))
    }

    /// A file's bytes.
    pub fn file(content_type: &'static str, body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            content_type,
            body,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Writes `reply` (without its body for HEAD); `close` says the connection ends after it.
pub fn write_reply(w: &mut impl Write, reply: &Reply, head: bool, close: bool) -> io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'self'\r\n\
         Cache-Control: no-store\r\nConnection: {}\r\n",
        reply.status,
        reason(reply.status),
        reply.content_type,
        reply.body.len(),
        if close { "close" } else { "keep-alive" },
    );
    if reply.content_type.starts_with("text/html") {
        out.push_str("X-Frame-Options: SAMEORIGIN\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head {
        bytes.extend_from_slice(&reply.body);
    }
    w.write_all(&bytes)?;
    w.flush()
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

    fn read(text: &str) -> Result<Request, ReadError> {
        read_request(
            &mut io::BufReader::new(text.as_bytes()),
            "127.0.0.1:1".parse().unwrap(),
            16,
        )
    }

    fn refused(text: &str) -> u16 {
        match read(text) {
            Err(ReadError::Refused(e)) => e.status,
            Err(ReadError::Closed) => 0,
            Ok(_) => 200,
        }
    }

    #[test]
    fn requests_are_read_within_their_bounds() {
        let rq =
            read("\r\nPOST /api/sql?x=1 HTTP/1.1\r\nHost: a:1\r\nContent-Length: 4\r\n\r\nbody")
                .ok()
                .unwrap();
        assert_eq!(
            (rq.method.as_str(), rq.target.as_str()),
            ("POST", "/api/sql?x=1")
        );
        assert_eq!(
            (rq.header("host"), rq.body.as_slice(), rq.close),
            (Some("a:1"), &b"body"[..], false)
        );
        assert!(read("GET / HTTP/1.0\r\n\r\n").ok().unwrap().close);
        assert!(
            read("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
                .ok()
                .unwrap()
                .close
        );
        assert_eq!(
            refused("POST / HTTP/1.1\r\nContent-Length: 17\r\n\r\n"),
            413
        );
        assert_eq!(
            refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            411
        );
        assert_eq!(refused("GET / HTTP/2\r\n\r\n"), 505);
        assert_eq!(refused("GET /\r\n\r\n"), 400);
        assert_eq!(
            refused(&format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(9000))),
            431
        );
        assert_eq!(refused("GET / HTTP/1.1\r\nHost: a"), 0); // a line cut short
        assert_eq!(refused(""), 0);
    }

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
