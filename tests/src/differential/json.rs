//! JSON answers in a form both sides' encoders agree on: keys sorted, the times of the answer
//! dropped, lists of objects sorted (they are sets in the APIs compared).

use serde_json::Value;

/// `text` re-encoded with sorted keys, or as it is when it is not JSON.
pub fn canonical(text: &str) -> String {
    serde_json::from_str::<Value>(text).map_or_else(|_| text.to_owned(), |v| v.to_string())
}

/// Drops the keys that carry the time of the answer (`timestamp`, `creationTimestamp`),
/// recursively, and sorts lists whose items are all objects; lists of strings (table cells,
/// paths) keep their order.
pub fn drop_times(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("timestamp");
            map.remove("creationTimestamp");
            map.values_mut().for_each(drop_times);
        }
        Value::Array(items) => {
            items.iter_mut().for_each(drop_times);
            if items.iter().all(Value::is_object) {
                items.sort_by_cached_key(|x| x.to_string());
            }
        }
        _ => {}
    }
}

/// Drops `keys` wherever they appear.
pub fn drop_keys(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(map) => {
            for k in keys {
                map.remove(*k);
            }
            map.values_mut().for_each(|x| drop_keys(x, keys));
        }
        Value::Array(items) => items.iter_mut().for_each(|x| drop_keys(x, keys)),
        _ => {}
    }
}

/// A body for comparison: JSON pretty-printed without its times, anything else as text.
pub fn normalise(body: &[u8], media_type: &str) -> String {
    if media_type.contains("json")
        && let Ok(mut v) = serde_json::from_slice::<Value>(body)
    {
        drop_times(&mut v);
        return serde_json::to_string_pretty(&v).unwrap_or_default();
    }
    String::from_utf8_lossy(body).into_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_sorts_keys_and_keeps_non_json() {
        assert_eq!(canonical(r#"{"b":1,"a":2}"#), r#"{"a":2,"b":1}"#);
        assert_eq!(canonical("not json"), "not json");
    }

    #[test]
    fn times_go_and_object_lists_sort() {
        let mut v = json!({"items": [{"n": 2, "timestamp": "t"}, {"n": 1}], "cells": ["b", "a"]});
        drop_times(&mut v);
        assert_eq!(
            v,
            json!({"items": [{"n": 1}, {"n": 2}], "cells": ["b", "a"]})
        );
    }
}
