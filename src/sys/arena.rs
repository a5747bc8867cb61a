//! The binaries' memory allocator: a fixed arena first, then the C library's `malloc`.
//!
//! Why. A launch is short and allocates much (paths, the sandbox file, `/proc` tables), then
//! frees it. musl's allocator (lnk links musl, see `.cargo/config.toml`) gives each size class
//! pages of its own with `mmap` and hands them back with `munmap` as soon as they are empty: 36
//! one-page maps and unmaps a launch, with their page faults and TLB flushes. With this arena in
//! front of it, a launch of `true` cost 0.89 (own world) and 0.87 (Landlock-only) of what it
//! did (bench/README.md, issue 32's fourth round).
//!
//! How. [`StartArena`] hands out memory from one static region, zeroed by the loader (`.bss`:
//! no page is touched until used), by moving a cursor up. The block handed out last may grow or
//! shrink in place, and gives its room back when freed (a buffer that grows, a temporary); any
//! other block freed is lost until the process ends. A request the arena cannot hold goes to
//! `malloc` ([`std::alloc::System`]), as does the growth of a block that came from there. So what
//! is lost is bounded by the arena's size, however long the process lives and whatever it does
//! (a helper that serves held calls for hours, a supervisor); a block is the arena's exactly
//! when its address is inside the region, so `System` only ever frees its own.
//!
//! Threads: the cursor is one atomic, moved by compare-and-swap only. Its invariant: every block
//! held lies below it, and everything from it up is free. Taking a block moves it from the top of
//! the free room (a swap that finds the cursor moved tries again from where it is now); giving
//! back or resizing the last block moves it only from that block's end, which is then the top
//! of what is held (a swap that finds it moved gives nothing back, or resizes by moving the
//! block). Each successful swap both releases and acquires (`AcqRel`): room one thread gave back
//! is taken by another only after the first's last use of it (found in review, with Miri: with
//! `Relaxed` swaps the two threads' writes were a data race). A child made by `fork` gets its
//! own copy of the arena, as of every other page; one that shares memory until `execve` (see
//! `spawn_sharing_memory`) shares the cursor too, an atomic like the rest.
//!
//! Not used by fuzzing (the fuzz targets link the library, not the binaries: AddressSanitizer
//! keeps seeing every allocation) nor by the library's unit tests, which test it on arenas of
//! their own.
//!
//! What it does not do: harden against lnk's own memory bugs as musl's allocator would. Blocks
//! lie side by side at a fixed distance from the binary's code (the region is the binary's own
//! `.bss`; its address is random, as the binary's is, but not apart from it), and a block freed
//! twice is caught only when it lies above the cursor (the process aborts); freed twice after its
//! room was taken again, that room would be handed out twice. lnk's `unsafe` is in this folder
//! alone, and nothing of lnk's hands memory between Rust's allocator and C's.
//!
//! Trusted with: the soundness of every allocation of `lnk` and `lnk-link-run`. What it trusts:
//! `System`, and the `GlobalAlloc` contract (a block is freed or resized only by its holder, once,
//! with the layout it was given).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::process::abort_now;

/// An arena of `BYTES` bytes in front of the C library's allocator; see the module's
/// documentation. The binaries use `StartArena<{ START_ARENA_BYTES }>`.
pub struct StartArena<const BYTES: usize> {
    /// The offset of the first free byte: every block held is below it.
    cursor: AtomicUsize,
    region: Region<BYTES>,
}

/// The binaries' arena size: more than a launch holds at once (0.27 MiB measured for a
/// launch with the default file), small beside what a process may lose to fragmentation anyway.
pub const START_ARENA_BYTES: usize = 1 << 20;

/// The region, page-aligned so that any alignment up to a page costs no more than its padding.
#[repr(C, align(4096))]
struct Region<const BYTES: usize>(UnsafeCell<[u8; BYTES]>);

// SAFETY: the region is shared between threads only through blocks the cursor's
// compare-and-swap gave one holder each (see the module's documentation); no `&` or `&mut` to
// its bytes is ever made, only raw pointers into it.
unsafe impl<const BYTES: usize> Sync for Region<BYTES> {}

impl<const BYTES: usize> StartArena<BYTES> {
    pub const fn new() -> Self {
        StartArena { cursor: AtomicUsize::new(0), region: Region(UnsafeCell::new([0; BYTES])) }
    }

    fn base(&self) -> *mut u8 {
        self.region.0.get().cast::<u8>()
    }

    /// The block's offset in the region, if `block` is the arena's.
    fn offset_of(&self, block: *mut u8) -> Option<usize> {
        let offset = (block as usize).wrapping_sub(self.base() as usize);
        (offset < BYTES).then_some(offset)
    }

    /// A block for `layout` from the free room, or `None` when it does not fit.
    fn take(&self, layout: Layout) -> Option<*mut u8> {
        let base = self.base() as usize;
        let mut cursor = self.cursor.load(Ordering::Relaxed);
        loop {
            // Aligned as an address, not as an offset: the region's own alignment is a page.
            let start = (base + cursor).checked_next_multiple_of(layout.align())? - base;
            // `start < BYTES` too: a block's address is inside the region even when it is
            // empty, so that it is told apart from `System`'s when freed.
            let end = start.checked_add(layout.size()).filter(|end| *end <= BYTES && start < BYTES)?;
            match self.cursor.compare_exchange_weak(cursor, end, Ordering::AcqRel, Ordering::Relaxed) {
                // SAFETY: `start < BYTES` and `start + size <= BYTES`: the pointer and the block
                // are inside the region, derived from the region's own pointer.
                Ok(_) => return Some(unsafe { self.base().add(start) }),
                Err(now) => cursor = now,
            }
        }
    }

    /// Moves the cursor from `from` to `to` if the block ending at `from` is still the last:
    /// whether it did. Releases what this thread wrote in room given back, and acquires what
    /// others wrote in room taken (see the module's documentation).
    fn move_cursor(&self, from: usize, to: usize) -> bool {
        self.cursor.compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Aborts the process for a block of the arena's freed or resized that reaches above the
    /// cursor: no block held does, so it was freed already (or is not a block at all). An empty
    /// block (out of `GlobalAlloc`'s contract, never asked by `std`) is not checked: one may lie
    /// at the cursor and be left above it by a block below given back.
    fn check_held(&self, offset: usize, size: usize) {
        if size != 0 && offset + size > self.cursor.load(Ordering::Acquire) {
            abort_now();
        }
    }
}

impl<const BYTES: usize> Default for StartArena<BYTES> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: `alloc` hands out either a block of the region that no other holder has (the cursor's
// invariant, above), aligned and as large as asked, or `System`'s; `dealloc` and `realloc` tell
// the two apart by address, so `System` only ever sees its own blocks, and the arena only moves
// its cursor back over a block whose holder gives it up.
unsafe impl<const BYTES: usize> GlobalAlloc for StartArena<BYTES> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.take(layout) {
            Some(block) => block,
            // SAFETY: the caller's layout, passed on as `GlobalAlloc::alloc` requires.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match self.take(layout) {
            Some(block) => {
                // SAFETY: the block is this caller's alone and `layout.size()` bytes long. (Room
                // given back may hold old bytes: it is zeroed here, not assumed zero.)
                unsafe { block.write_bytes(0, layout.size()) };
                block
            }
            // SAFETY: as in `alloc`.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        match self.offset_of(block) {
            // The last block gives its room back; any other is lost (bounded by the arena).
            Some(offset) => {
                self.check_held(offset, layout.size());
                self.move_cursor(offset + layout.size(), offset);
            }
            // SAFETY: not the arena's, so `System`'s, freed with its own layout by its holder.
            None => unsafe { System.dealloc(block, layout) },
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(offset) = self.offset_of(block) else {
            // SAFETY: `System`'s block, resized as the caller asked (the contract's conditions
            // are the caller's).
            return unsafe { System.realloc(block, layout, new_size) };
        };
        self.check_held(offset, layout.size());
        let end = offset + layout.size();
        if new_size <= layout.size() {
            // Shrunk in place; the room left over is given back if the block is the last.
            self.move_cursor(end, offset + new_size);
            return block;
        }
        if offset + new_size <= BYTES && self.move_cursor(end, offset + new_size) {
            return block;
        }
        // SAFETY: `new_size` with the block's alignment is a valid layout (the caller's
        // contract: it does not overflow `isize` when rounded up).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as in `alloc`.
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are the caller's and at least the smaller size long, and they
            // do not overlap (the new one was free room or `System`'s while the old was held).
            unsafe {
                std::ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    fn held<const B: usize>(arena: &StartArena<B>, block: *mut u8) -> bool {
        arena.offset_of(block).is_some()
    }

    #[test]
    fn blocks_are_aligned_disjoint_and_the_last_one_gives_its_room_back() {
        let arena = Box::new(StartArena::<4096>::new());
        // SAFETY: (the test's calls) layouts are non-zero, blocks freed once with their layout.
        unsafe {
            let a = arena.alloc(layout(10, 1));
            let b = arena.alloc(layout(24, 64));
            assert!(held(&arena, a) && held(&arena, b));
            assert_eq!(b as usize % 64, 0);
            assert!(b as usize >= a as usize + 10, "disjoint");
            a.write_bytes(0xAA, 10);
            b.write_bytes(0xBB, 24);
            assert_eq!(*a.add(9), 0xAA, "b did not overwrite a");
            // `a` is not the last: freeing it gives nothing back.
            arena.dealloc(a, layout(10, 1));
            let c = arena.alloc(layout(8, 8));
            assert!(c as usize >= b as usize + 24);
            // `c` is the last: freed, its room is taken by the next block.
            arena.dealloc(c, layout(8, 8));
            let d = arena.alloc(layout(8, 8));
            assert_eq!(c, d);
            arena.dealloc(d, layout(8, 8));
            arena.dealloc(b, layout(24, 64));
        }
    }

    #[test]
    fn the_last_block_grows_in_place_and_any_other_moves_with_its_bytes() {
        let arena = Box::new(StartArena::<4096>::new());
        // SAFETY: as above; `realloc` gets each block's current layout.
        unsafe {
            let a = arena.alloc(layout(16, 8));
            a.write_bytes(7, 16);
            let grown = arena.realloc(a, layout(16, 8), 100);
            assert_eq!(grown, a, "the last block grows where it is");
            let b = arena.alloc(layout(16, 8));
            let moved = arena.realloc(grown, layout(100, 8), 200);
            assert_ne!(moved, grown, "not the last any more: moved");
            assert!(moved as usize >= b as usize + 16, "moved above b, not over it");
            assert_eq!(std::slice::from_raw_parts(moved, 16), &[7; 16], "its bytes came along");
            arena.dealloc(moved, layout(200, 8));
            arena.dealloc(b, layout(16, 8));
        }
    }

    #[test]
    fn what_does_not_fit_goes_to_the_c_library_and_comes_back_there() {
        let arena = Box::new(StartArena::<256>::new());
        // SAFETY: as above.
        unsafe {
            let small = arena.alloc(layout(200, 8));
            assert!(held(&arena, small));
            let big = arena.alloc(layout(100, 8));
            assert!(!big.is_null() && !held(&arena, big), "past the arena: System's");
            big.write_bytes(1, 100);
            // A System block grows in System; an arena block that cannot grow in place moves out.
            let big = arena.realloc(big, layout(100, 8), 10_000);
            assert!(!big.is_null() && !held(&arena, big));
            assert_eq!(*big.add(99), 1);
            arena.dealloc(big, layout(10_000, 8));
            let zeroed = arena.alloc_zeroed(layout(60, 8));
            assert!(!held(&arena, zeroed));
            assert_eq!(std::slice::from_raw_parts(zeroed, 60), &[0; 60]);
            arena.dealloc(zeroed, layout(60, 8));
            let out = arena.realloc(small, layout(200, 8), 300);
            assert!(!held(&arena, out), "300 bytes do not fit in 256: moved to System");
            arena.dealloc(out, layout(300, 8));
        }
    }

    #[test]
    fn room_given_back_is_zeroed_when_zeroed_memory_is_asked() {
        let arena = Box::new(StartArena::<4096>::new());
        // SAFETY: as above.
        unsafe {
            let dirty = arena.alloc(layout(64, 8));
            dirty.write_bytes(0xFF, 64);
            arena.dealloc(dirty, layout(64, 8));
            let zeroed = arena.alloc_zeroed(layout(64, 8));
            assert_eq!(zeroed, dirty, "the same room");
            assert_eq!(std::slice::from_raw_parts(zeroed, 64), &[0; 64]);
        }
    }

    #[test]
    fn threads_get_disjoint_blocks() {
        let arena = std::sync::Arc::new(StartArena::<{ 1 << 16 }>::new());
        let threads: Vec<_> = (0..4u8)
            .map(|t| {
                let arena = std::sync::Arc::clone(&arena);
                std::thread::spawn(move || {
                    let mut blocks = Vec::new();
                    for i in 0..200usize {
                        // SAFETY: as above; each thread frees only its own blocks.
                        unsafe {
                            let block = arena.alloc(layout(16 + i % 24, 8));
                            block.write_bytes(t, 16 + i % 24);
                            if i % 3 == 0 {
                                arena.dealloc(block, layout(16 + i % 24, 8));
                            } else {
                                blocks.push((arena.offset_of(block).unwrap(), 16 + i % 24));
                            }
                        }
                    }
                    blocks
                })
            })
            .collect();
        let mut all: Vec<(usize, usize, u8)> = Vec::new();
        for (t, thread) in threads.into_iter().enumerate() {
            all.extend(thread.join().unwrap().into_iter().map(|(a, n)| (a, n, t as u8)));
        }
        all.sort();
        for pair in all.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0, "blocks overlap: {pair:?}");
        }
        for (address, size, t) in all {
            // SAFETY: a block still held (at offset `address`), `size` bytes long.
            let bytes = unsafe { std::slice::from_raw_parts(arena.base().add(address), size) };
            assert!(bytes.iter().all(|b| *b == t), "a block was written by another thread");
        }
    }

    /// A block freed twice, with the cursor below it since, ends the process: run in a child
    /// process of the test binary (the test below), which must die of `SIGABRT`.
    #[test]
    #[ignore = "run by a_block_freed_twice_aborts, in a process of its own"]
    fn free_a_block_twice() {
        // Only in that process: `--include-ignored` must not abort the whole run.
        if std::env::var_os("LNK_ARENA_TEST_CHILD").is_none() {
            return;
        }
        let arena = Box::new(StartArena::<4096>::new());
        // SAFETY: the second free is the misuse under test; the process aborts there.
        unsafe {
            let block = arena.alloc(layout(32, 8));
            arena.dealloc(block, layout(32, 8));
            arena.dealloc(block, layout(32, 8));
        }
        // Not reached when the check works: the parent sees a clean exit and fails.
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri runs no other process")]
    fn a_block_freed_twice_aborts() {
        use std::os::unix::process::ExitStatusExt as _;
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &format!("{}::free_a_block_twice", module_path!().split_once("::").map_or("", |(_, m)| m)),
                "--ignored",
                "--test-threads=1",
            ])
            .env("LNK_ARENA_TEST_CHILD", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
    }
}
