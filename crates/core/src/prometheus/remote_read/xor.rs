//! Decoding Prometheus' XOR chunks (the TSDB's float chunk encoding, Gorilla-style), as remote
//! read's `STREAMED_XOR_CHUNKS` sends them: a big-endian `u16` sample count, then a bit stream —
//! the first timestamp as a signed varint and its value as 64 raw bits, the second timestamp
//! as an unsigned varint delta and its value XORed with the first, then delta-of-deltas in
//! 0/14/17/20/64-bit buckets and XORed values that reuse the previous leading/trailing zero
//! window when they fit in it.

/// Why a chunk could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    #[error("chunk ends after {read} of {expected} samples")]
    Truncated { read: usize, expected: usize },
    #[error("chunk has a malformed varint")]
    BadVarint,
}

struct Bits<'a> {
    bytes: &'a [u8],
    /// Position in bits.
    pos: usize,
}

impl Bits<'_> {
    fn bit(&mut self) -> Option<bool> {
        let byte = *self.bytes.get(self.pos / 8)?;
        let bit = byte & (0x80 >> (self.pos % 8)) != 0;
        self.pos += 1;
        Some(bit)
    }

    /// `n` (≤ 64) bits, most significant first.
    fn bits(&mut self, n: u32) -> Option<u64> {
        // A byte's worth of bits at a time: a value's significant bits are read in ≤ 9 steps
        // instead of one per bit (decoding is most of craned's CPU on a remote-read round).
        let end = self.pos.checked_add(usize::try_from(n).ok()?)?;
        if n > 64 || end > self.bytes.len().checked_mul(8)? {
            return None;
        }
        let mut v = 0u64;
        let mut remaining = n;
        while remaining > 0 {
            let byte = u64::from(self.bytes[self.pos / 8]);
            let offset = u32::try_from(self.pos % 8).ok()?;
            let available = 8 - offset;
            let take = available.min(remaining);
            let piece = (byte >> (available - take)) & ((1u64 << take) - 1);
            v = (v << take) | piece;
            self.pos += usize::try_from(take).ok()?;
            remaining -= take;
        }
        Some(v)
    }

    fn byte(&mut self) -> Option<u8> {
        self.bits(8).map(|b| b.to_be_bytes()[7])
    }

    fn uvarint(&mut self) -> Result<Option<u64>, ChunkError> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(b) = self.byte() else {
                return Ok(None);
            };
            if shift == 63 && b > 1 {
                return Err(ChunkError::BadVarint);
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(Some(v));
            }
        }
        Err(ChunkError::BadVarint)
    }

    fn varint(&mut self) -> Result<Option<i64>, ChunkError> {
        Ok(self.uvarint()?.map(|u| {
            let magnitude = i64::from_ne_bytes((u >> 1).to_ne_bytes());
            if u & 1 == 0 { magnitude } else { !magnitude }
        }))
    }
}

/// The samples of one XOR chunk as (timestamp ms, value), in order.
pub fn decode_xor(chunk: &[u8]) -> Result<Vec<(i64, f64)>, ChunkError> {
    let (Some(&hi), Some(&lo)) = (chunk.first(), chunk.get(1)) else {
        return Err(ChunkError::Truncated {
            read: 0,
            expected: 0,
        });
    };
    let expected = usize::from(u16::from_be_bytes([hi, lo]));
    let mut out = Vec::with_capacity(expected);
    let mut r = Bits {
        bytes: &chunk[2..],
        pos: 0,
    };
    let truncated = |read| ChunkError::Truncated { read, expected };
    let (mut t, mut delta, mut value) = (0i64, 0i64, 0u64);
    let (mut leading, mut trailing) = (0u32, 0u32);
    while out.len() < expected {
        match out.len() {
            0 => {
                t = r.varint()?.ok_or(truncated(0))?;
                value = r.bits(64).ok_or(truncated(0))?;
            }
            1 => {
                let d = r.uvarint()?.ok_or(truncated(1))?;
                delta = i64::from_ne_bytes(d.to_ne_bytes());
                t = t.wrapping_add(delta);
                value = read_xor(&mut r, value, &mut leading, &mut trailing).ok_or(truncated(1))?;
            }
            n => {
                let dod = read_dod(&mut r).ok_or(truncated(n))?;
                delta = delta.wrapping_add(dod);
                t = t.wrapping_add(delta);
                value = read_xor(&mut r, value, &mut leading, &mut trailing).ok_or(truncated(n))?;
            }
        }
        out.push((t, f64::from_bits(value)));
    }
    Ok(out)
}

/// A delta-of-delta: `0`, `10`+14 bits, `110`+17, `1110`+20 (two's complement in its width),
/// `1111`+64.
fn read_dod(r: &mut Bits<'_>) -> Option<i64> {
    let mut prefix = 0;
    while prefix < 4 && r.bit()? {
        prefix += 1;
    }
    let width = match prefix {
        0 => return Some(0),
        1 => 14,
        2 => 17,
        3 => 20,
        _ => return Some(i64::from_ne_bytes(r.bits(64)?.to_ne_bytes())),
    };
    let raw = i64::try_from(r.bits(width)?).ok()?;
    // As Prometheus reads it: above half the range is negative.
    Some(if raw > 1 << (width - 1) {
        raw - (1 << width)
    } else {
        raw
    })
}

/// A value XORed with the previous one: `0` (same), `10` + the bits inside the previous
/// window, or `11` + 5 bits of leading zeros + 6 bits of length (0 meaning 64) + the bits.
fn read_xor(r: &mut Bits<'_>, previous: u64, leading: &mut u32, trailing: &mut u32) -> Option<u64> {
    if !r.bit()? {
        return Some(previous);
    }
    if r.bit()? {
        *leading = u32::try_from(r.bits(5)?).ok()?;
        let mut significant = u32::try_from(r.bits(6)?).ok()?;
        if significant == 0 {
            significant = 64;
        }
        *trailing = 64u32.checked_sub(*leading + significant)?;
    }
    let significant = 64 - *leading - *trailing;
    let bits = r.bits(significant)?;
    Some(previous ^ (bits << *trailing))
}

/// An XOR chunk encoder written from the format's description, for round trips in tests.
#[cfg(test)]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub(crate) mod test_encoder {
    /// An encoder written from the format's description, to round-trip through the decoder.
    #[derive(Default)]
    struct Writer {
        bytes: Vec<u8>,
        bits: usize,
    }

    impl Writer {
        fn bit(&mut self, b: bool) {
            if self.bits.is_multiple_of(8) {
                self.bytes.push(0);
            }
            if b {
                let last = self.bytes.len() - 1;
                self.bytes[last] |= 0x80 >> (self.bits % 8);
            }
            self.bits += 1;
        }
        fn bits(&mut self, v: u64, n: u32) {
            for i in (0..n).rev() {
                self.bit(v >> i & 1 == 1);
            }
        }
        fn uvarint(&mut self, mut v: u64) {
            while v >= 0x80 {
                self.bits((v & 0x7f) | 0x80, 8);
                v >>= 7;
            }
            self.bits(v, 8);
        }
    }

    pub(crate) fn encode_xor(samples: &[(i64, f64)]) -> Vec<u8> {
        let mut w = Writer::default();
        let (mut t, mut delta, mut value) = (0i64, 0i64, 0u64);
        let (mut leading, mut trailing) = (0xffu32, 0u32);
        for (i, &(ts, v)) in samples.iter().enumerate() {
            let bits = v.to_bits();
            match i {
                0 => {
                    w.uvarint(((ts << 1) ^ (ts >> 63)) as u64);
                    w.bits(bits, 64);
                }
                _ => {
                    let d = ts - t;
                    if i == 1 {
                        w.uvarint(d as u64);
                    } else {
                        let dod = d - delta;
                        match dod {
                            0 => w.bit(false),
                            -8191..=8192 => {
                                w.bits(0b10, 2);
                                w.bits(dod as u64 & 0x3fff, 14)
                            }
                            -65535..=65536 => {
                                w.bits(0b110, 3);
                                w.bits(dod as u64 & 0x1ffff, 17)
                            }
                            -524287..=524288 => {
                                w.bits(0b1110, 4);
                                w.bits(dod as u64 & 0xfffff, 20)
                            }
                            _ => {
                                w.bits(0b1111, 4);
                                w.bits(dod as u64, 64)
                            }
                        }
                    }
                    delta = d;
                    let x = bits ^ value;
                    if x == 0 {
                        w.bit(false);
                    } else {
                        w.bit(true);
                        let (l, tz) = (x.leading_zeros().min(31), x.trailing_zeros());
                        if leading != 0xff && l >= leading && tz >= trailing {
                            w.bit(false);
                            w.bits(x >> trailing, 64 - leading - trailing);
                        } else {
                            (leading, trailing) = (l, tz);
                            w.bit(true);
                            w.bits(u64::from(l), 5);
                            let sig = 64 - l - tz;
                            w.bits(u64::from(sig % 64), 6);
                            w.bits(x >> tz, sig);
                        }
                    }
                }
            }
            t = ts;
            value = bits;
        }
        let mut out = (samples.len() as u16).to_be_bytes().to_vec();
        out.extend(w.bytes);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::test_encoder::encode_xor;
    use super::*;

    fn same(a: &[(i64, f64)], b: &[(i64, f64)]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits())
    }

    #[test]
    fn round_trips_every_bucket_and_value_shape() {
        let mut samples = vec![(1_700_000_000_123, 0.5), (1_700_000_015_123, 0.5)];
        let mut t = 1_700_000_015_123;
        // Delta-of-deltas in every bucket, regular steps, and values that keep, shrink and
        // widen the XOR window, NaN and infinities included.
        for (i, dod) in [0, 0, 5, -7, 9000, -60000, 500_000, 4_000_000, 0, 1]
            .into_iter()
            .enumerate()
        {
            t += 15_000 + dod;
            let v = match i % 5 {
                0 => 1e-3 * i as f64,
                1 => -123456.789,
                2 => f64::NAN,
                3 => f64::INFINITY,
                _ => 42.0,
            };
            samples.push((t, v));
        }
        for n in [1, 2, 3, samples.len()] {
            let decoded = decode_xor(&encode_xor(&samples[..n])).unwrap();
            assert!(same(&decoded, &samples[..n]), "{n}: {decoded:?}");
        }
        let negative = [(-5_000, 1.0), (-1_000, 2.0), (3_000, 2.5)];
        assert!(same(
            &decode_xor(&encode_xor(&negative)).unwrap(),
            &negative
        ));
    }

    #[test]
    fn reading_many_bits_at_once_equals_reading_them_one_by_one() {
        let bytes: Vec<u8> = (0u32..40).map(|i| (i * 37 + 11) as u8).collect();
        for widths in [[1u32, 7, 8, 64, 3], [5, 6, 13, 0, 64], [64, 64, 63, 2, 1]] {
            let (mut fast, mut slow) = (
                Bits {
                    bytes: &bytes,
                    pos: 0,
                },
                Bits {
                    bytes: &bytes,
                    pos: 0,
                },
            );
            for n in widths {
                let one_by_one =
                    (0..n).try_fold(0u64, |v, _| Some((v << 1) | u64::from(slow.bit()?)));
                assert_eq!(fast.bits(n), one_by_one, "{widths:?} at {n}");
                assert_eq!(fast.pos, slow.pos);
            }
        }
        let mut short = Bits {
            bytes: &bytes[..2],
            pos: 3,
        };
        assert_eq!(short.bits(14), None);
        assert_eq!(
            short.bits(13),
            Some(u64::from(u16::from_be_bytes([bytes[0], bytes[1]]) & 0x1fff))
        );
        assert_eq!(
            Bits {
                bytes: &bytes,
                pos: 0
            }
            .bits(65),
            None
        );
    }

    #[test]
    fn a_cut_chunk_is_an_error_not_a_panic() {
        let full = encode_xor(&[(1000, 1.0), (2000, 2.0), (3000, 4.0), (4100, 8.5)]);
        for cut in 0..full.len() - 1 {
            assert!(decode_xor(&full[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(decode_xor(&[0, 0]).unwrap(), vec![]);
    }
}
