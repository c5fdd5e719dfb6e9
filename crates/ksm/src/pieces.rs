//! Reused buffers for the pieces a streamed scrape hands to the connection.
//!
//! A 100,000-pod scrape is ~480 MB sent in pieces of a few hundred KiB. A piece allocated
//! fresh each time is memory the allocator may just have given back to the kernel, so
//! filling it costs a page fault and a zeroed page per 4 KiB: hundreds of milliseconds of
//! CPU per scrape at that size, on top of the copy itself. Pieces therefore come from a
//! small free list and return to it once the connection has written them; the list keeps
//! at most a few, so an idle exporter holds almost nothing for them.

use std::sync::Mutex;

use axum::body::Bytes;

/// A free list of buffers of one capacity.
pub struct PiecePool {
    free: Mutex<Vec<Vec<u8>>>,
    capacity: usize,
    keep: usize,
}

impl PiecePool {
    /// Buffers of `capacity` bytes; at most `keep` of them wait unused.
    pub const fn new(capacity: usize, keep: usize) -> Self {
        Self {
            free: Mutex::new(Vec::new()),
            capacity,
            keep,
        }
    }

    /// An empty buffer with room for at least the pool's capacity.
    pub fn take(&self) -> Vec<u8> {
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.capacity))
    }

    /// `buf`'s bytes, without a copy; the buffer comes back to the pool when the last
    /// reference to them is dropped.
    pub fn bytes(&'static self, buf: Vec<u8>) -> Bytes {
        Bytes::from_owner(Piece { buf, pool: self })
    }

    /// How many buffers wait unused.
    #[cfg(test)]
    pub fn idle(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn give_back(&self, mut buf: Vec<u8>) {
        // A buffer that grew past the capacity (or never had it) is not the pool's kind.
        if buf.capacity() < self.capacity || buf.capacity() > 2 * self.capacity {
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < self.keep {
            buf.clear();
            free.push(buf);
        }
    }
}

struct Piece {
    buf: Vec<u8>,
    pool: &'static PiecePool,
}

impl AsRef<[u8]> for Piece {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Piece {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_piece_returns_its_buffer_and_the_pool_stays_bounded() {
        static POOL: PiecePool = PiecePool::new(1024, 2);
        let mut buf = POOL.take();
        assert!(buf.capacity() >= 1024 && buf.is_empty());
        buf.extend_from_slice(b"kube_pod_info 1\n");
        let address = buf.as_ptr();
        let piece = POOL.bytes(buf);
        assert_eq!(&piece[..], b"kube_pod_info 1\n");
        let slice = piece.slice(5..8);
        drop(piece);
        assert_eq!(POOL.idle(), 0, "a slice still refers to the bytes");
        drop(slice);
        assert_eq!(POOL.idle(), 1);
        let again = POOL.take();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), address, "the same buffer, reused");
        // At most `keep` wait; a buffer of another size is left to the allocator.
        let pieces: Vec<Bytes> = (0..4).map(|_| POOL.bytes(POOL.take())).collect();
        drop(pieces);
        assert_eq!(POOL.idle(), 2);
        drop(POOL.bytes(Vec::with_capacity(10)));
        assert_eq!(POOL.idle(), 2);
        drop(again);
    }
}
