//! Prometheus' remote-read API (`POST /api/v1/read`): raw samples of the series matching a
//! selector, without PromQL evaluation or JSON. For a week of history per container this
//! costs the server a fraction of a `query_range` (craned measured both:
//! docs/benchmarks.md): with `STREAMED_XOR_CHUNKS` it copies the compressed chunks as stored
//! and the client decodes them ([`xor`]); with `SAMPLES` it decodes them itself and sends one
//! snappy-compressed protobuf.
//!
//! The encoding and decoding here are pure; the request is [`super::PrometheusClient::read`].

pub mod proto;
pub mod xor;

use prost::Message;

use super::response::Labels;
use proto::{
    ChunkEncoding, ChunkedReadResponse, MatchType, ReadRequest, ReadResponse, ResponseType,
};

/// Which answer to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFormat {
    /// `STREAMED_XOR_CHUNKS`: the chunks as stored, decoded here.
    Chunks,
    /// `SAMPLES`: decoded by the server (subject to its `--storage.remote.read-sample-limit`).
    Samples,
}

/// One label matcher of a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMatcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOp {
    Equal,
    NotEqual,
    Regex,
    NotRegex,
}

impl RawMatcher {
    pub fn new(name: &str, op: MatchOp, value: &str) -> Self {
        RawMatcher {
            name: name.to_owned(),
            op,
            value: value.to_owned(),
        }
    }
}

/// One series as stored: its labels (`__name__` included) and its samples in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSeries {
    pub labels: Labels,
    /// (timestamp ms, value); Prometheus' staleness markers are kept as the NaN they are.
    pub samples: Vec<(i64, f64)>,
}

/// Why a remote-read answer could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadDecodeError {
    #[error("frame {frame}: {reason}")]
    Frame { frame: usize, reason: String },
    #[error("frame {frame}: checksum mismatch")]
    Checksum { frame: usize },
    #[error("series {series}: {reason}")]
    Chunk { series: String, reason: String },
    #[error("snappy: {0}")]
    Snappy(String),
    #[error("protobuf: {0}")]
    Protobuf(String),
}

/// The request body (snappy-compressed protobuf) for series matching `matchers` over
/// `[start_ms, end_ms]`.
pub fn encode_request(
    matchers: &[RawMatcher],
    start_ms: i64,
    end_ms: i64,
    format: ReadFormat,
) -> Vec<u8> {
    let request = ReadRequest {
        queries: vec![proto::Query {
            start_timestamp_ms: start_ms,
            end_timestamp_ms: end_ms,
            matchers: matchers
                .iter()
                .map(|m| proto::LabelMatcher {
                    r#type: match m.op {
                        MatchOp::Equal => MatchType::Eq,
                        MatchOp::NotEqual => MatchType::Neq,
                        MatchOp::Regex => MatchType::Re,
                        MatchOp::NotRegex => MatchType::Nre,
                    } as i32,
                    name: m.name.clone(),
                    value: m.value.clone(),
                })
                .collect(),
        }],
        accepted_response_types: vec![match format {
            ReadFormat::Chunks => ResponseType::StreamedXorChunks,
            ReadFormat::Samples => ResponseType::Samples,
        } as i32],
    };
    // Compressing into a Vec cannot fail for an in-memory input of this size.
    snap::raw::Encoder::new()
        .compress_vec(&request.encode_to_vec())
        .unwrap_or_default()
}

fn labels_of(labels: Vec<proto::Label>) -> Labels {
    labels.into_iter().map(|l| (l.name, l.value)).collect()
}

/// A `SAMPLES` answer: one snappy-compressed `ReadResponse`.
pub fn decode_samples(body: &[u8]) -> Result<Vec<RawSeries>, ReadDecodeError> {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| ReadDecodeError::Snappy(e.to_string()))?;
    let response = ReadResponse::decode(raw.as_slice())
        .map_err(|e| ReadDecodeError::Protobuf(e.to_string()))?;
    Ok(response
        .results
        .into_iter()
        .flat_map(|r| r.timeseries)
        .map(|ts| RawSeries {
            labels: labels_of(ts.labels),
            samples: ts
                .samples
                .into_iter()
                .map(|s| (s.timestamp, s.value))
                .collect(),
        })
        .collect())
}

/// A `STREAMED_XOR_CHUNKS` answer: frames of `uvarint length, CRC-32C (big-endian), message`,
/// each a `ChunkedReadResponse`. A series whose chunks span frames comes in consecutive
/// frames with the same labels and is joined. Samples outside `[start_ms, end_ms]` (chunks
/// overlap the range's edges) are dropped.
pub fn decode_chunks(
    body: &[u8],
    start_ms: i64,
    end_ms: i64,
) -> Result<Vec<RawSeries>, ReadDecodeError> {
    let mut out: Vec<RawSeries> = Vec::new();
    let mut rest = body;
    let mut frame = 0;
    while !rest.is_empty() {
        let (len, used) = uvarint(rest).ok_or(ReadDecodeError::Frame {
            frame,
            reason: "bad length".into(),
        })?;
        let cut = |reason: &str| ReadDecodeError::Frame {
            frame,
            reason: reason.into(),
        };
        let len = usize::try_from(len).map_err(|_| cut("length too large"))?;
        let header_end = used.checked_add(4).ok_or(cut("length too large"))?;
        let end = header_end.checked_add(len).ok_or(cut("length too large"))?;
        let (Some(crc), Some(data)) = (rest.get(used..header_end), rest.get(header_end..end))
        else {
            return Err(cut("truncated"));
        };
        if u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]) != crc32c(data) {
            return Err(ReadDecodeError::Checksum { frame });
        }
        let message = ChunkedReadResponse::decode(data)
            .map_err(|e| ReadDecodeError::Protobuf(e.to_string()))?;
        for series in message.chunked_series {
            let labels = labels_of(series.labels);
            let mut samples = Vec::new();
            for chunk in series.chunks {
                if chunk.max_time_ms < start_ms || chunk.min_time_ms > end_ms {
                    continue;
                }
                if chunk.r#type != ChunkEncoding::Xor as i32 {
                    return Err(ReadDecodeError::Chunk {
                        series: format!("{labels:?}"),
                        reason: format!(
                            "chunk encoding {} is not a float (XOR) chunk",
                            chunk.r#type
                        ),
                    });
                }
                let decoded = xor::decode_xor(&chunk.data).map_err(|e| ReadDecodeError::Chunk {
                    series: format!("{labels:?}"),
                    reason: e.to_string(),
                })?;
                samples.extend(
                    decoded
                        .into_iter()
                        .filter(|(t, _)| (start_ms..=end_ms).contains(t)),
                );
            }
            match out.last_mut() {
                Some(last) if last.labels == labels => last.samples.extend(samples),
                _ => out.push(RawSeries { labels, samples }),
            }
        }
        rest = &rest[end..];
        frame += 1;
    }
    Ok(out)
}

fn uvarint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

/// CRC-32C (Castagnoli), the checksum of remote read's frames.
fn crc32c(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0u32;
        while i < 256 {
            let mut c = i;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 == 1 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i as usize] = c;
            i += 1;
        }
        table
    };
    !data.iter().fold(!0u32, |c, &b| {
        TABLE[usize::from(c.to_le_bytes()[0] ^ b)] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests;
