#ifndef SOFA_FTS_H
#define SOFA_FTS_H

#include <sqlite3.h>

/// Registers the FTS5 tokenizer `sofa_snowball` on a connection:
///
///     tokenize = 'sofa_snowball LANGUAGE [unicode61 options…]'
///
/// Text is split and case-folded by FTS5's own `unicode61` tokenizer (the options, e.g.
/// `remove_diacritics 2`, go to it), then each token is reduced to its stem by the Snowball
/// stemmer for LANGUAGE (libstemmer's names: english, french, german, …). Returns an SQLite code.
int sofa_fts_register_snowball(sqlite3 *db);

/// 1 if libstemmer has a stemmer for `language` (a Snowball algorithm name), else 0.
int sofa_fts_has_stemmer(const char *language);

#endif
