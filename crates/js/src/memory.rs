//! Memory of plugin runtimes. Every QuickJS allocation goes through [`BudgetAllocator`], which
//! enforces two ceilings: the plugin's own limit, and one process-wide budget shared by every
//! plugin runtime (so sixty plugins cannot take gigabytes between them). A refused allocation
//! is recorded, so an out-of-memory failure is classified as such even when the engine could
//! not allocate the error object that would have said so.

use libmimalloc_sys as mi;
/// The process allocator the binaries install (`#[global_allocator]`): the one engines use, so
/// values made by one thread and freed by another cross no allocator boundary.
pub use mimalloc::MiMalloc;
use rquickjs::allocator::Allocator;
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

    /// Charges what a block took beyond its reservation (never refused: a few bytes of rounding).
    fn add(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
        self.shared.used.fetch_add(bytes, Ordering::Relaxed);
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

/// mimalloc, within a runtime's account.
///
/// Why mimalloc and not Rust's allocator over glibc: QuickJS takes its small objects from arenas
/// (512 bytes to 4 KiB: `crates/js/vendor/quickjs-arenas.patch`) it frees as soon as they empty,
/// so each call of a plugin allocates and frees about three arenas on whichever worker thread
/// runs it (glibc consolidated its bins for each), and values made on a worker are freed on
/// another thread. With mimalloc here and as the binaries' allocator, a preview in which every
/// provider runs took 8% less time at 500 plugins and 15% less at 50, a memoized one 44% and
/// 30% less (5 interleaved rounds, 2026-12-02). Its C API also needs no size header, so an arena
/// takes exactly its size class (with a header, 4 KiB + 16 bytes fell into the 5 KiB class).
pub struct BudgetAllocator {
    account: Arc<RuntimeMemory>,
}

impl BudgetAllocator {
    pub fn new(account: Arc<RuntimeMemory>) -> BudgetAllocator {
        // Keeps the constructor below linked into every binary that runs engines.
        #[cfg(target_os = "linux")]
        std::hint::black_box(&COMMIT_ARENAS_ON_DEMAND);
        BudgetAllocator { account }
    }

    /// The account holds `reserved` for a block that really takes `usable`: make it hold that.
    fn settle(&self, reserved: usize, usable: usize) {
        if usable > reserved {
            self.account.add(usable - reserved);
        } else {
            self.account.release(reserved - usable);
        }
    }
}

/// mimalloc's `mi_option_arena_eager_commit` (its position in v3's `mi_option_e`, which keeps
/// retired options' places; `libmimalloc-sys` lists only v2's numbering).
#[cfg(target_os = "linux")]
const ARENA_EAGER_COMMIT: mi::mi_option_t = 4;

/// On Linux mimalloc commits a whole arena (1 GiB reserved) up front by default, and what it
/// frees there then stays resident longer: at 500 plugins, peak RSS 166 MB instead of 149 MB.
/// Committing on demand costs no measurable speed. The option is read when the first arena is
/// reserved, at the process's first allocation, before `main`: hence a constructor.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static COMMIT_ARENAS_ON_DEMAND: extern "C" fn() = {
    extern "C" fn commit_on_demand() {
        // SAFETY: sets one option value; mimalloc reads options lazily and allows setting them
        // before or after its own initialisation.
        unsafe { mi::mi_option_set(ARENA_EAGER_COMMIT, 0) }
    }
    commit_on_demand
};

/// mimalloc's `mi_option_purge_delay` (v3's numbering, as above): how long freed pages stay
/// committed before they go back to the system (1 000 ms by default).
const PURGE_DELAY: mi::mi_option_t = 15;

/// Runs a one-off load that allocates and frees tens of megabytes in a burst, with freed pages
/// going back to the system at once while it runs, then hands back what it left.
///
/// Why: mimalloc keeps freed pages for a second and does not reuse all of them within the
/// burst, so building the token counter's `cl100k_base` tables (≈ 12 MB kept) raised the
/// process's peak by ≈ 42 MB; with this, by ≈ 19 MB. Purging at once for the whole process
/// would take ≈ 12 MB more off the peak at 500 plugins but made previews 20–40% slower there
/// (engines free and take back pages on every call), hence only around such loads. Loads are
/// serialized so the delay they restore is always the process's own.
pub fn returning_freed_memory<T>(load: impl FnOnce() -> T) -> T {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: reads and sets one option value, which mimalloc allows at any time.
    #[allow(unsafe_code)]
    let delay = unsafe {
        let delay = mi::mi_option_get(PURGE_DELAY);
        mi::mi_option_set(PURGE_DELAY, 0);
        delay
    };
    let loaded = load();
    // SAFETY: as above; `mi_collect` purges what this thread's heap freed.
    #[allow(unsafe_code)]
    unsafe {
        mi::mi_option_set(PURGE_DELAY, delay);
        mi::mi_collect(true);
    }
    loaded
}

/// What mimalloc would really hand out for a request of `size` bytes.
fn good_size(size: usize) -> usize {
    // SAFETY: a pure size computation; no memory is touched.
    #[allow(unsafe_code)]
    unsafe {
        mi::mi_good_size(size)
    }
}

// SAFETY: every block comes from mimalloc's `mi_malloc`/`mi_calloc`/`mi_realloc` (aligned to at
// least 8 bytes, as QuickJS needs) and goes back through `mi_free`/`mi_realloc`; the account is
// charged before a block exists and holds each live block's usable size, so a refusal only ever
// returns null, which the contract allows.
#[allow(unsafe_code)]
unsafe impl Allocator for BudgetAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        let want = good_size(size);
        if !self.account.reserve(want) {
            return std::ptr::null_mut();
        }
        let ptr = unsafe { mi::mi_malloc(size) }.cast::<u8>();
        if ptr.is_null() {
            self.account.release(want);
        } else {
            self.settle(want, unsafe { mi::mi_usable_size(ptr.cast()) });
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(bytes) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        let want = good_size(bytes);
        if bytes == 0 || !self.account.reserve(want) {
            return std::ptr::null_mut();
        }
        let ptr = unsafe { mi::mi_calloc(count, size) }.cast::<u8>();
        if ptr.is_null() {
            self.account.release(want);
        } else {
            self.settle(want, unsafe { mi::mi_usable_size(ptr.cast()) });
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller guarantees `ptr` came from this allocator, so from mimalloc.
        let bytes = unsafe { mi::mi_usable_size(ptr.cast()) };
        unsafe { mi::mi_free(ptr.cast()) };
        self.account.release(bytes);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr` came from this allocator, so from mimalloc.
        let old = unsafe { mi::mi_usable_size(ptr.cast()) };
        let growth = good_size(new_size).saturating_sub(old);
        if growth > 0 && !self.account.reserve(growth) {
            return std::ptr::null_mut();
        }
        let moved = unsafe { mi::mi_realloc(ptr.cast(), new_size) }.cast::<u8>();
        if moved.is_null() {
            // The old block is untouched and still charged as it was.
            self.account.release(growth);
        } else {
            self.settle(old + growth, unsafe { mi::mi_usable_size(moved.cast()) });
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: forwarded under the same contract.
        unsafe { mi::mi_usable_size(ptr.cast()) }
    }
}

/// What a QuickJS runtime holds before any plugin code runs, by the same account as an engine's
/// (usable sizes through [`BudgetAllocator`]): the floor under a plugin's memory while each
/// plugin has a runtime of its own. `covel bench` reports it beside the engines' memory per
/// plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineFloor {
    /// An empty runtime.
    pub runtime: usize,
    /// A runtime with a context holding only the base objects (no Date, RegExp, JSON, Promise,
    /// Map and Set, typed arrays, Proxy, …).
    pub base_context: usize,
    /// A runtime with the context an engine creates (before the host bootstrap): QuickJS's full
    /// context without the intrinsics added on first use ([`crate::intrinsics`]).
    pub full_context: usize,
}

/// Measures [`EngineFloor`] on fresh runtimes (outside the process-wide budget).
pub fn engine_floor() -> Result<EngineFloor, rquickjs::Error> {
    use rquickjs::{Context, Runtime};
    let account = || RuntimeMemory::new(usize::MAX, SharedBudget::new(usize::MAX));
    let measure = |context: fn(&Runtime) -> rquickjs::Result<Context>| {
        let memory = account();
        let runtime = Runtime::new_with_alloc(BudgetAllocator::new(Arc::clone(&memory)))?;
        let empty = memory.used();
        let _context = context(&runtime)?;
        Ok::<_, rquickjs::Error>((empty, memory.used()))
    };
    let (runtime, base_context) = measure(Context::base)?;
    let (_, full_context) = measure(crate::intrinsics::engine_context)?;
    Ok(EngineFloor {
        runtime,
        base_context,
        full_context,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_floor_grows_from_runtime_to_base_to_full_context_and_stays_under_an_engine() {
        let floor = engine_floor().expect("runtimes");
        assert!(floor.runtime > 0, "{floor:?}");
        assert!(floor.runtime < floor.base_context, "{floor:?}");
        assert!(floor.base_context < floor.full_context, "{floor:?}");
        let (_dir, engine, report) =
            crate::engine::load_entry_for_test("floor", "export default () => {};");
        let engine = engine.unwrap_or_else(|| panic!("loads: {:?}", report.failure));
        let loaded = engine.watch().bytes_held();
        assert!(
            floor.full_context < loaded,
            "a loaded plugin ({loaded} bytes) holds more than the floor {floor:?}"
        );
    }

    /// [`BudgetAllocator`], noting the size of every request QuickJS makes of it.
    struct Recording {
        inner: BudgetAllocator,
        sizes: Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl Recording {
        fn note(&self, size: usize) {
            self.sizes.lock().expect("not poisoned").push(size);
        }
    }

    // SAFETY: forwards every call to `BudgetAllocator` under the same contract.
    #[allow(unsafe_code)]
    unsafe impl Allocator for Recording {
        fn alloc(&mut self, size: usize) -> *mut u8 {
            self.note(size);
            self.inner.alloc(size)
        }

        fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
            self.note(count.saturating_mul(size));
            self.inner.calloc(count, size)
        }

        unsafe fn dealloc(&mut self, ptr: *mut u8) {
            unsafe { self.inner.dealloc(ptr) }
        }

        unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
            self.note(new_size);
            unsafe { self.inner.realloc(ptr, new_size) }
        }

        unsafe fn usable_size(ptr: *mut u8) -> usize {
            unsafe { BudgetAllocator::usable_size(ptr) }
        }
    }

    /// QuickJS as the workspace builds it (crates/js/vendor/quickjs-arenas.patch): a size
    /// class's first arena takes 512 bytes, the next ones 1 and 2 KiB, then 4 KiB as before. Only
    /// a first arena asks the backing allocator for 512 bytes or less: QuickJS serves small
    /// blocks from its arenas and asks for each larger one (over 512 bytes) on its own.
    #[test]
    fn a_size_class_starts_with_a_512_byte_arena_and_grows_to_4_kib_arenas() {
        use rquickjs::{Context, Runtime};
        let sizes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let allocator = Recording {
            inner: BudgetAllocator::new(RuntimeMemory::new(
                usize::MAX,
                SharedBudget::new(usize::MAX),
            )),
            sizes: Arc::clone(&sizes),
        };
        let runtime = Runtime::new_with_alloc(allocator).expect("a runtime");
        let context = Context::full(&runtime).expect("a context");
        // Thousands of blocks of one class: it must move on to 4 KiB arenas.
        context.with(|ctx| {
            ctx.eval::<(), _>("globalThis.kept = Array.from({ length: 4000 }, (_, i) => ({ i }));")
                .expect("runs")
        });
        let sizes = sizes.lock().expect("not poisoned").clone();
        let first_arenas = sizes.iter().filter(|size| **size <= 512).count();
        assert!(
            first_arenas >= 10,
            "a context touches many classes, each starting small: {first_arenas} requests ≤ 512 bytes"
        );
        assert!(
            sizes.iter().any(|size| (3584..=4096).contains(size)),
            "a busy class still ends with 4 KiB arenas"
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    fn mimalloc_commits_its_arenas_on_demand_from_before_main() {
        // SAFETY: reads one option value.
        let eager = unsafe { mi::mi_option_get(ARENA_EAGER_COMMIT) };
        assert_eq!(
            eager, 0,
            "the constructor ran before the first arena was reserved"
        );
    }

    #[test]
    fn a_burst_load_purges_at_once_while_it_runs_and_restores_the_delay_after() {
        #[allow(unsafe_code)]
        // SAFETY: reads one option value.
        let delay = || unsafe { mi::mi_option_get(PURGE_DELAY) };
        let before = delay();
        assert_ne!(before, 0, "mimalloc keeps freed pages a while by default");
        let during = returning_freed_memory(|| {
            // A second load from another thread waits for this one, so the delay it restores
            // is the process's own.
            let other = std::thread::spawn(move || returning_freed_memory(delay));
            (delay(), other)
        });
        assert_eq!(during.0, 0);
        assert_eq!(during.1.join().expect("the second load ran"), 0);
        assert_eq!(delay(), before);
    }

    #[test]
    fn an_allocation_is_charged_what_it_really_takes_and_released_whole() {
        let account = RuntimeMemory::new(1 << 20, SharedBudget::new(1 << 30));
        let mut allocator = BudgetAllocator::new(Arc::clone(&account));
        let block = allocator.alloc(4096);
        assert!(!block.is_null());
        assert_eq!(
            account.used(),
            4096,
            "an arena takes exactly its size class"
        );
        let odd = allocator.alloc(13);
        let taken = account.used() - 4096;
        assert!(taken >= 13, "charged {taken} for 13 bytes");
        // SAFETY: both blocks came from this allocator and are freed once.
        #[allow(unsafe_code)]
        unsafe {
            let grown = allocator.realloc(odd, 10_000);
            assert!(!grown.is_null());
            assert!(account.used() >= 4096 + 10_000);
            allocator.dealloc(grown);
            allocator.dealloc(block);
        }
        assert_eq!(account.used(), 0, "nothing is left charged");
        assert!(
            allocator.alloc(2 << 20).is_null(),
            "over the limit: refused"
        );
        assert!(account.take_refused());
        assert_eq!(account.used(), 0);
    }

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
