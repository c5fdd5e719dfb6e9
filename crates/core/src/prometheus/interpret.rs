//! How an HTTP answer becomes a value or the most specific error.

use super::PrometheusError;
use super::endpoint::Endpoint;
use super::remote_read::{RawSeries, decode_chunks, decode_samples};
use super::response::{DecodeError, Decoded, decode_error_body};

/// How much of a non-JSON error body is kept in [`PrometheusError::Http`]: enough to recognise a
/// proxy's error page, not enough to flood logs.
const ERROR_BODY_SNIPPET: usize = 512;

/// Turns status + body into a value (and the backend's warnings, logged here) or the most
/// specific error. Prometheus sends error JSON with 400/422/503; anything else non-2xx is most
/// likely a proxy, and its body is kept as a snippet.
pub(super) fn interpret<T>(
    endpoint: Endpoint,
    status: u16,
    body: &[u8],
    decode: fn(&[u8]) -> Result<Decoded<T>, DecodeError>,
) -> Result<(T, Vec<String>), PrometheusError> {
    if !(200..300).contains(&status) {
        return Err(interpret_error(endpoint, status, body));
    }
    interpret_decoded(endpoint, status, decode(body))
}

/// A non-2xx answer: Prometheus' own error when the body carries one, else the status and
/// the start of the body.
pub(super) fn interpret_error(endpoint: Endpoint, status: u16, body: &[u8]) -> PrometheusError {
    let name = endpoint.as_str();
    match decode_error_body(body) {
        Some((error_type, error)) => PrometheusError::Api {
            endpoint: name,
            status,
            error_type,
            error,
        },
        None => PrometheusError::Http {
            endpoint: name,
            status,
            body: snippet(body),
        },
    }
}

/// A 2xx answer's decoded body; its warnings are logged.
pub(super) fn interpret_decoded<T>(
    endpoint: Endpoint,
    status: u16,
    decoded: Result<Decoded<T>, DecodeError>,
) -> Result<(T, Vec<String>), PrometheusError> {
    let name = endpoint.as_str();
    match decoded {
        Ok(d) => {
            for w in &d.warnings {
                tracing::warn!(endpoint = name, warning = %w, "Prometheus returned a warning");
            }
            Ok((d.data, d.warnings))
        }
        Err(DecodeError::Api { error_type, error }) => Err(PrometheusError::Api {
            endpoint: name,
            status,
            error_type,
            error,
        }),
        Err(e) => Err(PrometheusError::Decode {
            endpoint: name,
            reason: e.to_string(),
        }),
    }
}

/// A remote-read answer: the format the server chose (its Content-Type), decoded; a status
/// that says the backend has no remote read becomes [`PrometheusError::RemoteReadUnsupported`].
pub(super) fn interpret_read(
    status: u16,
    content_type: &str,
    body: &[u8],
    start_ms: i64,
    end_ms: i64,
) -> Result<Vec<RawSeries>, PrometheusError> {
    let name = Endpoint::Read.as_str();
    if !(200..300).contains(&status) {
        let text = snippet(body);
        // 404/405/501: no such endpoint; VictoriaMetrics answers 400 "unsupported path"; a
        // proxy that lets only queries through, 403 (range queries then say whether they
        // are forbidden too).
        let unsupported = matches!(status, 403 | 404 | 405 | 501)
            || (status == 400 && text.contains("unsupported path"));
        return Err(if unsupported {
            PrometheusError::RemoteReadUnsupported { status, body: text }
        } else {
            PrometheusError::Http {
                endpoint: name,
                status,
                body: text,
            }
        });
    }
    let decoded = if content_type.starts_with("application/x-streamed-protobuf") {
        decode_chunks(body, start_ms, end_ms)
    } else if content_type.starts_with("application/x-protobuf") {
        decode_samples(body)
    } else {
        return Err(PrometheusError::RemoteReadUnsupported {
            status,
            body: format!("answered {content_type:?}, not protobuf"),
        });
    };
    decoded.map_err(|e| PrometheusError::Decode {
        endpoint: name,
        reason: e.to_string(),
    })
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim();
    match trimmed.char_indices().nth(ERROR_BODY_SNIPPET) {
        Some((i, _)) => format!("{}...", &trimmed[..i]),
        None => trimmed.to_owned(),
    }
}
