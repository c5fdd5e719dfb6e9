//! Per-resource store of pre-rendered metric bytes.
//!
//! kube-state-metrics' design, kept because it is what makes scrapes cheap: each object's
//! lines are rendered once when the object changes, and a scrape only copies bytes. The
//! lock is held for a map insert on the watch side and, on the scrape side, only while
//! the objects' (reference-counted) lines are listed: a scrape then writes them out without
//! the lock, a piece at a time, so it never holds a second copy of the whole store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use ferrocrane_core::exposition::Format;

use crate::families::{FamilySpec, ResourceFamilies};

mod custom;
mod serving;

pub use custom::CustomResourceStores;
pub use serving::{Serving, SharedServing, scrape_stores};

/// The HELP/TYPE lines of one family, pre-rendered for both formats.
#[derive(Debug, Clone)]
struct Header {
    text: Box<[u8]>,
    openmetrics: Box<[u8]>,
}

/// One object's rendered lines for every enabled family, in family order, in one
/// reference-counted allocation: the end offset of each family's lines (`u32`, native
/// endian), then the lines. Family `i` is `lines[end(i - 1)..end(i)]`.
///
/// One allocation per object, with the offsets beside the counts and the lines, because a
/// scrape visits every object once per family: with 100,000 pods that is millions of visits
/// to memory far larger than the CPU caches, and each separate allocation on the way (the
/// `Arc`, an offsets array, a bytes array) was one more cache miss per visit.
#[derive(Debug, Clone)]
pub struct Rendered {
    block: Arc<[u8]>,
}

const OFFSET: usize = std::mem::size_of::<u32>();

impl Rendered {
    fn from_lines(lines: Vec<Vec<u8>>) -> Self {
        let header = lines.len() * OFFSET;
        let mut block = Vec::with_capacity(header + lines.iter().map(Vec::len).sum::<usize>());
        let mut end = 0usize;
        for family in &lines {
            end += family.len();
            // An object's lines stay far below 4 GiB (the API server caps objects at ~1.5 MiB);
            // saturating keeps a lie out of the offsets, and `family` then returns None.
            block.extend_from_slice(&u32::try_from(end).unwrap_or(u32::MAX).to_ne_bytes());
        }
        for family in &lines {
            block.extend_from_slice(family);
        }
        Self {
            block: Arc::from(block),
        }
    }

    /// The end offset of the `i`th family's lines within the lines part.
    fn end(&self, families: usize, i: usize) -> Option<usize> {
        if i >= families {
            return None;
        }
        let at = i * OFFSET;
        let raw: [u8; OFFSET] = self.block.get(at..at + OFFSET)?.try_into().ok()?;
        Some(u32::from_ne_bytes(raw) as usize)
    }

    /// The lines of the `i`th of `families` enabled families (empty when it has no sample
    /// for this object).
    fn family(&self, families: usize, i: usize) -> Option<&[u8]> {
        let start = match i {
            0 => 0,
            _ => self.end(families, i - 1)?,
        };
        let end = self.end(families, i)?;
        let lines = families * OFFSET;
        self.block.get(lines + start..lines + end)
    }

    /// Whether the `i`th family has lines for this object.
    fn has_lines(&self, families: usize, i: usize) -> bool {
        self.family(families, i)
            .is_some_and(|lines| !lines.is_empty())
    }

    /// Adds this object's families to `with_lines` (or, with `add` false, takes them out).
    fn count_into(&self, with_lines: &mut [usize], add: bool) {
        let families = with_lines.len();
        for (i, count) in with_lines.iter_mut().enumerate() {
            if self.has_lines(families, i) {
                *count = if add {
                    count.saturating_add(1)
                } else {
                    count.saturating_sub(1)
                };
            }
        }
    }

    /// Bytes of metric lines (the offsets left out).
    fn lines_len(&self, families: usize) -> usize {
        self.block.len().saturating_sub(families * OFFSET)
    }

    /// Asks the CPU to start loading the memory [`Self::family`] will read for family `i`
    /// (and, when `i` is 0 or the offsets are not loaded yet, the offsets), so the copy
    /// that comes a few objects later does not wait on it.
    fn prefetch(&self, families: usize, i: usize) {
        prefetch(self.block.as_ptr().wrapping_add(i * OFFSET));
        let start = i.checked_sub(1).map_or(Some(0), |p| self.end(families, p));
        if let (Some(start), Some(end)) = (start, self.end(families, i)) {
            let lines = self.block.as_ptr().wrapping_add(families * OFFSET);
            for at in (start..end.min(start + 512)).step_by(64) {
                prefetch(lines.wrapping_add(at));
            }
        }
    }
}

/// A hint, never a read: the address need not be valid.
#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never faults nor
        // reads into the program, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Shared, so a scrape in progress keeps the version it listed while the watch replaces it.
pub type RenderedObject = Rendered;

/// How many objects ahead of the copy a scrape asks for memory: the offsets of the object
/// `2 × AHEAD` on, the lines of the object `AHEAD` on (whose offsets were asked for
/// earlier). About one DRAM latency's worth of copying small slices.
const AHEAD: usize = 8;

#[derive(Debug)]
pub struct MetricsStore {
    resource: &'static str,
    headers: Vec<Header>,
    objects: RwLock<Objects>,
}

#[derive(Debug)]
struct Objects {
    by_uid: HashMap<String, RenderedObject>,
    /// Per enabled family, how many objects have lines for it. A scrape skips the families
    /// no object has lines for (most of the pod families of a cluster of Pending pods, for
    /// one) instead of visiting every object for each of them, which at 100,000 objects
    /// is a cache miss per object and family for nothing.
    with_lines: Vec<usize>,
}

impl MetricsStore {
    /// A store for the `enabled` families (indexes into `families.families`).
    pub fn new<T>(families: &ResourceFamilies<T>, enabled: &[usize]) -> Self {
        let headers: Vec<Header> = enabled
            .iter()
            .map(|&i| render_header(&families.families[i]))
            .collect();
        Self {
            resource: families.resource,
            objects: RwLock::new(Objects {
                by_uid: HashMap::new(),
                with_lines: vec![0; headers.len()],
            }),
            headers,
        }
    }

    pub fn resource(&self) -> &'static str {
        self.resource
    }

    /// Adds or replaces an object's lines. `lines` must hold one entry per enabled family.
    pub fn upsert(&self, uid: &str, lines: Vec<Vec<u8>>) {
        debug_assert_eq!(lines.len(), self.headers.len());
        let rendered = Rendered::from_lines(lines);
        let mut guard = self.objects.write().unwrap_or_else(|e| e.into_inner());
        let Objects { by_uid, with_lines } = &mut *guard;
        rendered.count_into(with_lines, true);
        match by_uid.get_mut(uid) {
            Some(slot) => {
                slot.count_into(with_lines, false);
                *slot = rendered;
            }
            None => {
                by_uid.insert(uid.to_string(), rendered);
            }
        }
    }

    pub fn remove(&self, uid: &str) {
        let mut guard = self.objects.write().unwrap_or_else(|e| e.into_inner());
        let Objects { by_uid, with_lines } = &mut *guard;
        if let Some(gone) = by_uid.remove(uid) {
            gone.count_into(with_lines, false);
        }
    }

    /// After a relist: drops every object the API server no longer has.
    pub fn retain(&self, live: &HashSet<String>) {
        let mut guard = self.objects.write().unwrap_or_else(|e| e.into_inner());
        let Objects { by_uid, with_lines } = &mut *guard;
        by_uid.retain(|uid, rendered| {
            let keep = live.contains(uid);
            if !keep {
                rendered.count_into(with_lines, false);
            }
            keep
        });
    }

    pub fn len(&self) -> usize {
        self.objects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_uid
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends every family: its header once (only when the store holds objects, even if
    /// none of them has a sample for it — kube-state-metrics does the same), then each
    /// object's lines for it.
    pub fn write_all(&self, out: &mut Vec<u8>, format: Format) {
        self.write_chunked(out, format, usize::MAX, &mut |_| true);
    }

    /// [`Self::write_all`] a piece at a time: whenever `buf` holds `chunk` bytes or more,
    /// `emit` takes them (and leaves `buf` empty); returns false as soon as `emit` does
    /// (the client went away). The lock is held only to list the objects.
    pub fn write_chunked(
        &self,
        buf: &mut Vec<u8>,
        format: Format,
        chunk: usize,
        emit: &mut dyn FnMut(&mut Vec<u8>) -> bool,
    ) -> bool {
        let (objects, with_lines): (Vec<RenderedObject>, Vec<usize>) = {
            let listed = self.objects.read().unwrap_or_else(|e| e.into_inner());
            (
                listed.by_uid.values().cloned().collect(),
                listed.with_lines.clone(),
            )
        };
        if objects.is_empty() {
            return true;
        }
        let families = self.headers.len();
        for (i, header) in self.headers.iter().enumerate() {
            buf.extend_from_slice(match format {
                Format::Text004 => &header.text,
                Format::OpenMetrics => &header.openmetrics,
            });
            if with_lines.get(i) == Some(&0) {
                continue;
            }
            for (k, lines) in objects.iter().enumerate() {
                if let Some(far) = objects.get(k + 2 * AHEAD) {
                    prefetch(far.block.as_ptr().wrapping_add(i * OFFSET));
                }
                if let Some(near) = objects.get(k + AHEAD) {
                    near.prefetch(families, i);
                }
                if let Some(bytes) = lines.family(families, i) {
                    buf.extend_from_slice(bytes);
                    if buf.len() >= chunk && !emit(buf) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// A cheap estimate of the bytes a scrape of this store writes, to size buffers.
    pub fn size_hint(&self) -> usize {
        let objects = &self
            .objects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_uid;
        let per_object = objects
            .values()
            .next()
            .map(|o| o.lines_len(self.headers.len()))
            .unwrap_or(0);
        per_object * objects.len() + self.headers.len() * 128
    }
}

fn render_header<T>(family: &FamilySpec<T>) -> Header {
    let mut text = Vec::new();
    family.write_header(&mut text, Format::Text004);
    let mut openmetrics = Vec::new();
    family.write_header(&mut openmetrics, Format::OpenMetrics);
    Header {
        text: text.into_boxed_slice(),
        openmetrics: openmetrics.into_boxed_slice(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::{FamilyContext, configmap};
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(name: &str, uid: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "namespace": "ns", "uid": uid, "resourceVersion": "7" }
        }))
        .expect("configmap")
    }

    fn store_with(objs: &[ConfigMap]) -> (MetricsStore, Vec<usize>) {
        let families = configmap::families();
        let enabled: Vec<usize> = (0..families.families.len()).collect();
        let store = MetricsStore::new(&families, &enabled);
        for o in objs {
            let uid = o.metadata.uid.clone().unwrap_or_default();
            store.upsert(
                &uid,
                families.render(o, &FamilyContext::default(), &enabled),
            );
        }
        (store, enabled)
    }

    #[test]
    fn empty_store_writes_nothing() {
        let (store, _) = store_with(&[]);
        let mut out = Vec::new();
        store.write_all(&mut out, Format::Text004);
        assert!(out.is_empty());
    }

    #[test]
    fn headers_once_per_family_then_each_object() {
        let (store, _) = store_with(&[cm("a", "u1"), cm("b", "u2")]);
        let mut out = Vec::new();
        store.write_all(&mut out, Format::Text004);
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(text.matches("# HELP kube_configmap_info ").count(), 1);
        assert_eq!(
            text.matches("# HELP kube_configmap_labels ").count(),
            1,
            "header without samples still written"
        );
        assert!(text.contains("kube_configmap_info{namespace=\"ns\",configmap=\"a\"} 1\n"));
        assert!(text.contains("kube_configmap_info{namespace=\"ns\",configmap=\"b\"} 1\n"));
    }

    #[test]
    fn update_replaces_and_delete_removes() {
        let (store, enabled) = store_with(&[cm("a", "u1")]);
        let families = configmap::families();
        let mut renamed = cm("a2", "u1");
        renamed.metadata.resource_version = Some("8".into());
        store.upsert(
            "u1",
            families.render(&renamed, &FamilyContext::default(), &enabled),
        );
        let mut out = Vec::new();
        store.write_all(&mut out, Format::Text004);
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("configmap=\"a2\"") && !text.contains("configmap=\"a\""));
        store.remove("u1");
        assert!(store.is_empty());
    }

    #[test]
    fn chunked_writes_the_same_bytes_in_pieces() {
        let objs: Vec<ConfigMap> = (0..50)
            .map(|i| cm(&format!("cm-{i}"), &format!("u{i}")))
            .collect();
        let (store, _) = store_with(&objs);
        let mut whole = Vec::new();
        store.write_all(&mut whole, Format::OpenMetrics);
        let (mut pieces, mut buf, mut calls) = (Vec::new(), Vec::new(), 0);
        assert!(
            store.write_chunked(&mut buf, Format::OpenMetrics, 100, &mut |b| {
                calls += 1;
                pieces.append(b);
                true
            })
        );
        pieces.append(&mut buf);
        assert_eq!(pieces, whole);
        assert!(calls > 10, "{calls} pieces");
        // A client gone: writing stops at the first refused piece.
        let mut buf = Vec::new();
        assert!(!store.write_chunked(&mut buf, Format::Text004, 100, &mut |_| false));
    }

    #[test]
    fn rendered_keeps_each_family_apart() {
        let r = Rendered::from_lines(vec![b"a 1\n".to_vec(), Vec::new(), b"c 3\nc 4\n".to_vec()]);
        assert_eq!(r.family(3, 0), Some(&b"a 1\n"[..]));
        assert_eq!(r.family(3, 1), Some(&b""[..]));
        assert_eq!(r.family(3, 2), Some(&b"c 3\nc 4\n"[..]));
        assert_eq!(r.family(3, 3), None);
        assert_eq!(r.lines_len(3), 12);
        // Prefetching is a hint: past the end or on an empty object it reads nothing.
        r.prefetch(3, 7);
        let none = Rendered::from_lines(Vec::new());
        assert_eq!(none.family(0, 0), None);
        none.prefetch(0, 0);
    }

    #[test]
    fn families_no_object_has_lines_for_keep_their_header_and_the_counts_follow_changes() {
        let (store, enabled) = store_with(&[]);
        let n = enabled.len();
        assert!(n >= 3, "{n} configmap families");
        let counts = |s: &MetricsStore| s.objects.read().expect("lock").with_lines.clone();
        let lines = |with: &[usize]| -> Vec<Vec<u8>> {
            (0..n)
                .map(|i| match with.contains(&i) {
                    true => format!("f{i} 1\n").into_bytes(),
                    false => Vec::new(),
                })
                .collect()
        };
        store.upsert("u1", lines(&[0, 2]));
        store.upsert("u2", lines(&[2]));
        assert_eq!(&counts(&store)[..3], [1, 0, 2]);
        store.upsert("u1", lines(&[1]));
        assert_eq!(&counts(&store)[..3], [0, 1, 1]);
        let mut out = Vec::new();
        store.write_all(&mut out, Format::Text004);
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(text.matches("# HELP ").count(), n, "{text}");
        assert!(text.contains("f1 1\n") && text.contains("f2 1\n") && !text.contains("f0 1"));
        store.remove("u1");
        assert_eq!(&counts(&store)[..3], [0, 0, 1]);
        store.retain(&HashSet::new());
        assert!(counts(&store).iter().all(|&c| c == 0));
        store.remove("never-there");
        assert!(counts(&store).iter().all(|&c| c == 0));
    }

    #[test]
    fn retain_drops_objects_gone_after_a_relist() {
        let (store, _) = store_with(&[cm("a", "u1"), cm("b", "u2"), cm("c", "u3")]);
        store.retain(&["u2".to_string()].into_iter().collect());
        assert_eq!(store.len(), 1);
    }
}
