internal import CSofaFTS
internal import SofaCore

/// Full-text rules shared by index creation and MATCH.
///
/// Words are split and case-folded by FTS5's `unicode61` tokenizer, then stemmed by the Snowball
/// stemmer of the index's language (`sofa_snowball`, Sofa's tokenizer over libstemmer): "en" /
/// "english" (the default), "fr", "de", "es", "it", "pt", "nl", "sv", "no", "da", "fi", "ru",
/// "hu", "ro", "tr" and the other Snowball languages, by ISO code or name; a region after the
/// language is ignored ("en_US" is "en"). "none", a language without a stemmer, and an index that
/// disables stemming split without stemming (as LiteCore does). Stop words stay out of the index,
/// and out of MATCH text's bare words (a query for "the dog" finds a document that has "dog"):
/// English's list, or the index's own (LiteCore's `stopWords`: words separated by spaces or
/// commas; "" for none).
public enum FullText {
    /// The FTS5 `tokenize` argument for an index, as it stands inside a SQL string literal.
    public static func tokenizer(language: String?, ignoreDiacritics: Bool, disableStemming: Bool = false,
                                 stopWords custom: String? = nil) -> String {
        let diacritics = "remove_diacritics \(ignoreDiacritics ? 2 : 0)"
        let stemmer = disableStemming ? nil : stemmer(language)
        let stopping: String
        if let custom {
            let words = stopWordList(custom)
            // One argument in FTS5's single quotes (a quote in it doubled), inside the SQL literal
            // (which doubles each quote again).
            let argument = "'" + words.joined(separator: " ").replacingOccurrences(of: "'", with: "''") + "'"
            stopping = words.isEmpty ? "" : " stopwordlist " + argument.replacingOccurrences(of: "'", with: "''")
        } else {
            stopping = stemsEnglish(language) ? " stopwords" : ""
        }
        guard stemmer != nil || !stopping.isEmpty else { return "unicode61 \(diacritics)" }
        return "sofa_snowball \(stemmer ?? "none")\(stopping) \(diacritics)"
    }

    /// An index's stop words: its own list (`custom`, words separated by spaces or commas, in
    /// lower case as the tokenizer folds them), else its language's (English has one).
    public static func stopWords(language: String?, custom: String?) -> [String] {
        if let custom { return stopWordList(custom) }
        return stemsEnglish(language) ? englishStopWords.sorted() : []
    }

    /// Words separated by whitespace, commas or double quotes (as LiteCore reads the list), lower case.
    static func stopWordList(_ text: String) -> [String] {
        var seen = Set<String>()
        return text.lowercased().split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\"" || $0.isWhitespace })
            .map(String.init).filter { seen.insert($0).inserted }
    }

    /// The Snowball stemmer of a language (its name as given, lower case, without a region), or
    /// nil for none.
    static func stemmer(_ language: String?) -> String? {
        let name = baseLanguage(language)
        guard name != "none", !name.isEmpty, name.allSatisfy({ $0.isASCII && $0.isLetter }),
              sofa_fts_has_stemmer(name) != 0 else { return nil }
        return name
    }

    /// A language in lower case without its region ("en_US", "en-GB": "en"); English when none.
    private static func baseLanguage(_ language: String?) -> String {
        let name = (language ?? "english").lowercased()
        return String(name.prefix { $0 != "_" && $0 != "-" })
    }

    static func stemsEnglish(_ language: String?) -> Bool {
        ["en", "eng", "english"].contains(baseLanguage(language))
    }

    /// The classic English stop-word list (Lucene's, which LiteCore's English list extends).
    static let englishStopWords: Set<String> = [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
        "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
        "they", "this", "to", "was", "will", "with",
    ]

    /// MATCH text without the index's stop words: bare words only; quoted phrases, operators
    /// (AND, OR, NOT, NEAR — upper case, as FTS5 reads them) and prefixes (`run*`) are kept. When
    /// every word is a stop word, the text is left as it was.
    static func withoutStopWords(_ text: String, _ stopWords: Set<String> = englishStopWords) -> String {
        var kept: [Substring] = []
        var inQuote = false
        var dropped = false
        for token in text.split(separator: " ", omittingEmptySubsequences: true) {
            let quotes = token.filter { $0 == "\"" }.count
            if inQuote || quotes > 0 {
                kept.append(token)
                if quotes % 2 == 1 { inQuote.toggle() }
                continue
            }
            if stopWords.contains(token.lowercased()) && token != "AND" && token != "OR" && token != "NOT" {
                dropped = true
                continue
            }
            kept.append(token)
        }
        let words = kept.filter { !["AND", "OR", "NOT", "NEAR"].contains($0) }
        guard dropped, !words.isEmpty else { return text }
        // An operator left dangling at either end by a dropped word would be a syntax error.
        while let first = kept.first, ["AND", "OR", "NOT"].contains(first) { kept.removeFirst() }
        while let last = kept.last, ["AND", "OR", "NOT"].contains(last) { kept.removeLast() }
        return kept.joined(separator: " ")
    }

    /// FTS5 reads a bareword of letters, digits, `_` and non-ASCII characters only, and refuses
    /// a word with other characters that are not its syntax either (`'hâkimler'`, `don't`,
    /// `e.g.`), where LiteCore's FTS4 splits the word there. Such a word becomes a quoted phrase,
    /// which the tokenizer splits the same way. FTS5's own syntax is left as it is: operators,
    /// parentheses, `NEAR(…, N)`, column filters (`c0:`, `{c0 c1}:`, `-c0:`), `^`, `+`, a
    /// trailing `*`, and text in double quotes; a query without such a word is not touched.
    static func quotingPunctuation(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isForeign)
              || text.split(separator: " ").contains(where: isLoneMinus) else { return text }
        var out: [String] = []
        var inQuote = false
        for token in text.split(separator: " ", omittingEmptySubsequences: false) {
            let quotes = token.filter { $0 == "\"" }.count
            if inQuote || quotes > 0 {
                out.append(String(token))
                if quotes % 2 == 1 { inQuote.toggle() }
                continue
            }
            out.append(quotingWord(token))
        }
        return out.joined(separator: " ")
    }

    /// A token with its word quoted when the word has a character FTS5 refuses (`isForeign`).
    private static func quotingWord(_ token: Substring) -> String {
        if isLoneMinus(token) {
            // `-41`: FTS4 splits the word (the tokenizer drops the `-`); FTS5 would read syntax.
            let opens = token.prefix { $0 == "(" }
            var word = token.dropFirst(opens.count)
            var tail = ""
            while let c = word.last, "),*".contains(c) { tail.insert(c, at: tail.startIndex); word.removeLast() }
            return opens + "\"" + word + "\"" + tail
        }
        guard token.unicodeScalars.contains(where: isForeign) else { return String(token) }
        var word = token
        var head = "", tail = ""
        func takeOpeners() {
            if word.hasPrefix("NEAR(") { head += "NEAR("; word = word.dropFirst(5) }
            while let c = word.first, "(^+-".contains(c) { head.append(c); word.removeFirst() }
        }
        takeOpeners()
        while let c = word.last, "),*".contains(c) { tail.insert(c, at: tail.startIndex); word.removeLast() }
        if let colon = word.firstIndex(of: ":"), colon != word.startIndex, word[..<colon].unicodeScalars.allSatisfy(isBareword) {
            head += word[...colon]
            word = word[word.index(after: colon)...]
            takeOpeners()
        }
        guard !word.isEmpty else { return String(token) }
        return head + "\"" + word + "\"" + tail
    }

    /// A word beginning with `-` that is not a column filter (`-c0:`), such as a negative number.
    private static func isLoneMinus(_ token: Substring) -> Bool {
        let word = token.drop { $0 == "(" }
        return word.hasPrefix("-") && word.count > 1 && !word.contains(":") && !word.contains("\"")
    }

    /// An ASCII character that is neither in a bareword nor FTS5's syntax.
    private static func isForeign(_ scalar: Unicode.Scalar) -> Bool {
        !isBareword(scalar) && !" \"*^:()+{},-\t\n\r".unicodeScalars.contains(scalar)
    }

    /// A character FTS5 takes in a bareword.
    private static func isBareword(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value > 127 || scalar == "_" || ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }

    /// `path:term` column filters written with an indexed property's path become the FTS table's
    /// column names (`c0:term`).
    static func namingColumns(_ text: String, _ columns: [String]) -> String {
        guard text.contains(":") else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false).map { token -> String in
            guard let colon = token.firstIndex(of: ":") else { return String(token) }
            let name = String(token[..<colon])
            guard let index = columns.firstIndex(where: { !$0.isEmpty && $0 == name }) else { return String(token) }
            return "c\(index)" + token[colon...]
        }.joined(separator: " ")
    }
}
