//! How much memory the machine can still give: the check every large allocation makes before
//! it reserves anything (`storage::alloc`).
//!
//! Linux hands out address space, not memory: with the default overcommit a reservation of
//! 24 GB on a 24 GiB machine succeeds, and the process is killed by the OOM killer when it
//! writes the pages. A `try_` constructor would then abort instead of returning its error.
//! So an allocation of at least [`PROBE_BYTES`] first reads what is available *now*
//! ([`available_memory`]) and is refused with [`Error::TooLarge`](crate::Error::TooLarge) when
//! it would not fit; operations that build several large arrays (the three of a Csr result)
//! check their sum before the first.
//!
//! The reading costs a few file reads (about 20 µs), against at least 60 ms to write
//! [`PROBE_BYTES`], so smaller allocations skip it. It is an estimate of the moment: memory
//! another process takes afterwards is not foreseen.

use std::path::Path;

/// Allocations of at least this many bytes (256 MiB) are checked against
/// [`available_memory`] first.
pub const PROBE_BYTES: usize = 256 << 20;

/// The bytes this process can still allocate and write, as far as the system says: Linux's
/// `MemAvailable` plus free swap from `/proc/meminfo`, lowered by the room left under the
/// memory limits of this process's control groups (v1 or v2, each ancestor included; page
/// cache that can be dropped counts as room) and under its own address-space and data limits
/// (`RLIMIT_AS`, `RLIMIT_DATA`: what `ulimit -v` and batch schedulers set, where an allocation
/// past the limit fails and Rust's infallible allocations abort). `None` where none of this can
/// be read (outside Linux).
///
/// ```
/// if let Some(bytes) = polymat::engine::available_memory() {
///     assert!(bytes > 0);
/// }
/// ```
pub fn available_memory() -> Option<u64> {
    #[cfg(test)]
    if let Some(bytes) = TEST_AVAILABLE.with(std::cell::Cell::get) {
        return Some(bytes);
    }
    let system = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| meminfo_available(&t));
    let groups = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| cgroup_room(&t, Path::new("/sys/fs/cgroup")));
    let limits = rlimit_room();
    [system, groups, limits].into_iter().flatten().min()
}

/// The room under this process's `RLIMIT_AS` and `RLIMIT_DATA`: each limit less what the
/// process already has of it (its virtual size for the first, its data segment for the
/// second, from `/proc/self/status`). `None` when neither limit is set.
fn rlimit_room() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string("/proc/self/status").ok();
        let field = |name: &str| status.as_deref().and_then(|t| meminfo_field(t, name));
        let room = |resource, used: Option<u64>| -> Option<u64> {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `getrlimit` writes the limit into the struct we pass, nothing else.
            let ok = unsafe { libc::getrlimit(resource, &mut lim) } == 0;
            // `rlim_t` is 64-bit on the Linux targets built today but not by definition.
            #[allow(clippy::unnecessary_cast)]
            (ok && lim.rlim_cur != libc::RLIM_INFINITY)
                .then(|| (lim.rlim_cur as u64).saturating_sub(used.unwrap_or(0)))
        };
        let a = room(libc::RLIMIT_AS, field("VmSize:"));
        let d = room(libc::RLIMIT_DATA, field("VmData:"));
        [a, d].into_iter().flatten().min()
    }
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(test)]
thread_local! {
    /// What [`available_memory`] says on this thread inside [`with_available`].
    static TEST_AVAILABLE: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with [`available_memory`] giving `bytes` on this thread (unit tests of the checks
/// against it; other threads, and so other tests, read the system as before).
#[cfg(test)]
pub(crate) fn with_available<R>(bytes: u64, f: impl FnOnce() -> R) -> R {
    let before = TEST_AVAILABLE.with(|c| c.replace(Some(bytes)));
    let r = f();
    TEST_AVAILABLE.with(|c| c.set(before));
    r
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
pub(crate) fn total_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_field(&text, "MemTotal:")
}

/// A `/proc/meminfo` field in bytes (the file gives kB).
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024))
}

/// `MemAvailable` + `SwapFree` (no swap line: none).
fn meminfo_available(text: &str) -> Option<u64> {
    let available = meminfo_field(text, "MemAvailable:")?;
    Some(available.saturating_add(meminfo_field(text, "SwapFree:").unwrap_or(0)))
}

/// The least room under any memory limit on the way from this process's control group to the
/// root, for v1 (`memory` controller, `memory.limit_in_bytes`) and v2 (`memory.max`);
/// `None` when no limit is set or readable. `self_cgroup` is `/proc/self/cgroup`.
fn cgroup_room(self_cgroup: &str, root: &Path) -> Option<u64> {
    let mut room: Option<u64> = None;
    for line in self_cgroup.lines() {
        let mut parts = line.splitn(3, ':').skip(1);
        let (Some(controllers), Some(path)) = (parts.next(), parts.next()) else {
            continue;
        };
        let path = path.trim_start_matches('/');
        let found = if controllers.split(',').any(|c| c == "memory") {
            walk_up(&root.join("memory"), path, &V1)
        } else if controllers.is_empty() {
            walk_up(root, path, &V2).or_else(|| walk_up(&root.join("unified"), path, &V2))
        } else {
            None
        };
        if let Some(r) = found {
            room = Some(room.map_or(r, |old| old.min(r)));
        }
    }
    room
}

/// The files of one cgroup version.
struct Files {
    limit: &'static str,
    usage: &'static str,
    /// The `memory.stat` field of page cache the kernel drops before it kills.
    inactive_file: &'static str,
}

const V1: Files = Files {
    limit: "memory.limit_in_bytes",
    usage: "memory.usage_in_bytes",
    inactive_file: "total_inactive_file",
};

const V2: Files = Files {
    limit: "memory.max",
    usage: "memory.current",
    inactive_file: "inactive_file",
};

/// The least room of the groups from `mount/path` up to `mount`.
fn walk_up(mount: &Path, path: &str, files: &Files) -> Option<u64> {
    let mut dir = mount.join(path);
    let mut room: Option<u64> = None;
    loop {
        if let Some(r) = group_room(&dir, files) {
            room = Some(room.map_or(r, |old| old.min(r)));
        }
        if dir.as_path() == mount || !dir.pop() || !dir.starts_with(mount) {
            return room;
        }
    }
}

/// Limit − (usage − inactive file cache) of one group; `None` without a limit (v2's `max`,
/// v1's near-2⁶³ "unlimited") or files.
fn group_room(dir: &Path, files: &Files) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let limit = read(files.limit)?.trim().parse::<u64>().ok()?;
    if limit >= 1 << 62 {
        return None;
    }
    let usage = read(files.usage)?.trim().parse::<u64>().ok()?;
    let cache = read("memory.stat")
        .and_then(|s| stat_field(&s, files.inactive_file))
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(cache)))
}

/// A `memory.stat` field (`name value` lines).
fn stat_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_adds_free_swap_to_what_is_available() {
        let text = "MemTotal:       24683656 kB\nMemAvailable:   1000 kB\nSwapFree:  24 kB\n";
        assert_eq!(meminfo_available(text), Some(1024 * 1024));
        assert_eq!(meminfo_field(text, "MemTotal:"), Some(24683656 * 1024));
        assert_eq!(meminfo_available("MemAvailable: 2 kB\n"), Some(2048));
        assert_eq!(meminfo_available("MemTotal: 2 kB\n"), None);
        assert_eq!(meminfo_available("MemAvailable: lots\n"), None);
    }

    #[test]
    fn cgroup_limits_are_read_up_to_the_root() {
        let root = std::env::temp_dir().join(format!("polymat-cgroup-{}", std::process::id()));
        let leaf = root.join("memory/a/b");
        std::fs::create_dir_all(&leaf).unwrap();
        let write = |dir: &Path, name: &str, v: &str| std::fs::write(dir.join(name), v).unwrap();
        // The leaf is unlimited; its parent allows 1000 with 700 used, 100 of it dropable cache.
        write(&leaf, "memory.limit_in_bytes", "9223372036854771712\n");
        write(&leaf, "memory.usage_in_bytes", "500\n");
        let parent = root.join("memory/a");
        write(&parent, "memory.limit_in_bytes", "1000\n");
        write(&parent, "memory.usage_in_bytes", "700\n");
        write(
            &parent,
            "memory.stat",
            "cache 300\ntotal_inactive_file 100\n",
        );
        let v1 = "4:memory:/a/b\n3:cpu:/\n";
        assert_eq!(cgroup_room(v1, &root), Some(400));
        // v2: the group's own limit, below its parent's.
        let g = root.join("x/y");
        std::fs::create_dir_all(&g).unwrap();
        write(&root.join("x"), "memory.max", "max\n");
        write(&g, "memory.max", "4096\n");
        write(&g, "memory.current", "5000\n");
        assert_eq!(cgroup_room("0::/x/y\n", &root), Some(0));
        // No limit anywhere, or nothing readable: no answer.
        assert_eq!(cgroup_room("0::/nowhere\n", &root), None);
        assert_eq!(cgroup_room("garbage", &root), None);
        assert_eq!(cgroup_room("garbage\n4:memory:/a/b\n", &root), Some(400));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn this_machine_reports_something_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(available_memory().is_some_and(|b| b > 0));
            assert!(total_memory().is_some_and(|b| b > 0));
        }
    }
}
