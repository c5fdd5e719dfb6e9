//! Allocator settings applied before the async runtime starts (see `super::start`).

/// Caps glibc's malloc at two arenas (its default is 8 per core) unless `MALLOC_ARENA_MAX` says
/// otherwise. Our stores are filled by watch or relist tasks and read by request handlers on
/// other threads; with an arena per thread, memory freed after a burst (initial lists, a relist)
/// stays spread over arenas that never give it back. Measured on ksm with 10,000 pods: peak RSS
/// 129.7 → 119.6 MiB (docs/benchmarks.md), scrape latency unchanged. Elsewhere than
/// Linux/glibc it does nothing.
///
/// # Safety
/// Call it before the process spawns any thread: arenas already handed to running threads are
/// not re-balanced, and glibc documents `mallopt` for use at start-up. `super::start` is the
/// one caller.
pub(super) unsafe fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; the caller guarantees start-up.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}
