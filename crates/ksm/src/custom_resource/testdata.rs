//! The custom object upstream's registry_factory_test.go runs every case against.

use serde_json::{Value, json};

pub(crate) fn cr() -> Value {
    json!({
        "spec": {
            "replicas": 1,
            "version": "v0.0.0",
            "order": [
                {"id": 1, "value": true},
                {"id": 3, "value": false},
            ],
        },
        "status": {
            "active": {"type-a": 1, "type-b": 3},
            "phase": "foo",
            "sub": {
                "type-a": {"active": 1, "ready": 2},
                "type-b": {"active": 3, "ready": 4},
            },
            "uptime": 43.21,
            "quantity_milli": "250m",
            "quantity_binarySI": "5Gi",
            "percentage": "28%",
            "condition_values": [
                {"name": "a", "value": 45},
                {"name": "b", "value": 66},
            ],
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Provisioned", "status": "False"},
            ],
        },
        "metadata": {
            "name": "foo",
            "labels": {"foo": "bar"},
            "annotations": {"qux": "quxx", "bar": "baz"},
            "percentage": "39%",
            "creationTimestamp": "2022-06-28T00:00:00Z",
        },
    })
}
