//! The worker numbers of the flow: which of the N workers a sync runs on.

/// Which of the N workers a sync runs on. kube's scheduler runs at most N
/// syncs at once but has no workers of its own; a sync takes the lowest
/// free number for as long as it runs, as one of Go's N worker goroutines
/// would.
#[derive(Debug, Default)]
pub(super) struct Workers(Vec<bool>);

impl Workers {
    /// The lowest idle worker, busy until [`Workers::free`].
    pub(super) fn take(&mut self) -> usize {
        let index = self.0.iter().position(|b| !b).unwrap_or_else(|| {
            self.0.push(false);
            self.0.len() - 1
        });
        self.0[index] = true;
        index
    }

    /// Worker `index` is idle again.
    pub(super) fn free(&mut self, index: usize) {
        if let Some(busy) = self.0.get_mut(index) {
            *busy = false;
        }
    }
}
