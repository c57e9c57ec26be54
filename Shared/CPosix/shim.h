// Linux calls that Swift's Glibc module does not declare (it is built without _GNU_SOURCE).
#include <sys/types.h>
#include <errno.h>

int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags);
void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);

/// Starts writing back the dirty pages of a file range without waiting (SYNC_FILE_RANGE_WRITE),
/// so that a later fsync finds little left to do. Returns 0, or errno.
static inline int sofa_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, 2 /* SYNC_FILE_RANGE_WRITE */) == 0 ? 0 : errno;
}
