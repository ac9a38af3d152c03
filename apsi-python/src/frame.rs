//! Framing of the pipes between Apsi and the Python worker: each message is
//! an 8-byte little-endian length, then that many bytes.

use std::io::{self, Read, Write};

/// Writes one frame and flushes.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    let head = (body.len() as u64).to_le_bytes();
    if body.len() <= SMALL {
        // One write (one system call on a pipe) for the common small message.
        let mut one = Vec::with_capacity(head.len() + body.len());
        one.extend_from_slice(&head);
        one.extend_from_slice(body);
        w.write_all(&one)?;
    } else {
        w.write_all(&head)?;
        w.write_all(body)?;
    }
    w.flush()
}

/// Messages up to this size are written with their header in one piece.
const SMALL: usize = 64 * 1024;

/// Reads one frame; `Ok(None)` when the other side closed the pipe before a
/// new frame began. A frame cut short is an `UnexpectedEof` error; a length
/// this process cannot allocate is an `OutOfMemory` error (never an abort).
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match r.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a frame header cut short")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u64::from_le_bytes(head);
    let len = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, format!("a frame of {len} bytes")))?;
    let mut body = Vec::new();
    body.try_reserve_exact(len).map_err(|_| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!("a frame of {len} bytes does not fit in memory"),
        )
    })?;
    r.take(len as u64).read_to_end(&mut body)?;
    if body.len() != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("a frame cut short: {} of {len} bytes", body.len()),
        ));
    }
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_back_to_back() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"hello").unwrap();
        write_frame(&mut buf, b"").unwrap();
        write_frame(&mut buf, &[7u8; 1000]).unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap().unwrap(), b"hello");
        assert_eq!(read_frame(&mut r).unwrap().unwrap(), b"");
        assert_eq!(read_frame(&mut r).unwrap().unwrap(), vec![7u8; 1000]);
        assert!(read_frame(&mut r).unwrap().is_none());
    }

    #[test]
    fn truncated_and_huge_frames_are_errors() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"hello").unwrap();
        for cut in 1..buf.len() {
            let mut r = &buf[..cut];
            let e = read_frame(&mut r).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
        let huge = u64::MAX.to_le_bytes();
        let mut r = &huge[..];
        assert_eq!(read_frame(&mut r).unwrap_err().kind(), io::ErrorKind::OutOfMemory);
    }
}
