//! Memory of plugin runtimes. Every QuickJS allocation goes through [`BudgetAllocator`], which
//! enforces two ceilings: the plugin's own limit, and one process-wide budget shared by every
//! plugin runtime (so sixty plugins cannot take gigabytes between them). A refused allocation
//! is recorded, so an out-of-memory failure is classified as such even when the engine could
//! not allocate the error object that would have said so.

use rquickjs::allocator::{Allocator, RustAllocator};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The process-wide budget of all plugin runtimes together.
#[derive(Debug)]
pub struct SharedBudget {
    pub limit: usize,
    used: AtomicUsize,
}

impl SharedBudget {
    pub fn new(limit: usize) -> Arc<SharedBudget> {
        Arc::new(SharedBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Bytes all runtimes hold now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// The default process-wide budget: 1 GiB for all plugin runtimes together.
pub fn process_budget() -> Arc<SharedBudget> {
    static BUDGET: std::sync::OnceLock<Arc<SharedBudget>> = std::sync::OnceLock::new();
    Arc::clone(BUDGET.get_or_init(|| SharedBudget::new(1024 * 1024 * 1024)))
}

/// One runtime's account.
#[derive(Debug)]
pub struct RuntimeMemory {
    limit: usize,
    used: AtomicUsize,
    refused: AtomicBool,
    shared: Arc<SharedBudget>,
}

impl RuntimeMemory {
    pub fn new(limit: usize, shared: Arc<SharedBudget>) -> Arc<RuntimeMemory> {
        Arc::new(RuntimeMemory {
            limit,
            used: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
            shared,
        })
    }

    /// Whether an allocation was refused since the last call, and forgets it.
    pub fn take_refused(&self) -> bool {
        self.refused.swap(false, Ordering::Relaxed)
    }

    /// Bytes this runtime holds now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn reserve(&self, bytes: usize) -> bool {
        let mine = self
            .used
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        let all = self
            .shared
            .used
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        if mine > self.limit || all > self.shared.limit {
            self.release(bytes);
            self.refused.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        self.shared.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for RuntimeMemory {
    fn drop(&mut self) {
        // Whatever the runtime still held is returned to the shared budget.
        self.shared
            .used
            .fetch_sub(self.used.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// The size the inner allocator really takes for a request (it rounds to 8 bytes).
fn rounded(size: usize) -> Option<usize> {
    size.checked_add(7).map(|s| s & !7)
}

/// Rust's allocator, within a runtime's account.
pub struct BudgetAllocator {
    inner: RustAllocator,
    account: Arc<RuntimeMemory>,
}

impl BudgetAllocator {
    pub fn new(account: Arc<RuntimeMemory>) -> BudgetAllocator {
        BudgetAllocator {
            inner: RustAllocator,
            account,
        }
    }
}

// SAFETY: every method delegates to `RustAllocator`, which upholds the trait's contract; this
// wrapper only refuses requests (returning null, which the contract allows) and keeps counts.
#[allow(unsafe_code)]
unsafe impl Allocator for BudgetAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        let Some(bytes) = rounded(size) else {
            return std::ptr::null_mut();
        };
        if !self.account.reserve(bytes) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.alloc(size);
        if ptr.is_null() {
            self.account.release(bytes);
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        // The inner allocator panics on an overflowing product; refuse it here instead.
        let Some(bytes) = count.checked_mul(size).and_then(rounded) else {
            return std::ptr::null_mut();
        };
        if bytes == 0 || !self.account.reserve(bytes) {
            return std::ptr::null_mut();
        }
        let ptr = self.inner.calloc(count, size);
        if ptr.is_null() {
            self.account.release(bytes);
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller guarantees `ptr` came from this allocator.
        let bytes = unsafe { RustAllocator::usable_size(ptr) };
        unsafe { self.inner.dealloc(ptr) };
        self.account.release(bytes);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr` came from this allocator.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        let Some(new) = rounded(new_size) else {
            return std::ptr::null_mut();
        };
        if new > old && !self.account.reserve(new - old) {
            return std::ptr::null_mut();
        }
        let moved = unsafe { self.inner.realloc(ptr, new_size) };
        if moved.is_null() {
            if new > old {
                self.account.release(new - old);
            }
        } else if new < old {
            self.account.release(old - new);
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: forwarded under the same contract.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_budget_refuses_what_no_single_limit_would() {
        let shared = SharedBudget::new(1000);
        let a = RuntimeMemory::new(800, Arc::clone(&shared));
        let b = RuntimeMemory::new(800, Arc::clone(&shared));
        assert!(a.reserve(600));
        assert!(
            !b.reserve(600),
            "together they would pass the shared budget"
        );
        assert!(b.take_refused());
        assert!(!b.take_refused(), "the flag is read once");
        drop(a);
        assert_eq!(shared.used(), 0, "a dropped runtime returns what it held");
        assert!(b.reserve(600));
    }
}
