// Sofa's Snowball tokenizer for SQLite FTS5: unicode61 splits, Snowball stems.
#include "include/sofa_fts.h"
#include <libstemmer.h>
#include <stdlib.h>
#include <string.h>

/// The FTS5 API of a connection, obtained the documented way: `SELECT fts5(?1)` with a pointer
/// binding of type "fts5_api_ptr".
static fts5_api *fts5_api_of(sqlite3 *db) {
    fts5_api *api = NULL;
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &statement, NULL) == SQLITE_OK) {
        sqlite3_bind_pointer(statement, 1, (void *)&api, "fts5_api_ptr", NULL);
        sqlite3_step(statement);
    }
    sqlite3_finalize(statement);
    return api;
}

typedef struct {
    fts5_tokenizer base;       // unicode61's methods
    Fts5Tokenizer *baseState;  // unicode61's instance
    struct sb_stemmer *stemmer;
} SnowballTokenizer;

typedef struct {
    SnowballTokenizer *tokenizer;
    void *ctx;
    int (*emit)(void *, int, const char *, int, int, int);
} StemContext;

static int snowball_create(void *userData, const char **args, int count, Fts5Tokenizer **out) {
    fts5_api *api = (fts5_api *)userData;
    if (count < 1) return SQLITE_ERROR;
    SnowballTokenizer *tokenizer = sqlite3_malloc(sizeof(SnowballTokenizer));
    if (!tokenizer) return SQLITE_NOMEM;
    memset(tokenizer, 0, sizeof(*tokenizer));
    void *baseData = NULL;
    int rc = api->xFindTokenizer(api, "unicode61", &baseData, &tokenizer->base);
    if (rc == SQLITE_OK) rc = tokenizer->base.xCreate(baseData, args + 1, count - 1, &tokenizer->baseState);
    if (rc == SQLITE_OK) {
        tokenizer->stemmer = sb_stemmer_new(args[0], "UTF_8");
        if (!tokenizer->stemmer) rc = SQLITE_ERROR;
    }
    if (rc != SQLITE_OK) {
        if (tokenizer->baseState) tokenizer->base.xDelete(tokenizer->baseState);
        sqlite3_free(tokenizer);
        return rc;
    }
    *out = (Fts5Tokenizer *)tokenizer;
    return SQLITE_OK;
}

static void snowball_delete(Fts5Tokenizer *state) {
    SnowballTokenizer *tokenizer = (SnowballTokenizer *)state;
    if (tokenizer->baseState) tokenizer->base.xDelete(tokenizer->baseState);
    if (tokenizer->stemmer) sb_stemmer_delete(tokenizer->stemmer);
    sqlite3_free(tokenizer);
}

static int snowball_stem(void *context, int flags, const char *token, int length, int start, int end) {
    StemContext *stem = (StemContext *)context;
    const sb_symbol *stemmed = sb_stemmer_stem(stem->tokenizer->stemmer, (const sb_symbol *)token, length);
    if (!stemmed) return stem->emit(stem->ctx, flags, token, length, start, end);
    return stem->emit(stem->ctx, flags, (const char *)stemmed, sb_stemmer_length(stem->tokenizer->stemmer), start, end);
}

static int snowball_tokenize(Fts5Tokenizer *state, void *ctx, int flags, const char *text, int length,
                             int (*emit)(void *, int, const char *, int, int, int)) {
    SnowballTokenizer *tokenizer = (SnowballTokenizer *)state;
    StemContext stem = { tokenizer, ctx, emit };
    return tokenizer->base.xTokenize(tokenizer->baseState, &stem, flags, text, length, snowball_stem);
}

int sofa_fts_register_snowball(sqlite3 *db) {
    fts5_api *api = fts5_api_of(db);
    if (!api) return SQLITE_ERROR;
    fts5_tokenizer methods = { snowball_create, snowball_delete, snowball_tokenize };
    return api->xCreateTokenizer(api, "sofa_snowball", (void *)api, &methods, NULL);
}

int sofa_fts_has_stemmer(const char *language) {
    struct sb_stemmer *stemmer = sb_stemmer_new(language, "UTF_8");
    if (!stemmer) return 0;
    sb_stemmer_delete(stemmer);
    return 1;
}
