internal import SofaFiles
internal import SofaCore
public import SofaWire
import SofaQL
import SofaRows
import SofaServer
public import Foundation
public import Logging

/// What a query worker does with design documents' validation functions and changes filters
/// (`DesignCall.validate`, `.filter`): read the functions from the database's design documents
/// (and, to validate, each document's current revision) on a read-only connection, and run them
/// in a `sofa-js` process of its own — so a write's validation never waits behind a view being
/// built. A function that runs too long is stopped: that call fails, nothing else stalls.
public final class DesignFunctions: Sendable {
    private let dataDirectory: URL
    private let logger: Logger
    private let state = Confined(State(), label: "sofa.query.design")
    /// How long the functions may take for one call.
    static let timeout: Duration = .seconds(5)
    /// How long compiling a design document's functions may take, all of them.
    static let compileBudget: Duration = .seconds(8)

    struct State {
        var reads = ReadConnections()
        var js = JavaScriptProcess()
    }

    public init(dataDirectory: URL, logger: Logger) {
        self.dataDirectory = dataDirectory
        self.logger = logger
    }

    public func handle(_ request: Request, _ call: DesignCall) async -> Response {
        do throws(SofaError) {
            let answer = try await state.run { (state) throws(SofaError) -> JSON in
                if call.kind == .compile { return try Self.compile(&state, call, database: request.database) }
                let (main, _) = try state.reads.connection(request.database, in: self.dataDirectory, queue: self.state.queue)
                try state.js.isolate(for: request.database)
                switch call.kind {
                case .validate: return try self.validate(&state, main, request.collection, call)
                case .filter: return try self.filter(&state, main, call)
                default: throw SofaError(.invalidParameter, "design call \(call.kind.rawValue) is the views' (ViewEngine)")
                }
            }
            return .ok(request.id, .json(answer))
        } catch {
            return .failure(request.id, error)
        }
    }

    /// Compiles each design document's views' JavaScript in a fresh heap (left fresh after): the
    /// first that does not compile fails the call, in CouchDB's words.
    private static func compile(_ state: inout State, _ call: DesignCall, database: String) throws(SofaError) -> JSON {
        defer { try? state.js.reset() }
        try state.js.reset(for: database)
        // The whole call has one budget: many sources that run at compile time cannot hold the
        // worker's JavaScript (every database's validation and filters) for long.
        let end = ContinuousClock.now + compileBudget
        for document in call.documents {
            guard let views = document["views"]?.objectValue else { continue }
            for (name, view) in views.sorted(by: { $0.key < $1.key }) where name != "lib" {
                var functions: [(kind: String, source: String)] = []
                if let map = view["map"]?.stringValue { functions.append(("map", map)) }
                if let reduce = view["reduce"]?.stringValue, BuiltinReduce(named: reduce) == nil,
                   !reduce.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("_") {
                    functions.append(("reduce", reduce))
                }
                for function in functions {
                    let left = end - ContinuousClock.now
                    guard left > .zero else { throw SofaError(.timeout, "compiling the design document took too long") }
                    do throws(SofaError) {
                        try state.js.add(function: function.source, timeout: min(timeout, left))
                    } catch where error.is(.invalidQuery) {
                        let reason = error.message.replacingOccurrences(of: "the function does not compile: ", with: "")
                        throw SofaError(.compilationError, "Compilation of the \(function.kind) function in the '\(name)' view failed: \(reason)")
                    }
                }
            }
        }
        return .null
    }

    /// Every design document's `validate_doc_update` on each new revision, with the revision it
    /// follows as `oldDoc`: the current one, or the conflicting leaf its `_rev` names (null for a
    /// new or deleted document): per document, null or the first refusal.
    private func validate(_ state: inout State, _ main: SQLiteConnection, _ collection: String,
                          _ call: DesignCall) throws(SofaError) -> JSON {
        let sources: [JSON] = try designDocuments(main).compactMap { $0.body["validate_doc_update"]?.stringValue.map { .string($0) } }
        guard !sources.isEmpty else { return .array(call.documents.map { _ in .null }) }
        let table = CollectionName.table(forKeyStore: try CollectionName(parsing: collection).keyStore)
        var pairs: [JSON] = []
        for document in call.documents {
            var old = JSON.null
            if let id = document["_id"]?.stringValue {
                try main.run("SELECT core_revid(version), body FROM \(table) WHERE key = ? AND (flags & 1) = 0", [.text(id)]) { row in
                    var (rev, body) = (row.text(0), row.blob(1))
                    if let given = document["_rev"]?.stringValue, given != rev,
                       let leaf = (try? DocumentRow.load(main, table: table, id: id, statement: "revision of " + table))??
                        .body(ofLiveRevision: given, id: id) {
                        (rev, body) = (given, leaf)
                    }
                    var shown = JSONObject([("_id", .string(id)), ("_rev", .string(rev))])
                    for (key, value) in JSON.tryParse(body)?.objectValue ?? [:] { shown[key] = value }
                    old = .object(shown)
                }
            }
            pairs.append([document, old])
        }
        let answer = try state.js.call(["validate_docs", .array(sources), .array(pairs), call.context["userCtx"] ?? .null,
                                        call.context["secObj"] ?? .null], timeout: Self.timeout)
        log(answer, "validate_doc_update")
        guard let verdicts = answer.result.arrayValue, verdicts.count == call.documents.count else {
            throw SofaError(.invalidQuery, "validate_doc_update failed: \(answer.result["reason"]?.stringValue ?? answer.result.compactString)")
        }
        return .array(verdicts)
    }

    /// `_design/<design>`'s filter `name` on each document: per document, true or false. The
    /// name `_view/<view>` is CouchDB's `_view` filter: a document passes when the view's map
    /// function emits at least one row for it.
    private func filter(_ state: inout State, _ main: SQLiteConnection, _ call: DesignCall) throws(SofaError) -> JSON {
        var source: String?
        var lib: JSON?
        let view = call.name.hasPrefix(DesignCall.viewFilterPrefix) ? String(call.name.dropFirst(DesignCall.viewFilterPrefix.count)) : nil
        try main.run("SELECT body FROM kv_default WHERE key = ? AND (flags & 1) = 0", [.text("_design/" + call.design)]) {
            let design = JSON.tryParse($0.blob(0))
            if let view {
                source = design?["views"]?[view]?["map"]?.stringValue.map(Self.emitting)
                lib = design?["views"]?["lib"].flatMap { $0.objectValue != nil ? $0 : nil }
            } else {
                source = design?["filters"]?[call.name]?.stringValue
            }
        }
        guard let source else {
            throw SofaError(.notFound, view.map { "no view '\($0)' in design document '_design/\(call.design)'" }
                ?? "no filter '\(call.name)' in design document '_design/\(call.design)'")
        }
        guard !call.documents.isEmpty else { return [] }
        // The map may `require` its design document's `views.lib`, as it does in its view.
        if let lib { try state.js.addLibrary(lib) }
        let answer = try state.js.call(["filter", .string(source), .array(call.documents), call.context], timeout: Self.timeout)
        log(answer, "filter")
        guard let passed = answer.result.arrayValue?.last?.arrayValue, passed.count == call.documents.count else {
            throw SofaError(.invalidQuery, "the filter failed: \(answer.result["reason"]?.stringValue ?? answer.result.compactString)")
        }
        return .array(passed.map { .bool($0.boolValue == true) })
    }

    /// A filter made of a map function: true when the map emits for the document. The map is
    /// written inside the filter, so the `emit` it calls is the filter's own.
    static func emitting(_ map: String) -> String {
        var text = map
        while let last = text.last, ";\t\n\r ".contains(last) { text.removeLast() }
        return "function (doc, req) { var emitted = false; var emit = function () { emitted = true; };\n"
            + "(\(text)\n)(doc); return emitted; }"
    }

    private func log(_ answer: JavaScriptProcess.Answer, _ function: String) {
        for line in answer.logs { logger.info("\(function) log", metadata: ["message": "\(line)"]) }
    }
}
