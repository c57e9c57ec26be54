// Linux calls that Swift's Glibc module does not declare (it is built without _GNU_SOURCE).
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>

int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

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

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Lowers the calling thread's priority to `nice` (Linux keeps a nice value per thread; a thread
/// it starts inherits it). Returns 0, or errno.
static inline int sofa_nice_this_thread(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) == 0 ? 0 : errno;
}

#include <sys/prctl.h>

/// Names the calling thread as `top -H`, `perf` and debuggers show it (Linux keeps the first 15
/// bytes). Returns 0, or errno.
static inline int sofa_name_this_thread(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0) == 0 ? 0 : errno;
}
