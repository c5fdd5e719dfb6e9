//! Allocator settings applied before the async runtime starts (see `super::start`).

/// Freed memory above this size goes back to the kernel at once (glibc's `M_MMAP_THRESHOLD`
/// and `M_TRIM_THRESHOLD`). glibc's own thresholds start at 128 KiB but rise, up to 32 MiB and
/// 64 MiB, each time a large block is freed: after a relist or a burst of requests has freed
/// its response bodies, the heap then keeps tens of MiB it will not use again. Fixed values
/// keep the thresholds where they start. Measured on the adapter with hack/bench/adapter.sh
/// (2026-12-05, docs/benchmarks.md): peak RSS under the 32-client load 65.6 → 48.0 MiB with
/// these values given as `GLIBC_TUNABLES`, 48.6 MiB once set here.
const MMAP_THRESHOLD: i32 = 128 * 1024;
const TRIM_THRESHOLD: i32 = 512 * 1024;

/// Caps glibc's malloc at two arenas (its default is 8 per core) unless `MALLOC_ARENA_MAX` says
/// otherwise, and fixes its give-back thresholds ([`MMAP_THRESHOLD`]) unless `GLIBC_TUNABLES`
/// or `MALLOC_MMAP_THRESHOLD_`/`MALLOC_TRIM_THRESHOLD_` set them. Our stores are filled by
/// watch or relist tasks and read by request handlers on other threads; with an arena per
/// thread, memory freed after a burst (initial lists, a relist) stays spread over arenas that
/// never give it back. Measured on ksm with 10,000 pods: peak RSS 129.7 → 119.6 MiB
/// (docs/benchmarks.md), scrape latency unchanged. Elsewhere than Linux/glibc it does nothing.
///
/// # Safety
/// Call it before the process spawns any thread: arenas already handed to running threads are
/// not re-balanced, and glibc documents `mallopt` for use at start-up. `super::start` is the
/// one caller.
pub(super) unsafe fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let unset = |name: &str| std::env::var_os(name).is_none();
        // SAFETY: mallopt only sets allocator parameters; the caller guarantees start-up.
        unsafe {
            if unset("MALLOC_ARENA_MAX") {
                libc::mallopt(libc::M_ARENA_MAX, 2);
            }
            if unset("GLIBC_TUNABLES")
                && unset("MALLOC_MMAP_THRESHOLD_")
                && unset("MALLOC_TRIM_THRESHOLD_")
            {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
            }
        }
    }
}
