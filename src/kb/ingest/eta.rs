//! The time an ingest has left, from the bytes of files done so far: files differ in
//! size by orders of magnitude, so a count of files says little about the time left.

use std::time::{Duration, Instant};

pub struct Eta {
    start: Instant,
    total_bytes: u64,
    done_bytes: u64,
}

/// No estimate before this much work: the first files' rate says little.
const SETTLE: Duration = Duration::from_secs(3);

impl Eta {
    pub fn new(total_bytes: u64) -> Self {
        Eta {
            start: Instant::now(),
            total_bytes,
            done_bytes: 0,
        }
    }

    /// Records a file of `bytes` done; the seconds left at the rate so far, once settled.
    pub fn file_done(&mut self, bytes: u64) -> Option<f64> {
        self.done_bytes = (self.done_bytes + bytes).min(self.total_bytes);
        self.left(self.start.elapsed())
    }

    fn left(&self, elapsed: Duration) -> Option<f64> {
        if elapsed < SETTLE || self.done_bytes == 0 {
            return None;
        }
        let rate = self.done_bytes as f64 / elapsed.as_secs_f64();
        Some((self.total_bytes - self.done_bytes) as f64 / rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_follows_bytes_not_files() {
        let mut eta = Eta::new(1000);
        eta.done_bytes = 250;
        assert_eq!(eta.left(Duration::from_secs(1)), None);
        // A quarter of the bytes in 10 s: 30 s left.
        assert_eq!(eta.left(Duration::from_secs(10)), Some(30.0));
        eta.done_bytes = 1000;
        assert_eq!(eta.left(Duration::from_secs(40)), Some(0.0));
    }
}
