//! `/api/v1/series` read as discovery needs it: distinct shapes (a name and its label names),
//! decoded as the body is read instead of as label maps.

use serde::Deserialize;

use super::response::{DecodeError, Decoded, decode};

/// What discovery needs of a series: its `__name__` and the names of its other labels, sorted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesShape {
    pub name: String,
    pub label_names: Vec<String>,
}

/// The distinct shapes of a `/api/v1/series` answer, and how many series it listed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesShapes {
    pub shapes: Vec<SeriesShape>,
    pub series: usize,
}

/// Decodes the body of `/api/v1/series` into distinct [`SeriesShape`]s without ever holding
/// every label set: 100,000 series of 500 metrics are a few hundred shapes, where the full
/// label sets cost ~100 MB at once (what prometheus-adapter keeps, its issue #221).
pub fn decode_series_shapes(body: &[u8]) -> Result<Decoded<SeriesShapes>, DecodeError> {
    decode(body)
}

/// A string borrowed from the body when it has no escapes, so label values that are only
/// checked and dropped cost no allocation.
struct Text<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A label value that must be a string and is then dropped: read from a stream, keeping it
/// would cost an allocation per label.
struct AnyString;

impl<'de> Deserialize<'de> for AnyString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = AnyString;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(AnyString)
            }
        }
        d.deserialize_str(V)
    }
}

/// One label set, reduced to its shape as it is read.
struct ShapeOf(SeriesShape);

impl<'de> Deserialize<'de> for ShapeOf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ShapeOf;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a label set (an object of strings)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ShapeOf, A::Error> {
                let mut shape = SeriesShape {
                    name: String::new(),
                    label_names: Vec::new(),
                };
                while let Some(Text(key)) = map.next_key::<Text>()? {
                    if key == "__name__" {
                        shape.name = map.next_value::<String>()?;
                    } else {
                        map.next_value::<AnyString>()?;
                        shape.label_names.push(key.into_owned());
                    }
                }
                shape.label_names.sort_unstable();
                Ok(ShapeOf(shape))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for SeriesShapes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = SeriesShapes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of label sets")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<SeriesShapes, A::Error> {
                let mut distinct = std::collections::BTreeSet::new();
                let mut series = 0;
                while let Some(ShapeOf(shape)) = seq.next_element()? {
                    series += 1;
                    distinct.insert(shape);
                }
                Ok(SeriesShapes {
                    shapes: distinct.into_iter().collect(),
                    series,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_shapes_keep_names_and_label_names_once() {
        let body = br#"{"status":"success","data":[
            {"__name__":"up","job":"x","instance":"a"},
            {"instance":"b","__name__":"up","job":"y"},
            {"__name__":"up","job":"z"},
            {"__name__":"http_requests_total","pod":"p\u00e9","namespace":"n"}]}"#;
        let d = decode_series_shapes(body).expect("decodes");
        assert_eq!(d.data.series, 4);
        let shapes: Vec<(&str, Vec<&str>)> = d
            .data
            .shapes
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.label_names.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shapes,
            vec![
                ("http_requests_total", vec!["namespace", "pod"]),
                ("up", vec!["instance", "job"]),
                ("up", vec!["job"]),
            ]
        );
        // Values must still be strings, as in decode_series.
        assert!(decode_series_shapes(br#"{"status":"success","data":[{"a":1}]}"#).is_err());
        assert!(decode_series_shapes(br#"{"status":"success","data":{"a":"b"}}"#).is_err());
        assert_eq!(
            decode_series_shapes(br#"{"status":"success","data":[]}"#)
                .expect("empty")
                .data,
            SeriesShapes::default()
        );
    }
}
