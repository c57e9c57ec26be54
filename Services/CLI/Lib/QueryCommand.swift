internal import ArgumentParser
internal import SofaCore
internal import enum SofaQL.N1QL
internal import SofaClient
internal import Foundation
internal import SofaCluster

struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run a N1QL or JSON query, printing one JSON array per row; or translate N1QL (--to-json).",
        discussion: """
            sofa query mydb 'SELECT name.first, age FROM _ WHERE age > $min ORDER BY age' --param min=30
              prints ["Lue",31] … one row per line (MISSING columns print as null); --titles prints
              the column titles first.
            sofa query mydb --json '{"WHAT":[[".name.first"]],"WHERE":[">",[".age"],30]}'
              (--json: the query text is a JSON query tree; an error prints as JSON too)
            sofa query mydb --explain 'SELECT …'   prints the SQL and SQLite's plan
            sofa query --to-json 'SELECT name FROM _ WHERE age > 30'
              prints {"FROM":[{"COLLECTION":"_"}],"WHAT":[[".name"]],"WHERE":[">",[".age"],30]}
            """)

    @Argument(help: "The database and the query text; with --to-json, the N1QL text alone.")
    var arguments: [String] = []

    @Flag(name: .customLong("to-json"), help: "Print the N1QL query's JSON tree (canonical JSON) instead of running it.")
    var toJSON = false

    @Flag(help: "Print the SQL the query compiles to and SQLite's plan instead of rows.")
    var explain = false

    @Flag(help: "Print the column titles (a JSON array) before the rows.")
    var titles = false

    @Option(name: .customLong("param"), help: "A query parameter as name=JSON (a bare word is taken as a string). Repeatable.")
    var parameters: [String] = []

    @OptionGroup var target: CollectionOption
    @OptionGroup var options: GatewayOptions

    func validate() throws {
        if toJSON {
            guard arguments.count == 1 || arguments.count == 2 else { throw ValidationError("expected 'SELECT …'") }
        } else {
            guard arguments.count == 2 else { throw ValidationError("expected DB 'SELECT …' (or --to-json 'SELECT …')") }
        }
    }

    func run() async throws {
        try await reporting {
            if toJSON {
                print(try N1QL.parse(arguments[arguments.count - 1]).canonicalString)
                return
            }
            var bound = JSONObject()
            for parameter in parameters {
                guard let eq = parameter.firstIndex(of: "=") else {
                    throw SofaError(.invalidParameter, "--param takes name=JSON, got '\(parameter)'")
                }
                let text = String(parameter[parameter.index(after: eq)...])
                bound[String(parameter[..<eq])] = JSON.tryParse(text) ?? .string(text)
            }
            let client = try await options.connect()
            defer { client.close() }
            let store = target.store(client, arguments[0])
            let text = arguments[1]
            if explain {
                if options.json {  // --json: the query text is a JSON query tree, not N1QL
                    print(try await store.explain(json: try JSON.parse(text)))
                } else {
                    print(try await store.explain(n1ql: text))
                }
                return
            }
            let result = options.json ? try await store.query(json: try JSON.parse(text), parameters: bound)
                              : try await store.query(n1ql: text, parameters: bound)
            var out = titles ? JSON.array(result.columns.map { .string($0) }).compactString + "\n" : ""
            for row in result.rows {
                out += JSON.array(row.map { $0 ?? .null }).compactString
                out += "\n"
                if out.utf8.count > 1 << 16 {
                    FileHandle.standardOutput.write(Data(out.utf8))
                    out = ""
                }
            }
            FileHandle.standardOutput.write(Data(out.utf8))
        }
    }
}

struct IndexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Create, delete and list a collection's indexes.",
        subcommands: [Create.self, Delete.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an index: value (N1QL expressions), full-text (--fts), or array (--array PATH).",
            discussion: """
                sofa index create mydb byName 'name.last, name.first'
                sofa index create mydb byText --fts 'description' --language en
                sofa index create mydb byLike --array likes        (nested: --array 'a[].b')
                sofa index create mydb byAge --json '[[".age"]]'   (JSON query expressions; errors as JSON)
                """)
        @Argument var db: String
        @Argument var name: String
        @Argument(help: "Comma-separated N1QL expressions (not for --array).") var expressions: String?
        @Flag(help: "A full-text index.") var fts = false
        @Option(help: "Full-text language: en (stemming, the default) or another code (no stemming).") var language: String?
        @Flag(name: .customLong("ignore-diacritics"), help: "Full-text: match letters regardless of accents.") var ignoreDiacritics = false
        @Flag(name: .customLong("no-stemming"), help: "Full-text: index words as written, without stemming.") var noStemming = false
        @Option(name: .customLong("stop-words"),
                help: "Full-text: the words to leave out, separated by spaces or commas, instead of the language's (\"\" for none).")
        var stopWords: String?
        @Option(help: "An array index on this path (e.g. likes or a[].b).") var array: String?
        @OptionGroup var target: CollectionOption
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                var parsed: [JSON] = []
                if let expressions {
                    if options.json {  // --json: the expressions are a JSON array of JSON query expressions
                        guard let array = try JSON.parse(expressions).arrayValue else {
                            throw SofaError(.invalidParameter, "--json expressions must be a JSON array")
                        }
                        parsed = array
                    } else {
                        guard let what = try N1QL.parse(expressions)["WHAT"]?.arrayValue else {
                            throw SofaError(.invalidQuery, "cannot read index expressions '\(expressions)'")
                        }
                        parsed = what
                    }
                }
                let kind: IndexKind = if let array { .array(path: array) } else if fts {
                    .fullText(language: language, ignoreDiacritics: ignoreDiacritics, disableStemming: noStemming,
                              stopWords: stopWords)
                } else { .value }
                let client = try await options.connect()
                defer { client.close() }
                try await target.store(client, db).createIndex(name, kind: kind, expressions: parsed)
                printJSON(.object(["ok": true, "index": .string(name)]))
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an index.")
        @Argument var db: String
        @Argument var name: String
        @OptionGroup var target: CollectionOption
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                try await target.store(client, db).deleteIndex(name)
                printJSON(.object(["ok": true]))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the collection's indexes, one JSON object per line; \"kind\" is value, full-text or array.")
        @Argument var db: String
        @OptionGroup var target: CollectionOption
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                for index in try await target.store(client, db).indexes() { print(Self.listing(index).canonicalString) }
            }
        }

        /// The index as listed: its kind by name (as `index create` says it), not by number.
        static func listing(_ index: IndexDefinition) -> JSON {
            guard var object = index.json.objectValue, let kind = indexKindName(index.kind) else { return index.json }
            object["kind"] = .string(kind)
            return .object(object)
        }
    }
}
