// Linux calls that Swift's Glibc module does not declare (it is built without _GNU_SOURCE).
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>

int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);
int mallopt(int param, int value);

/// Tunes glibc's allocator for Sofa's mix of many small blocks and large message buffers:
/// * fastbins off (M_MXFAST = 0): every large allocation would first consolidate them; small
///   blocks still come from the per-thread cache;
/// * blocks up to 32 MiB come from the heap (M_MMAP_THRESHOLD), and up to 2 MiB free at its top
///   stay there (M_TRIM_THRESHOLD): otherwise each message of a megabyte or more (blob chunks)
///   is a fresh mmap whose every page faults in, is zeroed, and is unmapped again.
/// With `large_buffers` (processes that move blob chunks: the gateway, sofa-blob, the CLI's
/// transfers), a heap that shrinks keeps 8 MiB at its top (M_TOP_PAD): a window of
/// megabyte chunks allocated and freed in turn otherwise trims and regrows the heap all the time,
/// faulting in (and zeroing) nearly every byte transferred once more. And all threads share one
/// arena (M_ARENA_MAX 1), so that the pad is kept once rather than by every thread's arena;
/// processes whose many threads make small allocations (storage, query) keep one per thread.
static inline void sofa_tune_malloc(int large_buffers) {
    mallopt(1 /* M_MXFAST */, 0);
    mallopt(-3 /* M_MMAP_THRESHOLD */, 32 << 20);
    mallopt(-1 /* M_TRIM_THRESHOLD */, 2 << 20);
    if (large_buffers) {
        mallopt(-2 /* M_TOP_PAD */, 8 << 20);
        mallopt(-8 /* M_ARENA_MAX */, 1);
    }
}

/// Starts writing back the dirty pages of a file range without waiting (SYNC_FILE_RANGE_WRITE),
/// so that a later fsync finds little left to do. Returns 0, or errno.
static inline int sofa_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, 2 /* SYNC_FILE_RANGE_WRITE */) == 0 ? 0 : errno;
}

/// Linux's O_DIRECT (the Glibc module leaves it out without _GNU_SOURCE); its value is per
/// architecture.
#if defined(__aarch64__) || defined(__arm__) || defined(__powerpc__)
#define SOFA_O_DIRECT 0200000
#else
#define SOFA_O_DIRECT 040000
#endif

/// Turns direct I/O (O_DIRECT: transfers between the caller's buffer and the disk, bypassing
/// the page cache; buffers, offsets and lengths must be multiples of the block size) on or off
/// for an open file. Returns 0, or errno (EINVAL where the file system does not support it).
static inline int sofa_set_direct_io(int fd, int on) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return errno;
    flags = on ? (flags | SOFA_O_DIRECT) : (flags & ~SOFA_O_DIRECT);
    return fcntl(fd, F_SETFL, flags) == 0 ? 0 : errno;
}
