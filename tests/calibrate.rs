//! `polymat::calibrate::measure_thresholds`, in a process of its own: it changes the thread
//! count and forces the parallel paths while it runs, which would disturb other tests' choices
//! of path (never their results).

use std::time::Duration;

use polymat::Error;
use polymat::calibrate::measure_thresholds;
use polymat::engine::Thresholds;

#[test]
fn thresholds_are_measured_and_settings_restored() {
    let pool = rayon::current_num_threads();
    if pool < 2 {
        // Parallel cannot be measured on one thread: refused.
        let e = measure_thresholds(2, Duration::from_secs(60)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        return;
    }
    polymat::set_threads(3);
    let before = Thresholds::current();
    let t = measure_thresholds(2, Duration::from_secs(120)).unwrap();
    assert_eq!(t.measured_threads, 2);
    // Each value is a size measured (at most 2²¹ entries, 2²⁴ multiply-adds, ±rounding) or
    // twice the largest.
    for v in [t.elementwise, t.transpose, t.csr_rows, t.reduction] {
        assert!((1 << 11..=1 << 22).contains(&v), "{t:?}");
    }
    assert!((1 << 14..=1 << 25).contains(&t.matmul), "{t:?}");
    // The text form reads back.
    assert_eq!(Thresholds::parse(&t.to_string()).unwrap(), t);
    // What was set is back, and the thresholds in force are untouched.
    assert_eq!(polymat::threads(), 3);
    assert_eq!(Thresholds::current(), before);
    // A budget that runs out: an error naming the family, the settings restored all the same.
    let e = measure_thresholds(2, Duration::from_micros(1)).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument { reason, .. } if reason.contains("ran out")),
        "{e}"
    );
    assert_eq!(polymat::threads(), 3);
    // No deadline can be computed from this budget: none is kept. Two at once run one after
    // the other and leave the settings as they were.
    let other = std::thread::spawn(|| measure_thresholds(2, Duration::from_secs(120)));
    assert!(measure_thresholds(2, Duration::MAX).is_ok());
    assert!(other.join().unwrap().is_ok());
    assert_eq!(polymat::threads(), 3);
    polymat::set_threads(0);
}
