//! The sizes of CPU 0's data caches, as Linux reports them
//! (`/sys/devices/system/cpu/cpu0/cache`), for the choices that depend on them: when results
//! stream ([`stream`](super::stream)) and how large a lazy operator's tiles are.

use std::sync::OnceLock;

/// `(level, bytes)` of every data or unified cache of CPU 0, read once (empty where sysfs
/// does not say).
fn levels() -> &'static [(u32, usize)] {
    static LEVELS: OnceLock<Vec<(u32, usize)>> = OnceLock::new();
    LEVELS.get_or_init(read_levels)
}

fn read_levels() -> Vec<(u32, usize)> {
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        let read = |name: &str| std::fs::read_to_string(path.join(name)).ok();
        let Some(level) = read("level").and_then(|l| l.trim().parse::<u32>().ok()) else {
            continue;
        };
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        if let Some(size) = read("size").and_then(|s| parse_size(&s)).filter(|&s| s > 0) {
            out.push((level, size));
        }
    }
    out
}

/// The size in bytes of the highest-level data or unified cache of CPU 0.
pub(crate) fn last_level() -> Option<usize> {
    levels().iter().max_by_key(|(l, _)| *l).map(|&(_, s)| s)
}

/// The size in bytes of CPU 0's second-level cache (private to a core on current x86 and
/// Arm server CPUs).
pub(crate) fn second_level() -> Option<usize> {
    levels().iter().find(|(l, _)| *l == 2).map(|&(_, s)| s)
}

/// A sysfs cache size: `32768K`, `1M`, or plain bytes.
fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, unit) = match t.as_bytes().last()? {
        b'K' | b'k' => (&t[..t.len() - 1], 1usize << 10),
        b'M' | b'm' => (&t[..t.len() - 1], 1 << 20),
        b'G' | b'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_sizes_parse() {
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("x12K"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
    }

    /// The second level, where reported, is below the last (on a CPU with more than two
    /// levels).
    #[test]
    fn levels_are_ordered() {
        if let (Some(l2), Some(last)) = (second_level(), last_level()) {
            assert!(l2 <= last, "{l2} > {last}");
        }
    }
}
