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

use super::Format;

struct MediaRange<'a> {
    ty: &'a str,
    subtype: &'a str,
    version: Option<&'a str>,
    q: f32,
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
            q: 1.0,
        };
        for p in params {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match k.trim() {
                "q" => mr.q = v.trim().parse().unwrap_or(0.0),
                "version" => mr.version = Some(v.trim().trim_matches('"')),
                _ => {}
            }
        }
        out.push(mr);
    }
    out
}

/// Picks the exposition format for a request's `Accept` header (`None` when
/// the header is absent).
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text004;
    };
    let mut ranges = parse_accept(accept);
    ranges.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (a.ty == "*").cmp(&(b.ty == "*")))
            .then_with(|| (a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    for r in ranges {
        // RFC 9110: q=0 means "not acceptable". expfmt ignores that and only
        // sorts such ranges last; we do not offer a format the client refused.
        if r.q <= 0.0 {
            continue;
        }
        let ty = r.ty.to_ascii_lowercase();
        let sub = r.subtype.to_ascii_lowercase();
        if ty == "text" && sub == "plain" && matches!(r.version, None | Some("") | Some("0.0.4")) {
            return Format::Text004;
        }
        if ty == "application"
            && sub == "openmetrics-text"
            && matches!(r.version, None | Some("") | Some("1.0.0") | Some("0.0.1"))
        {
            return Format::OpenMetrics;
        }
    }
    Format::Text004
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::Text004);
        assert_eq!(negotiate(Some("")), Format::Text004);
        assert_eq!(negotiate(Some("*/*")), Format::Text004);
        assert_eq!(negotiate(Some("text/plain")), Format::Text004);
        assert_eq!(
            negotiate(Some("application/openmetrics-text")),
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text; version=2.0.0")),
            Format::Text004
        );
        assert_eq!(
            negotiate(Some(
                "text/plain;version=0.0.4;q=0.9, application/openmetrics-text;q=1"
            )),
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0.2, text/plain;q=0.9")),
            Format::Text004
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0")),
            Format::Text004
        );
        assert_eq!(
            negotiate(Some(
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
            )),
            Format::Text004
        );
        assert_eq!(negotiate(Some("garbage,,;;==")), Format::Text004);
    }
}
