#include "sofa_collation.h"
#include <unicode/ucol.h>

void *sofa_collator_open(void) {
    UErrorCode status = U_ZERO_ERROR;
    UCollator *collator = ucol_open("", &status);
    if (U_FAILURE(status)) { return NULL; }
    ucol_setStrength(collator, UCOL_IDENTICAL);
    return collator;
}

int32_t sofa_collator_sort_key(void *collator, const uint16_t *text, int32_t length, uint8_t *out, int32_t capacity) {
    return ucol_getSortKey((const UCollator *)collator, (const UChar *)text, length, out, capacity);
}
