//! A body decoded while it arrives: chunks pass through a small bounded channel to a blocking
//! thread that runs serde_json over them. A relist's `/api/v1/series` answer (15 MB at 100,000
//! series) is then never held whole; buffered, two of them in flight were a third of the
//! adapter's peak memory.

use std::io::{BufReader, Read};

use bytes::{Buf, Bytes};
use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::response::{DecodeError, Decoded, decode_reader};

/// Chunks received but not yet decoded, at most. The network waits for the decoder beyond it.
const CHUNKS_AHEAD: usize = 4;

/// serde_json's buffer over the chunks.
const READ_BUFFER: usize = 32 << 10;

/// The receiving end of the channel, read as one byte stream; the end of the channel (the
/// sender dropped: body complete, failed or abandoned) is the end of the stream.
struct ChunkReader {
    chunks: mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}

/// Why a streamed body did not decode.
pub(super) enum StreamError<E> {
    /// Reading the body failed (`E` from `next_chunk`); the decoder's view of a cut-off body
    /// is not the story.
    Body(E),
    /// The body arrived but is not a valid answer.
    Decode(DecodeError),
}

/// Decodes the chunks of `body` as a `T` envelope on a blocking thread, holding at most
/// [`CHUNKS_AHEAD`] chunks at once.
pub(super) async fn decode_streamed<T, E>(
    body: impl Stream<Item = Result<Bytes, E>>,
) -> Result<Decoded<T>, StreamError<E>>
where
    T: DeserializeOwned + Send + 'static,
{
    let (sender, chunks) = mpsc::channel(CHUNKS_AHEAD);
    let reader = ChunkReader {
        chunks,
        current: Bytes::new(),
    };
    let decoder = tokio::task::spawn_blocking(move || {
        decode_reader::<T, _>(BufReader::with_capacity(READ_BUFFER, reader))
    });
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        // Dropping the sender on an error ends the decoder's stream; it stops by itself.
        let chunk = chunk.map_err(StreamError::Body)?;
        // A closed channel means the decoder already failed: its error says why.
        if sender.send(chunk).await.is_err() {
            break;
        }
    }
    drop(sender);
    match decoder.await {
        Ok(decoded) => decoded.map_err(StreamError::Decode),
        Err(e) => Err(StreamError::Decode(DecodeError::Json(format!(
            "the decoder stopped: {e}"
        )))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::series_shapes::SeriesShapes;

    /// The body cut into pieces of `size` bytes.
    fn pieces(body: &[u8], size: usize) -> impl Stream<Item = Result<Bytes, String>> + use<> {
        let pieces: Vec<_> = body
            .chunks(size)
            .map(|p| Ok(Bytes::copy_from_slice(p)))
            .collect();
        futures::stream::iter(pieces)
    }

    const BODY: &[u8] = br#"{"status":"success","warnings":["w"],"data":[
        {"__name__":"up","job":"x","instance":"a\"b"},
        {"instance":"b","__name__":"up","job":"y"},
        {"__name__":"http_requests_total","pod":"p\u00e9","namespace":"n"}]}"#;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_body_in_any_pieces_decodes_as_the_whole() {
        let whole = super::super::series_shapes::decode_series_shapes(BODY).expect("whole");
        for size in [1, 2, 7, 64, BODY.len()] {
            let Ok(streamed) = decode_streamed::<SeriesShapes, _>(pieces(BODY, size)).await else {
                panic!("pieces of {size} bytes did not decode");
            };
            assert_eq!(streamed, whole, "pieces of {size} bytes");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_cut_off_or_invalid_body_is_an_error_naming_its_cause() {
        let cut = &BODY[..BODY.len() - 10];
        match decode_streamed::<SeriesShapes, _>(pieces(cut, 16)).await {
            Err(StreamError::Decode(DecodeError::Json(m))) => assert!(m.contains("EOF"), "{m}"),
            _ => panic!("a cut-off body must not decode"),
        }
        let error = br#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
        match decode_streamed::<SeriesShapes, _>(pieces(error, 5)).await {
            Err(StreamError::Decode(DecodeError::Api { error_type, .. })) => {
                assert_eq!(error_type, "bad_data")
            }
            _ => panic!("an error envelope must decode as the API's error"),
        }
        let failing = futures::stream::iter([
            Ok(Bytes::from_static(b"{\"status\":")),
            Err("connection reset".to_owned()),
        ]);
        match decode_streamed::<SeriesShapes, _>(failing).await {
            Err(StreamError::Body(e)) => assert_eq!(e, "connection reset"),
            _ => panic!("a failed read must be reported as such"),
        }
    }
}
