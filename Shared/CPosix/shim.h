// Linux calls that Swift's Glibc module does not declare (it is built without _GNU_SOURCE).
#include <sys/types.h>
#include <errno.h>

int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);
int mallopt(int param, int value);

/// Turns off glibc's fastbins (M_MXFAST = 0). Sofa processes free many small blocks between
/// large message buffers, and every large allocation would first consolidate the fastbins;
/// small blocks still come from the per-thread cache.
static inline void sofa_tune_malloc(void) {
    mallopt(1 /* M_MXFAST */, 0);
}

/// Starts writing back the dirty pages of a file range without waiting (SYNC_FILE_RANGE_WRITE),
/// so that a later fsync finds little left to do. Returns 0, or errno.
static inline int sofa_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, 2 /* SYNC_FILE_RANGE_WRITE */) == 0 ? 0 : errno;
}
