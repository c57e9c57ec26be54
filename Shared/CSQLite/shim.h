#include <sqlite3.h>

/// Turns SQLite's memory statistics off, before SQLite is first initialised (SQLITE_MISUSE after).
/// With them on, every allocation SQLite makes takes one process-wide mutex.
static inline int sofa_sqlite_memory_statistics_off(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
