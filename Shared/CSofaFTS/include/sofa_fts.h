#ifndef SOFA_FTS_H
#define SOFA_FTS_H

#include <sqlite3.h>

/// Registers Sofa's full-text pieces on a connection:
///
/// * the FTS5 tokenizer `sofa_snowball`:
///
///       tokenize = 'sofa_snowball LANGUAGE [stopwords] [unicode61 options…]'
///
///   Text is split and case-folded by FTS5's own `unicode61` tokenizer (the options, e.g.
///   `remove_diacritics 2`, go to it), then each token is reduced to its stem by the Snowball
///   stemmer for LANGUAGE (libstemmer's names: english, french, german, …). With `stopwords`, the
///   words of `stopWords` (case-folded, as unicode61 gives them) are left out of what is indexed
///   and of MATCH text, but for a prefix there (`on*`).
/// * the FTS5 auxiliary function `sofa_rank(table)`: the sum, over the query's phrases and the
///   table's columns, of the phrase's hits in the row's column divided by its hits in that
///   column over all rows (how LiteCore ranks a match).
///
/// Returns an SQLite code.
int sofa_fts_register(sqlite3 *db, const char *const *stopWords, int stopWordCount);

/// 1 if libstemmer has a stemmer for `language` (a Snowball algorithm name), else 0.
int sofa_fts_has_stemmer(const char *language);

#endif
