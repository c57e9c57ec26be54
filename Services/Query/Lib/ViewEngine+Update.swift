internal import SofaFiles
internal import SofaCore
import SofaQL
import SofaServer
import Logging

/// Bringing a view's index up to date: the documents changed since its last sequence, read in
/// batches, mapped by `sofa-js` and applied. The child maps one batch while this thread applies
/// the one before (two cores at work, not one after the other), and documents go to it as
/// their stored bytes with `_id` and `_rev` put in front: no document is parsed here.
extension ViewEngine {
    /// One document changed since the index's last sequence.
    struct Changed {
        var id: String
        var sequence: UInt64
        /// Its bytes for the map function (nil: it has no rows — deleted, a design document, or
        /// a body that is not an object).
        var mappable: [UInt8]?
    }

    /// Documents applied per transaction once the index has rows (a first build is one transaction).
    static let perTransaction = 5000

    /// What the design document's `options` give its map functions: design documents too
    /// (`include_design`), and each document's sequence as `_local_seq` (`local_seq`).
    struct MapInput: Sendable, Equatable {
        var includeDesign = false
        var localSeq = false
        /// The design document's `views.lib`: the modules its map functions may `require`.
        var lib: JSON?

        init(design: JSON?) {
            includeDesign = design?["options"]?["include_design"]?.boolValue == true
            localSeq = design?["options"]?["local_seq"]?.boolValue == true
            if let lib = design?["views"]?["lib"], lib.objectValue != nil { self.lib = lib }
        }

        /// What the input adds to a view's signature (nothing for the default): a change of the
        /// library builds the views again, as CouchDB's signature covers it.
        var signature: String {
            (includeDesign ? "d" : "") + (localSeq ? "l" : "")
                + (lib.map { "L" + ((try? sha256($0.canonicalBytes()).hexString) ?? $0.compactString) } ?? "")
        }
    }

    func bringUpToDate(_ state: inout State, _ index: ViewIndex, _ main: SQLiteConnection, map: String,
                       input: MapInput, database: String) throws(SofaError) {
        if try state.js.isolate(for: database) { state.loaded = nil }
        let loading = map + input.signature
        if state.loaded != loading {
            try state.js.reset(for: database)
            state.loaded = nil
            if let lib = input.lib { try state.js.addLibrary(lib) }
            try state.js.add(function: map)
            state.loaded = loading
        }
        // Each transaction holds the views file's write lock (see `whileUpdating`).
        while try index.whileUpdating({ () throws(SofaError) -> Bool in try updateBatches(&state, index, main, input) }) {}
    }

    /// Maps and applies batches of changed documents, pipelined; true when there may be more.
    private func updateBatches(_ state: inout State, _ index: ViewIndex, _ main: SQLiteConnection,
                               _ input: MapInput) throws(SofaError) -> Bool {
        // A first build: no document has rows yet, so none need removing first.
        let fresh = index.lastSequence == 0
        var current = try Self.changed(main, after: index.lastSequence, input)
        guard !current.isEmpty else { return false }
        var sent = send(&state, current)
        var applied = 0
        while true {
            var rows = sent ? try mappedBatch(&state, current) : nil
            if rows == nil {
                // One by one, so that only the documents the function fails on are left out (a batch
                // of one that failed is not tried again).
                let mappable = current.filter { $0.mappable != nil }
                if mappable.count == 1 && sent {
                    rows = current.map { _ in [] }
                    logger.warning("map function failed for a document: skipped", metadata: ["doc": "\(mappable[0].id)"])
                } else {
                    var each: [[(key: JSON, value: JSON)]] = []
                    for document in current { each.append(try mapped(&state, document)) }
                    rows = each
                }
            }
            applied += current.count
            let full = current.count == Self.batch
            let goOn = full && (fresh || applied < Self.perTransaction)
            let next = goOn ? try Self.changed(main, after: current.last!.sequence, input) : []
            if !next.isEmpty { sent = send(&state, next) }
            try index.apply(zip(current, rows!).map { (id: $0.id, rows: $1) }, through: current.last!.sequence, fresh: fresh)
            // Stopped at this transaction's share: the next one goes on.
            guard !next.isEmpty else { return full && !goOn }
            current = next
        }
    }

    /// The next batch of documents changed after `sequence`.
    static func changed(_ main: SQLiteConnection, after sequence: UInt64, _ input: MapInput) throws(SofaError) -> [Changed] {
        var documents: [Changed] = []
        // (A conflicted document's revision tree only: the rest are not read.)
        try main.run("SELECT key, sequence, flags, core_revid(version), body, CASE WHEN flags & 2 THEN extra END FROM kv_default "
                     + "WHERE sequence > ? ORDER BY sequence LIMIT ?",
                     [.integer(Int64(sequence)), .integer(Int64(batch))]) { row in
            let id = row.text(0)
            var mappable: [UInt8]?
            if row.integer(2) & 1 == 0, input.includeDesign || !id.hasPrefix("_design/") {
                let conflicts = row.integer(2) & Int64(DocumentFlags.conflicted.rawValue) != 0
                    ? Self.conflicts(extra: row.blob(5), body: row.blob(4)) : []
                mappable = Self.document(id: id, rev: row.text(3), body: row.blob(4), conflicts: conflicts,
                                         localSeq: input.localSeq ? UInt64(row.integer(1)) : nil)
            }
            documents.append(Changed(id: id, sequence: UInt64(row.integer(1)), mappable: mappable))
        }
        return documents
    }

    /// A stored body (compact JSON) as the map function sees it, `_id` and `_rev` first, then
    /// `_conflicts` (the other live leaves, as CouchDB gives a map function) when there are any
    /// and `_local_seq` when asked; nil when it is not an object.
    static func document(id: String, rev: String, body: [UInt8], conflicts: [String] = [], localSeq: UInt64? = nil) -> [UInt8]? {
        guard body.first == UInt8(ascii: "{"), body.last == UInt8(ascii: "}") else { return nil }
        var out = Array(#"{"_id":"#.utf8) + JSON.string(id).compactBytes() + Array(#","_rev":"#.utf8) + JSON.string(rev).compactBytes()
        if !conflicts.isEmpty { out += Array(#","_conflicts":"#.utf8) + JSON.array(conflicts.map { .string($0) }).compactBytes() }
        if let localSeq { out += Array(#","_local_seq":\#(localSeq)"#.utf8) }
        out += body.count > 2 ? [UInt8(ascii: ",")] + body.dropFirst() : [UInt8(ascii: "}")]
        return out
    }

    /// The live leaves other than the current revision, from a conflicted row's revision tree
    /// (none for a version-vector document: its `extra` holds the remote versions, which a map
    /// function is not shown).
    static func conflicts(extra: [UInt8], body: [UInt8]) -> [String] {
        guard !extra.isEmpty, let tree = try? RevTree(encoded: extra, currentBody: body) else { return [] }
        return tree.conflicts.map(\.revID.ascii)
    }

    /// Sends a batch's `map_docs` command; false when the child could not take it.
    private func send(_ state: inout State, _ batch: [Changed]) -> Bool {
        var command = Array(#"["map_docs",["#.utf8)
        var first = true
        for document in batch {
            guard let bytes = document.mappable else { continue }
            if !first { command.append(UInt8(ascii: ",")) }
            first = false
            command += bytes
        }
        command += Array("]]".utf8)
        return (try? state.js.send(command)) != nil
    }

    /// The rows of each document of the batch sent (a document the function throws on has
    /// none, logged); nil when the batch as a whole did not finish in time (the child was
    /// stopped: the documents are then mapped one by one, so that only those it fails on are
    /// left out, and one it runs out of time on fails the update); a batch of one document that
    /// ran out of time fails it at once.
    private func mappedBatch(_ state: inout State, _ batch: [Changed]) throws(SofaError) -> [[(key: JSON, value: JSON)]]? {
        let mappable = batch.filter { $0.mappable != nil }
        let answer: JavaScriptProcess.Answer
        do throws(SofaError) {
            answer = try state.js.receive(until: ContinuousClock.now + Self.mapTimeout)
        } catch where error.is(.timeout) && mappable.count == 1 {
            // The one document it was mapping took too long (see `mapped`).
            throw Self.tooLong(mappable[0].id)
        } catch {
            return nil
        }
        guard let perDocument = answer.result.arrayValue, perDocument.count == mappable.count else { return nil }
        for line in answer.logs { logger.info("view log", metadata: ["message": "\(line)"]) }
        var results = perDocument.makeIterator()
        return batch.map { document in
            guard document.mappable != nil, let result = results.next() else { return [] }
            return Self.rows(result, of: document.id, logger)
        }
    }

    /// The rows of one document's answer (the first function's): none, logged, for an error.
    static func rows(_ result: JSON, of id: String, _ logger: Logger) -> [(key: JSON, value: JSON)] {
        guard let rows = result.arrayValue?.first?.arrayValue else {
            logger.warning("map function failed for a document: skipped", metadata: [
                "doc": "\(id)", "reason": "\(result.arrayValue?.first?["reason"]?.stringValue ?? result.compactString)"])
            return []
        }
        return rows.compactMap { row in
            guard let pair = row.arrayValue, pair.count == 2 else { return nil }
            return (pair[0], pair[1])
        }
    }

    /// The map function took longer than its time for a document: the update fails.
    static func tooLong(_ id: String) -> SofaError {
        SofaError(.timeout, "the map function did not finish within \(mapTimeout) for document '\(id)': the view is not updated (os_process_error)")
    }

    /// One document's rows; none (logged) when the function throws for it, or makes its process
    /// die. A function that takes too long for one document fails the update, as CouchDB's does
    /// (`timeout`): the view stays where it was, and the worker is not held by a function that
    /// may never end, document after document.
    private func mapped(_ state: inout State, _ document: Changed) throws(SofaError) -> [(key: JSON, value: JSON)] {
        guard let bytes = document.mappable else { return [] }
        do throws(SofaError) {
            try state.js.send(Array(#"["map_doc","#.utf8) + bytes + [UInt8(ascii: "]")])
            let answer = try state.js.receive(until: ContinuousClock.now + Self.mapTimeout)
            for line in answer.logs { logger.info("view log", metadata: ["doc": "\(document.id)", "message": "\(line)"]) }
            return Self.rows(answer.result, of: document.id, logger)
        } catch where error.is(.timeout) {
            throw Self.tooLong(document.id)
        } catch {
            logger.warning("map function failed for a document: skipped", metadata: ["doc": "\(document.id)", "reason": "\(error.message)"])
            return []
        }
    }
}
