// Sofa's full-text pieces for SQLite FTS5: the Snowball tokenizer (unicode61 splits, Snowball
// stems, stop words stay out of the index) and the rank function.
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

/// What a connection's tokenizers share: the FTS5 API and the stop words (a copy, freed with the
/// tokenizer's registration).
typedef struct {
    fts5_api *api;
    char **stopWords;
    int stopWordCount;
} Registration;

static void registration_free(void *state) {
    Registration *registration = (Registration *)state;
    for (int i = 0; i < registration->stopWordCount; i++) free(registration->stopWords[i]);
    free(registration->stopWords);
    free(registration);
}

static int is_stop_word(char *const *words, int count, const char *token, int length) {
    for (int i = 0; i < count; i++) {
        const char *word = words[i];
        if ((int)strlen(word) == length && memcmp(word, token, (size_t)length) == 0) return 1;
    }
    return 0;
}

typedef struct {
    fts5_tokenizer base;       // unicode61's methods
    Fts5Tokenizer *baseState;  // unicode61's instance
    struct sb_stemmer *stemmer;  // NULL: words are not stemmed
    const Registration *registration;
    int dropsStopWords;
    // The index's own stop words ("stopwordlist"), in place of the registration's.
    char **ownWords;
    int ownWordCount;
    char *ownList;
} SnowballTokenizer;

/// Splits `list` (words separated by spaces) into the tokenizer's own stop words.
static int own_stop_words(SnowballTokenizer *tokenizer, const char *list) {
    tokenizer->ownList = sqlite3_mprintf("%s", list);
    if (!tokenizer->ownList) return SQLITE_NOMEM;
    int count = 0;
    for (const char *c = list; *c; c++) if (*c != ' ' && (c == list || c[-1] == ' ')) count++;
    tokenizer->ownWords = sqlite3_malloc64(sizeof(char *) * (sqlite3_uint64)(count > 0 ? count : 1));
    if (!tokenizer->ownWords) return SQLITE_NOMEM;
    char *saved = NULL;
    for (char *word = strtok_r(tokenizer->ownList, " ", &saved); word; word = strtok_r(NULL, " ", &saved)) {
        tokenizer->ownWords[tokenizer->ownWordCount++] = word;
    }
    return SQLITE_OK;
}

static void snowball_free(SnowballTokenizer *tokenizer) {
    if (tokenizer->baseState) tokenizer->base.xDelete(tokenizer->baseState);
    if (tokenizer->stemmer) sb_stemmer_delete(tokenizer->stemmer);
    sqlite3_free(tokenizer->ownWords);
    sqlite3_free(tokenizer->ownList);
    sqlite3_free(tokenizer);
}

typedef struct {
    SnowballTokenizer *tokenizer;
    void *ctx;
    int dropping;
    int (*emit)(void *, int, const char *, int, int, int);
} StemContext;

static int snowball_create(void *userData, const char **args, int count, Fts5Tokenizer **out) {
    Registration *registration = (Registration *)userData;
    fts5_api *api = registration->api;
    if (count < 1) return SQLITE_ERROR;
    SnowballTokenizer *tokenizer = sqlite3_malloc(sizeof(SnowballTokenizer));
    if (!tokenizer) return SQLITE_NOMEM;
    memset(tokenizer, 0, sizeof(*tokenizer));
    tokenizer->registration = registration;
    // Arguments: the stemmer's language ("none": no stemming), then "stopwords" (the
    // registration's list) or "stopwordlist" and the words, then unicode61's own.
    int consumed = 1;
    int rc = SQLITE_OK;
    if (count > 1 && strcmp(args[1], "stopwords") == 0) {
        tokenizer->dropsStopWords = 1;
        consumed = 2;
    } else if (count > 2 && strcmp(args[1], "stopwordlist") == 0) {
        tokenizer->dropsStopWords = 1;
        consumed = 3;
        rc = own_stop_words(tokenizer, args[2]);
    }
    void *baseData = NULL;
    if (rc == SQLITE_OK) rc = api->xFindTokenizer(api, "unicode61", &baseData, &tokenizer->base);
    if (rc == SQLITE_OK) rc = tokenizer->base.xCreate(baseData, args + consumed, count - consumed, &tokenizer->baseState);
    if (rc == SQLITE_OK && strcmp(args[0], "none") != 0) {
        tokenizer->stemmer = sb_stemmer_new(args[0], "UTF_8");
        if (!tokenizer->stemmer) rc = SQLITE_ERROR;
    }
    if (rc != SQLITE_OK) {
        snowball_free(tokenizer);
        return rc;
    }
    *out = (Fts5Tokenizer *)tokenizer;
    return SQLITE_OK;
}

static void snowball_delete(Fts5Tokenizer *state) {
    snowball_free((SnowballTokenizer *)state);
}

static int snowball_stem(void *context, int flags, const char *token, int length, int start, int end) {
    StemContext *stem = (StemContext *)context;
    // A stop word is left out of what is indexed (the text of a document, and the same text as
    // auxiliary functions read it) and of MATCH text, as LiteCore's tokenizer leaves it out; a
    // prefix in MATCH text (`on*`) keeps its meaning.
    if (stem->dropping) {
        const SnowballTokenizer *tokenizer = stem->tokenizer;
        int stop = tokenizer->ownList
            ? is_stop_word(tokenizer->ownWords, tokenizer->ownWordCount, token, length)
            : is_stop_word(tokenizer->registration->stopWords, tokenizer->registration->stopWordCount, token, length);
        if (stop) return SQLITE_OK;
    }
    if (!stem->tokenizer->stemmer) return stem->emit(stem->ctx, flags, token, length, start, end);
    const sb_symbol *stemmed = sb_stemmer_stem(stem->tokenizer->stemmer, (const sb_symbol *)token, length);
    if (!stemmed) return stem->emit(stem->ctx, flags, token, length, start, end);
    return stem->emit(stem->ctx, flags, (const char *)stemmed, sb_stemmer_length(stem->tokenizer->stemmer), start, end);
}

static int snowball_tokenize(Fts5Tokenizer *state, void *ctx, int flags, const char *text, int length,
                             int (*emit)(void *, int, const char *, int, int, int)) {
    SnowballTokenizer *tokenizer = (SnowballTokenizer *)state;
    int dropping = tokenizer->dropsStopWords && (flags & FTS5_TOKENIZE_PREFIX) == 0;
    StemContext stem = { tokenizer, ctx, dropping, emit };
    return tokenizer->base.xTokenize(tokenizer->baseState, &stem, flags, text, length, snowball_stem);
}

/// Per query: each phrase's hits in each column over every row of the table (the denominator of
/// `sofa_rank`), counted once on the first row ranked.
typedef struct {
    int phrases;
    int columns;
    double *globalHits;  // [phrase * columns + column]
} GlobalHits;

typedef struct {
    GlobalHits *hits;
    int phrase;
} GlobalCount;

static int count_phrase_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *userData) {
    GlobalCount *count = (GlobalCount *)userData;
    int instances = 0;
    int rc = api->xInstCount(fts, &instances);
    for (int i = 0; rc == SQLITE_OK && i < instances; i++) {
        int phrase = 0, column = 0, offset = 0;
        rc = api->xInst(fts, i, &phrase, &column, &offset);
        if (rc == SQLITE_OK && column >= 0 && column < count->hits->columns) {
            count->hits->globalHits[count->phrase * count->hits->columns + column] += 1;
        }
    }
    return rc;
}

static void global_hits_free(void *state) {
    GlobalHits *hits = (GlobalHits *)state;
    free(hits->globalHits);
    free(hits);
}

/// `sofa_rank(fts_table)`: the relevance of the current row, as LiteCore ranks a match: the sum,
/// over the query's phrases and the table's columns, of the phrase's hits in the row's column
/// divided by its hits in that column over all rows.
static void sofa_rank(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *result, int argc, sqlite3_value **argv) {
    (void)argc; (void)argv;
    GlobalHits *hits = (GlobalHits *)api->xGetAuxdata(fts, 0);
    if (!hits) {
        hits = calloc(1, sizeof(GlobalHits));
        if (!hits) { sqlite3_result_error_nomem(result); return; }
        hits->phrases = api->xPhraseCount(fts);
        hits->columns = api->xColumnCount(fts);
        hits->globalHits = calloc((size_t)(hits->phrases * hits->columns + 1), sizeof(double));
        if (!hits->globalHits) { free(hits); sqlite3_result_error_nomem(result); return; }
        int rc = SQLITE_OK;
        for (int phrase = 0; rc == SQLITE_OK && phrase < hits->phrases; phrase++) {
            GlobalCount count = { hits, phrase };
            rc = api->xQueryPhrase(fts, phrase, &count, count_phrase_row);
        }
        if (rc == SQLITE_OK) rc = api->xSetAuxdata(fts, hits, global_hits_free);
        else global_hits_free(hits);
        if (rc != SQLITE_OK) { sqlite3_result_error_code(result, rc); return; }
    }
    int instances = 0;
    int rc = api->xInstCount(fts, &instances);
    double score = 0;
    for (int i = 0; rc == SQLITE_OK && i < instances; i++) {
        int phrase = 0, column = 0, offset = 0;
        rc = api->xInst(fts, i, &phrase, &column, &offset);
        if (rc != SQLITE_OK || phrase < 0 || phrase >= hits->phrases || column < 0 || column >= hits->columns) continue;
        double global = hits->globalHits[phrase * hits->columns + column];
        if (global > 0) score += 1.0 / global;
    }
    if (rc != SQLITE_OK) { sqlite3_result_error_code(result, rc); return; }
    sqlite3_result_double(result, score);
}

int sofa_fts_register(sqlite3 *db, const char *const *stopWords, int stopWordCount) {
    fts5_api *api = fts5_api_of(db);
    if (!api) return SQLITE_ERROR;
    Registration *registration = calloc(1, sizeof(Registration));
    if (!registration) return SQLITE_NOMEM;
    registration->api = api;
    registration->stopWords = calloc((size_t)(stopWordCount > 0 ? stopWordCount : 1), sizeof(char *));
    if (!registration->stopWords) { free(registration); return SQLITE_NOMEM; }
    for (int i = 0; i < stopWordCount; i++) {
        registration->stopWords[i] = strdup(stopWords[i]);
        if (!registration->stopWords[i]) { registration_free(registration); return SQLITE_NOMEM; }
        registration->stopWordCount = i + 1;
    }
    fts5_tokenizer methods = { snowball_create, snowball_delete, snowball_tokenize };
    int rc = api->xCreateTokenizer(api, "sofa_snowball", registration, &methods, registration_free);
    if (rc != SQLITE_OK) {
        registration_free(registration);  // (not registered: nothing else frees it)
        return rc;
    }
    return api->xCreateFunction(api, "sofa_rank", NULL, sofa_rank, NULL);
}

int sofa_fts_has_stemmer(const char *language) {
    struct sb_stemmer *stemmer = sb_stemmer_new(language, "UTF_8");
    if (!stemmer) return 0;
    sb_stemmer_delete(stemmer);
    return 1;
}
