//! Step 4 exercise: the retry delays of a gentler rate limiter (no cluster needed).
//!
//! Per key 100 ms · 2^n up to 2 s; overall 1 retry per second, burst 3.
//!
//!     cargo run --example step4_backoff_table

use std::time::Duration;

use sample_controller::workqueue::{ItemExponentialBackoff, RateLimiter, TokenBucket};

fn main() {
    let limiter = RateLimiter::new(
        ItemExponentialBackoff::new(Duration::from_millis(100), Duration::from_secs(2)),
        TokenBucket::new(1.0, 3),
    );
    // One key failing again and again: the per-key backoff doubles up to its cap,
    // and after the burst of 3 the bucket's one-per-second spacing shows as well.
    for attempt in 1..=7 {
        println!("a fails ({attempt}): retry in {:?}", limiter.when(&"a"));
    }
    limiter.forget(&"a"); // a success: Go's Forget
    println!(
        "after forget, a has {} requeues",
        limiter.num_requeues(&"a")
    );
    // A new key starts at 100 ms per key, but the shared bucket is empty now.
    println!("b fails (1): retry in {:?}", limiter.when(&"b"));
}
