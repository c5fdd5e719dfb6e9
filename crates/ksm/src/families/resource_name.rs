//! apimachinery's resource-name validation, as kube-state-metrics applies it to decide which
//! resources are extended ones (`nvidia.com/gpu`) in node and container families.

/// apimachinery's `IsExtendedResourceName`.
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}"))
}

/// apimachinery's `IsQualifiedName`: `[prefix/]name`, prefix a DNS-1123 subdomain.
fn is_qualified_name(value: &str) -> bool {
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => name,
        [prefix, name] => {
            if !is_dns1123_subdomain(prefix) {
                return false;
            }
            name
        }
        _ => return false,
    };
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_resource_names() {
        assert!(is_extended_resource_name("nvidia.com/gpu"));
        assert!(!is_extended_resource_name("kubernetes.io/batch-limit"));
        assert!(!is_extended_resource_name("requests.example.com/x"));
        assert!(!is_extended_resource_name("example.com/Bad_"));
        assert!(!is_extended_resource_name("Example.com/gpu"));
        assert!(!is_extended_resource_name("a/b/c"));
        assert!(!is_extended_resource_name("/gpu"));
        assert!(!is_extended_resource_name("cpu"));
    }
}
