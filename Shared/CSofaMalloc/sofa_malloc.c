// Sets glibc's allocator up for each Sofa executable before `main` runs: a constructor, so that
// it comes before any thread exists (the arena limit binds only threads yet to make their
// first allocation, and a Swift program may start threads before its first line runs).
#include "include/sofa_malloc.h"
#include <malloc.h>
#include <string.h>

static int profile = SOFA_MALLOC_UNTUNED;

int sofa_malloc_profile(void) { return profile; }

int sofa_malloc_release_free(void) { return malloc_trim(0); }

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/// Whether the process streams blob chunks: sofa-blob, the gateway, and the CLI's blob
/// transfers (`sofa blob put|get`, `sofa-bench blob`).
static int moves_blob_chunks(int argc, char **argv, const char *name) {
    if (strcmp(name, "sofa-blob") == 0 || strcmp(name, "sofa-gateway") == 0) return 1;
    if (argc < 2) return 0;
    if (strcmp(name, "sofa-bench") == 0) return strcmp(argv[1], "blob") == 0;
    if (strcmp(name, "sofa") != 0 || argc < 3) return 0;
    return strcmp(argv[1], "blob") == 0 && (strcmp(argv[2], "put") == 0 || strcmp(argv[2], "get") == 0);
}

/// Every Sofa executable:
/// * fastbins off (M_MXFAST 0): every large allocation would first consolidate them; small
///   blocks still come from the per-thread cache;
/// * blocks up to 32 MiB come from the heap (M_MMAP_THRESHOLD), and up to 2 MiB free at its top
///   stay there (M_TRIM_THRESHOLD): otherwise each message of a megabyte or more (blob chunks)
///   is a fresh mmap whose every page faults in, is zeroed, and is unmapped again.
/// A process that streams blob chunks also keeps 8 MiB at the top of a heap that shrinks
/// (M_TOP_PAD): a window of megabyte chunks allocated and freed in turn otherwise trims and
/// regrows the heap all the time, faulting in (and zeroing) nearly every byte transferred once
/// more; for the same reason up to 40 MiB free at its top stay (M_TRIM_THRESHOLD): a request up
/// to twice the request limit, refused or passed on, reuses the last one's pages instead of
/// faulting in fresh ones. And its threads share one arena (M_ARENA_MAX 1), so that the pad is kept once rather
/// than by every thread's arena; processes whose many threads make small allocations (storage,
/// query) keep one arena per thread. sofa-http has one arena too, without the pads.
__attribute__((constructor)) static void sofa_malloc_setup(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc < 1 || argv == NULL || argv[0] == NULL) return;
    static const char *const executables[] = {
        "sofa", "sofa-storage", "sofa-query", "sofa-blob", "sofa-replicator", "sofa-gateway", "sofa-bench", "sofa-http",
        "sofa-js",
    };
    const char *name = base_name(argv[0]);
    int known = 0;
    for (size_t i = 0; i < sizeof executables / sizeof executables[0]; i++) {
        if (strcmp(name, executables[i]) == 0) known = 1;
    }
    if (!known) return;
    mallopt(M_MXFAST, 0);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 2 << 20);
    profile = SOFA_MALLOC_GENERAL;
    // sofa-http: its event-loop threads take turns at every request (and its attachments pass
    // through in chunks); one arena keeps what they free for each other instead of a heap each.
    if (strcmp(name, "sofa-http") == 0) mallopt(M_ARENA_MAX, 1);
    if (moves_blob_chunks(argc, argv, name)) {
        mallopt(M_TOP_PAD, 8 << 20);
        mallopt(M_TRIM_THRESHOLD, 40 << 20);
        mallopt(M_ARENA_MAX, 1);
        profile = SOFA_MALLOC_LARGE_BUFFERS;
    }
}
