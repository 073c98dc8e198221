//! A global allocator for the tests that measure the heap (`alloc.rs`, `soak.rs`): it defers
//! to the system allocator and, on a thread that switched counting on, counts allocations and
//! the bytes held. Each test crate that uses it declares it with #[global_allocator].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

pub struct Counting;

/// Allocations (and reallocations) made while counting.
pub static ALLOCS: AtomicUsize = AtomicUsize::new(0);
/// Bytes allocated and not yet freed while counting.
pub static LIVE: AtomicIsize = AtomicIsize::new(0);
thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

/// Counts this thread's allocations from now on (true) or no longer (false).
pub fn count(on: bool) {
    COUNTING.with(|c| c.set(on));
}

fn counting() -> bool {
    COUNTING.with(Cell::get)
}

// SAFETY: defers to the system allocator; only adds counters.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counting() {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        System.realloc(ptr, layout, new_size)
    }
}
