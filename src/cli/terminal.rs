//! The keyboard of `play --interactive`: keys read one at a time, from a terminal in raw mode
//! or, when standard input is not a terminal, from a script (the same bytes, whitespace
//! skipped), so a game can be replayed and tested without a terminal.
//!
//! Raw mode is `termios` through `libc` (already a dependency): echo, line buffering and
//! signal keys off, restored by a guard when it is dropped. The other way, `crossterm`,
//! reaches this crate only through `comfy-table` under the `report` feature and with a
//! trimmed feature set; making it a direct dependency would add a whole terminal library
//! for four flags and an escape sequence, and `play` must work without `report`.
//!
//! Keys: the arrows, `h j k l` (vi), `w a s d`; `?` a hint; `q`, Ctrl-C or Ctrl-D quits.

use std::io::{self, BufRead};

use crate::rules::Dir;

/// A key press, as the game reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Move(Dir),
    Hint,
    Quit,
    /// Any other key (the byte as read).
    Other(u8),
}

/// Keys read from a byte stream.
pub struct Keys<R: BufRead> {
    input: R,
}

impl<R: BufRead> Keys<R> {
    pub fn new(input: R) -> Keys<R> {
        Keys { input }
    }

    fn byte(&mut self) -> io::Result<Option<u8>> {
        loop {
            match self.input.fill_buf() {
                Ok([]) => return Ok(None),
                Ok(buf) => {
                    let b = buf[0];
                    self.input.consume(1);
                    return Ok(Some(b));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The next key, `None` at the end of the input.
    pub fn next_key(&mut self) -> io::Result<Option<Key>> {
        loop {
            let Some(b) = self.byte()? else {
                return Ok(None);
            };
            let key = match b {
                b' ' | b'\t' | b'\n' | b'\r' => continue,
                0x1b => match self.byte()? {
                    Some(b'[') | Some(b'O') => match self.byte()? {
                        Some(b'A') => Key::Move(Dir::U),
                        Some(b'B') => Key::Move(Dir::D),
                        Some(b'C') => Key::Move(Dir::R),
                        Some(b'D') => Key::Move(Dir::L),
                        Some(other) => Key::Other(other),
                        None => return Ok(None),
                    },
                    Some(other) => Key::Other(other),
                    None => return Ok(None),
                },
                b'h' | b'a' => Key::Move(Dir::L),
                b'l' | b'd' => Key::Move(Dir::R),
                b'k' | b'w' => Key::Move(Dir::U),
                b'j' | b's' => Key::Move(Dir::D),
                b'?' => Key::Hint,
                b'q' | 3 | 4 => Key::Quit,
                other => Key::Other(other),
            };
            return Ok(Some(key));
        }
    }
}

/// Standard input in raw mode while this guard lives (Unix terminals).
pub struct RawMode {
    #[cfg(unix)]
    saved: libc::termios,
}

#[cfg(unix)]
impl RawMode {
    /// Turns off echo, line buffering and signal keys on standard input.
    pub fn enable() -> io::Result<RawMode> {
        // SAFETY: `termios` is a plain C struct for which all-zero bytes are a valid value;
        // `tcgetattr` fills it for descriptor 0 (standard input, open for the whole process)
        // and we read it only when the call succeeded.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: see above; `saved` is a valid, writable termios.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
        raw.c_iflag &= !(libc::IXON | libc::ICRNL);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: `raw` is a valid termios derived from the terminal's own settings.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(RawMode { saved })
    }
}

#[cfg(unix)]
impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the settings `tcgetattr` returned for the same descriptor.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved);
        }
    }
}

#[cfg(not(unix))]
impl RawMode {
    /// Raw mode needs a Unix terminal; elsewhere keys are read a line at a time.
    pub fn enable() -> io::Result<RawMode> {
        Err(io::Error::other("raw terminal mode needs a Unix terminal"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_a_script() {
        let script = b"h j\nk l w a s d \x1b[A\x1b[B\x1b[C\x1b[D\x1bOA ? x q";
        let mut k = Keys::new(&script[..]);
        let mut got = Vec::new();
        while let Some(key) = k.next_key().unwrap() {
            got.push(key);
        }
        use Dir::*;
        let m = Key::Move;
        assert_eq!(
            got,
            vec![
                m(L),
                m(D),
                m(U),
                m(R),
                m(U),
                m(L),
                m(D),
                m(R),
                m(U),
                m(D),
                m(R),
                m(L),
                m(U),
                Key::Hint,
                Key::Other(b'x'),
                Key::Quit
            ]
        );
    }
}
