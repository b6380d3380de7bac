//! Connecting from a chosen loopback address (127.0.0.x), so that one machine's clients reach
//! `age2048 serve` as distinct users (it counts clients by address): shared by the load test
//! (`examples/serve_load.rs`) and the serve tests (`tests/integration/serve.rs`).

use std::net::{SocketAddr, TcpStream};

/// A connection to `to` (a loopback address) from the loopback address `from`.
pub fn connect_from(from: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else {
        return Err(std::io::Error::other("an IPv4 loopback address"));
    };
    let sockaddr = |ip: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a socket of ours, bound and connected with addresses of the size given, then
    // owned by the stream (closed here if either fails).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from_raw_fd(fd);
        let local = sockaddr(from, 0);
        if libc::bind(fd, std::ptr::addr_of!(local).cast(), len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let remote = sockaddr(to.ip().octets(), to.port());
        if libc::connect(fd, std::ptr::addr_of!(remote).cast(), len) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stream)
    }
}
