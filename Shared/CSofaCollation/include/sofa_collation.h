// The Unicode Collation Algorithm's sort keys, from ICU (libicu-dev), for the order of view keys.
// ICU's own types stay inside sofa_collation.c: Swift's Foundation brings an ICU of its own, and
// two sets of ICU declarations cannot meet in one Swift module.
#ifndef SOFA_COLLATION_H
#define SOFA_COLLATION_H
#include <stdint.h>

/// The root locale's collator at identical strength (ties broken by code points); NULL when ICU
/// cannot open it.
void *sofa_collator_open(void);

/// The sort key of UTF-16 `text` into `out` (ending with a zero byte, the only one it holds);
/// its length, which may be more than `capacity` (then ask again with room for it).
int32_t sofa_collator_sort_key(void *collator, const uint16_t *text, int32_t length, uint8_t *out, int32_t capacity);
#endif
