//! What a request must be to be served, checked before anything else runs:
//!
//! - its `Host` names this server: the bound address with its port (or without one when the
//!   port is 80 or 443, as browsers send it there), or on loopback also `localhost`; a DNS name that points here (DNS rebinding: a page of another site whose
//!   name was made to resolve to 127.0.0.1) is refused. Bound to every interface, any IP
//!   literal with the port is taken, a name still is not;
//! - a write (any method but GET and HEAD) comes from the app's own page: an `Origin` other
//!   than this server's, or a browser's `Sec-Fetch-Site` other than same-origin, is refused.
//!   No CORS header is ever sent, so a browser gives no other site an answer to read.

use std::net::{IpAddr, SocketAddr};

use super::http::Request;
use super::ApiError;

/// The names a request's `Host` may have.
pub struct Guard {
    addr: SocketAddr,
}

impl Guard {
    pub fn new(addr: SocketAddr) -> Guard {
        Guard { addr }
    }

    /// The host names a `Host` header may carry (with the port, which a browser leaves out
    /// for 80 and 443).
    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = split_host(&host);
        let port_ok = match port {
            Some(p) => p.parse::<u16>().ok() == Some(self.addr.port()),
            None => matches!(self.addr.port(), 80 | 443),
        };
        if !port_ok {
            return false;
        }
        let ip: Option<IpAddr> = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name)
            .parse()
            .ok();
        let bound = self.addr.ip();
        match ip {
            Some(_) if bound.is_unspecified() => true,
            Some(ip) => ip == bound || (bound.is_loopback() && ip.is_loopback()),
            None => name == "localhost" && bound.is_loopback(),
        }
    }

    /// `Ok` when the request may be served; the refusal otherwise.
    pub fn check(&self, rq: &Request) -> Result<(), ApiError> {
        let host = rq.header("Host").unwrap_or("");
        if !self.host_allowed(host) {
            return Err(ApiError::new(
                403,
                format!(
                    "refused: the Host '{host}' is not this server's address ({}); open the page by that address",
                    self.addr
                ),
            ));
        }
        if rq.reads() {
            return Ok(());
        }
        if let Some(origin) = rq.header("Origin") {
            // The page's own origin (https:// when a proxy in front of port 443 speaks TLS).
            let own =
                |scheme: &str| origin.eq_ignore_ascii_case(&format!("{scheme}://{}", host.trim()));
            if !(own("http") || (self.addr.port() == 443 && own("https"))) {
                return Err(ApiError::new(
                    403,
                    format!("refused: a write from another origin ({origin})"),
                ));
            }
        }
        if let Some(site) = rq.header("Sec-Fetch-Site") {
            if !matches!(site, "same-origin" | "none") {
                return Err(ApiError::new(
                    403,
                    format!("refused: a write from another site (Sec-Fetch-Site: {site})"),
                ));
            }
        }
        Ok(())
    }
}

/// A `Host` value's name and port (`name:port`, `[v6]:port`, or the name alone); a bracket
/// left open or text after `]` gives an empty port, which no server has.
fn split_host(host: &str) -> (&str, Option<&str>) {
    if host.starts_with('[') {
        return match host.split_once(']') {
            Some((_, "")) => (host, None),
            Some((n, tail)) => match tail.strip_prefix(':') {
                Some(p) => (&host[..n.len() + 1], Some(p)),
                None => (host, Some("")),
            },
            None => (host, Some("")),
        };
    }
    match host.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (host, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_a_loopback_server() {
        let g = Guard::new("127.0.0.1:8048".parse().unwrap());
        for ok in [
            "127.0.0.1:8048",
            "localhost:8048",
            "LOCALHOST:8048",
            "[::1]:8048",
        ] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.example:8048",
            "127.0.0.1:8049",
            "127.0.0.1",
            "",
            "10.0.0.1:8048",
            "localhost.evil.example:8048",
        ] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn hosts_without_a_port_on_80_and_443() {
        for port in [80, 443] {
            let g = Guard::new(format!("127.0.0.1:{port}").parse().unwrap());
            for ok in [
                "127.0.0.1",
                "localhost",
                format!("127.0.0.1:{port}").as_str(),
                "[::1]",
            ] {
                assert!(g.host_allowed(ok), "{port} {ok}");
            }
            for bad in [
                "evil.example",
                "127.0.0.1:8048",
                "",
                "[::1",
                "[::1]x",
                "10.0.0.1",
            ] {
                assert!(!g.host_allowed(bad), "{port} {bad}");
            }
        }
        let g = Guard::new("127.0.0.1:8048".parse().unwrap());
        assert!(!g.host_allowed("127.0.0.1") && !g.host_allowed("[::1]"));
        assert!(g.host_allowed("[::1]:8048"));
    }

    #[test]
    fn hosts_of_a_server_on_every_interface() {
        let g = Guard::new("0.0.0.0:80".parse().unwrap());
        assert!(g.host_allowed("192.168.1.5:80"));
        assert!(!g.host_allowed("rebind.example:80"));
        let g = Guard::new("192.168.1.5:80".parse().unwrap());
        assert!(g.host_allowed("192.168.1.5:80"));
        assert!(!g.host_allowed("192.168.1.6:80") && !g.host_allowed("localhost:80"));
    }
}
