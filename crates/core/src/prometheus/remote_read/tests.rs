use super::proto::{ChunkProto, ChunkedSeries, Label, QueryResult, SampleProto, TimeSeries};
use super::xor::test_encoder::encode_xor;
use super::*;

fn label(name: &str, value: &str) -> Label {
    Label {
        name: name.into(),
        value: value.into(),
    }
}

fn chunk(samples: &[(i64, f64)]) -> ChunkProto {
    ChunkProto {
        min_time_ms: samples.first().map_or(0, |s| s.0),
        max_time_ms: samples.last().map_or(0, |s| s.0),
        r#type: ChunkEncoding::Xor as i32,
        data: encode_xor(samples),
    }
}

fn frame(series: Vec<ChunkedSeries>) -> Vec<u8> {
    let data = ChunkedReadResponse {
        chunked_series: series,
        query_index: 0,
    }
    .encode_to_vec();
    let mut out = Vec::new();
    let mut len = data.len() as u64;
    while len >= 0x80 {
        out.push((len as u8) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend(crc32c(&data).to_be_bytes());
    out.extend(data);
    out
}

#[test]
fn crc32c_is_castagnoli() {
    // The check value of CRC-32C.
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn chunked_answers_join_series_across_frames_and_keep_the_range() {
    let web = vec![label("__name__", "cpu"), label("pod", "web")];
    let db = vec![label("__name__", "cpu"), label("pod", "db")];
    let mut body = frame(vec![ChunkedSeries {
        labels: web.clone(),
        chunks: vec![chunk(&[(1000, 1.0), (2000, 2.0)]), chunk(&[(3000, 3.0)])],
    }]);
    body.extend(frame(vec![
        ChunkedSeries {
            labels: web,
            chunks: vec![chunk(&[(4000, 4.0), (5000, 5.0)])],
        },
        ChunkedSeries {
            labels: db,
            // Entirely outside the range: not even decoded.
            chunks: vec![ChunkProto {
                data: vec![0xff],
                ..chunk(&[(9000, 1.0)])
            }],
        },
    ]));
    let series = decode_chunks(&body, 2000, 4000).unwrap();
    assert_eq!(series.len(), 2);
    assert_eq!(series[0].labels["pod"], "web");
    assert_eq!(series[0].samples, [(2000, 2.0), (3000, 3.0), (4000, 4.0)]);
    assert!(series[1].samples.is_empty());
}

#[test]
fn damaged_chunked_answers_are_errors() {
    let good = frame(vec![ChunkedSeries {
        labels: vec![label("pod", "web")],
        chunks: vec![chunk(&[(1000, 1.0), (2000, 2.0)])],
    }]);
    for cut in 1..good.len() {
        assert!(decode_chunks(&good[..cut], 0, 10_000).is_err(), "cut {cut}");
    }
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(decode_chunks(&flipped, 0, 10_000).is_err());
    let histogram = frame(vec![ChunkedSeries {
        labels: vec![label("pod", "web")],
        chunks: vec![ChunkProto {
            r#type: ChunkEncoding::Histogram as i32,
            ..chunk(&[(1000, 1.0)])
        }],
    }]);
    let e = decode_chunks(&histogram, 0, 10_000)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a float"), "{e}");
}

#[test]
fn sampled_answers_decode() {
    let response = ReadResponse {
        results: vec![QueryResult {
            timeseries: vec![TimeSeries {
                labels: vec![label("pod", "web")],
                samples: vec![SampleProto {
                    value: 0.25,
                    timestamp: 60_000,
                }],
            }],
        }],
    };
    let body = snap::raw::Encoder::new()
        .compress_vec(&response.encode_to_vec())
        .unwrap();
    let series = decode_samples(&body).unwrap();
    assert_eq!(series[0].samples, [(60_000, 0.25)]);
    assert!(decode_samples(b"not snappy").is_err());
}

#[test]
fn requests_carry_the_range_matchers_and_format() {
    let body = encode_request(
        &[
            RawMatcher::new("__name__", MatchOp::Equal, "cpu"),
            RawMatcher::new("pod", MatchOp::Regex, "^web-.*$"),
            RawMatcher::new("container", MatchOp::NotEqual, "POD"),
        ],
        1000,
        2000,
        ReadFormat::Chunks,
    );
    let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
    let request = ReadRequest::decode(raw.as_slice()).unwrap();
    assert_eq!(
        request.accepted_response_types,
        [ResponseType::StreamedXorChunks as i32]
    );
    let q = &request.queries[0];
    assert_eq!((q.start_timestamp_ms, q.end_timestamp_ms), (1000, 2000));
    let types: Vec<i32> = q.matchers.iter().map(|m| m.r#type).collect();
    assert_eq!(
        types,
        [
            MatchType::Eq as i32,
            MatchType::Re as i32,
            MatchType::Neq as i32
        ]
    );
}
