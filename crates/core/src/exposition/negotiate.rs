//! Choosing between text 0.0.4 and OpenMetrics from an `Accept` header.
//!
//! kube-state-metrics delegates this to Prometheus' `expfmt` negotiation and
//! then falls back to text for anything that is not OpenMetrics (it has no
//! protobuf writer). The rules reproduced here: media ranges are tried in
//! order of decreasing `q` (ties keep header order, concrete types before
//! wildcards); the first `text/plain` with version 0.0.4 or no version picks
//! text, the first `application/openmetrics-text` with version 1.0.0, 0.0.1 or
//! no version picks OpenMetrics; anything else, or no match, is text. A
//! wildcard never selects OpenMetrics, so scrapers that did not ask for it
//! keep getting the format they always got.
//!
//! The `Content-Type` follows kube-state-metrics too: text is always
//! `text/plain; version=0.0.4; charset=utf-8`; OpenMetrics names the version asked for
//! (`1.0.0`, else `0.0.1`) and an `escaping=` scheme — the last one a client's ranges named,
//! in the order they are tried, among `allow-utf-8`, `underscores`, `dots` and `values`;
//! `underscores` when none did.

use super::Format;

struct MediaRange<'a> {
    ty: &'a str,
    subtype: &'a str,
    version: Option<&'a str>,
    escaping: Option<&'a str>,
    q: f32,
}

/// The escaping schemes Prometheus' `expfmt` recognises in an `Accept` range.
const ESCAPING_SCHEMES: [&str; 4] = ["allow-utf-8", "underscores", "dots", "values"];

/// How a scrape is answered: the format and its `Content-Type` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    pub format: Format,
    pub content_type: String,
}

impl Negotiated {
    fn text() -> Self {
        Negotiated {
            format: Format::Text004,
            content_type: Format::Text004.content_type().to_string(),
        }
    }
}

fn parse_accept(header: &str) -> Vec<MediaRange<'_>> {
    let mut out = Vec::new();
    for part in header.split(',') {
        let mut params = part.split(';');
        let range = params.next().unwrap_or("").trim();
        let (ty, subtype) = match range.split_once('/') {
            Some((t, s)) => (t.trim(), s.trim()),
            None if range == "*" => ("*", "*"),
            None => continue,
        };
        let mut mr = MediaRange {
            ty,
            subtype,
            version: None,
            escaping: None,
            q: 1.0,
        };
        for p in params {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match k.trim() {
                "q" => mr.q = v.trim().parse().unwrap_or(0.0),
                "version" => mr.version = Some(v.trim().trim_matches('"')),
                "escaping" => mr.escaping = Some(v.trim().trim_matches('"')),
                _ => {}
            }
        }
        out.push(mr);
    }
    out
}

/// Picks the exposition format for a request's `Accept` header (`None` when
/// the header is absent), and the `Content-Type` to answer with.
pub fn negotiate(accept: Option<&str>) -> Negotiated {
    let Some(accept) = accept else {
        return Negotiated::text();
    };
    let mut ranges = parse_accept(accept);
    ranges.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (a.ty == "*").cmp(&(b.ty == "*")))
            .then_with(|| (a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    let mut escaping = "underscores";
    for r in ranges {
        // RFC 9110: q=0 means "not acceptable". expfmt ignores that and only
        // sorts such ranges last; we do not offer a format the client refused.
        if r.q <= 0.0 {
            continue;
        }
        if let Some(scheme) = r
            .escaping
            .and_then(|e| ESCAPING_SCHEMES.iter().find(|s| **s == e))
        {
            escaping = scheme;
        }
        let ty = r.ty.to_ascii_lowercase();
        let sub = r.subtype.to_ascii_lowercase();
        if ty == "text" && sub == "plain" && matches!(r.version, None | Some("") | Some("0.0.4")) {
            return Negotiated::text();
        }
        if ty == "application"
            && sub == "openmetrics-text"
            && matches!(r.version, None | Some("") | Some("1.0.0") | Some("0.0.1"))
        {
            let version = if r.version == Some("1.0.0") {
                "1.0.0"
            } else {
                "0.0.1"
            };
            return Negotiated {
                format: Format::OpenMetrics,
                content_type: format!(
                    "application/openmetrics-text; version={version}; charset=utf-8; escaping={escaping}"
                ),
            };
        }
    }
    Negotiated::text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prom)).format, Format::OpenMetrics);
        assert_eq!(negotiate(None).format, Format::Text004);
        assert_eq!(negotiate(Some("")).format, Format::Text004);
        assert_eq!(negotiate(Some("*/*")).format, Format::Text004);
        assert_eq!(negotiate(Some("text/plain")).format, Format::Text004);
        assert_eq!(
            negotiate(Some("application/openmetrics-text")).format,
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text; version=2.0.0")).format,
            Format::Text004
        );
        assert_eq!(
            negotiate(Some(
                "text/plain;version=0.0.4;q=0.9, application/openmetrics-text;q=1"
            ))
            .format,
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0.2, text/plain;q=0.9")).format,
            Format::Text004
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0")).format,
            Format::Text004
        );
        assert_eq!(
            negotiate(Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")).format,
            Format::Text004
        );
        assert_eq!(negotiate(Some("garbage,,;;==")).format, Format::Text004);
    }

    #[test]
    fn content_type_names_version_and_escaping_as_kube_state_metrics_does() {
        let ct = |accept: &str| negotiate(Some(accept)).content_type;
        assert_eq!(ct("text/plain"), "text/plain; version=0.0.4; charset=utf-8");
        assert_eq!(
            ct("text/plain;version=0.0.4;escaping=allow-utf-8"),
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert_eq!(
            ct("application/openmetrics-text; version=1.0.0"),
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"
        );
        assert_eq!(
            ct("application/openmetrics-text"),
            "application/openmetrics-text; version=0.0.1; charset=utf-8; escaping=underscores"
        );
        // Prometheus 3's default scrape protocols.
        assert_eq!(
            ct(
                "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
            ),
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8"
        );
        // A scheme named on a higher range carries over; an unknown one is ignored.
        assert_eq!(
            ct(
                "text/plain;version=9;escaping=dots, application/openmetrics-text;version=0.0.1;escaping=nonsense;q=0.5"
            ),
            "application/openmetrics-text; version=0.0.1; charset=utf-8; escaping=dots"
        );
    }
}
