//! The binary's C entry point (`no_main`): std's runtime start-up (a stack-overflow handler
//! with its alternate stack, a parse of /proc/self/maps through glibc's stdio) touches pages of
//! libc that the daemon never needs again; with the kernel mapping 64 KiB around each page
//! fault that was 0.3 MiB of resident memory. The three things of that start-up this program
//! relies on are done here; everything else is `solowg::cli`.
#![no_main]

use std::io::{self, Write};

/// The C entry point. std's own start-up is skipped (see the module comment), so this does
/// its three parts the daemon depends on (and, on glibc, fixes the allocator's mmap threshold): fds 0-2 are open (else the first socket opened
/// would become stdout), SIGPIPE is ignored (a UAPI client that hangs up must not kill the
/// daemon) and the arguments are read from argv (std::env::args is empty on musl here).
///
/// # Safety
/// Called only by the C runtime, with `argc` valid NUL-terminated strings in `argv`.
#[allow(unsafe_code)]
#[no_mangle]
pub unsafe extern "C" fn main(argc: libc::c_int, argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: fcntl/open/signal on plain integers and a static C string; argv holds argc valid
    // NUL-terminated strings, as the C runtime guarantees to main.
    let args = unsafe {
        for fd in 0..3 {
            if libc::fcntl(fd, libc::F_GETFD) == -1 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // glibc raises its mmap threshold to the size of each large block freed, so after one
        // big UAPI request (up to 4 MiB) later ones came from the heap, which kept them: 15 MB
        // more for good. A fixed threshold keeps large blocks in their own mappings, given
        // back when freed. musl's allocator does that by itself.
        #[cfg(target_env = "gnu")]
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        (0..argc.max(0) as usize)
            .map(|i| {
                std::ffi::CStr::from_ptr(*argv.add(i))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    let code = solowg::cli::run(args);
    // std's runtime would flush stdout at exit; without it a buffered tail would be lost.
    let _ = io::stdout().flush();
    code
}
