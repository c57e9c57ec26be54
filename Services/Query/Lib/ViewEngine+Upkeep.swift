internal import SofaFiles
internal import SofaCore
public import SofaWire
import SofaQL
import Foundation

/// The views' upkeep (`DesignCall.cleanup`, `.info`, `.compact`): CouchDB's `_view_cleanup`,
/// `_design/NAME/_info` and `_compact/NAME`.
extension ViewEngine {
    public func handle(_ request: Request, _ call: DesignCall) async -> Response {
        do throws(SofaError) {
            let answer = try await state.run { (state) throws(SofaError) -> JSON in
                let (main, views) = try self.connections(&state, request.database)
                switch call.kind {
                case .cleanup: return try Self.cleanup(&state, request.database, main, views)
                case .info: return try self.info(request.database, call.design, main, views)
                case .compact:
                    try ViewIndex.compact(on: views)
                    return ["ok": true]
                default: throw SofaError(.invalidParameter, "design call \(call.kind.rawValue) is not the views'")
                }
            }
            return .ok(request.id, .json(answer))
        } catch {
            return .failure(request.id, error)
        }
    }

    /// The views the database's design documents define now, by "design/view", with their signatures.
    static func definedViews(_ main: SQLiteConnection) throws(SofaError) -> [String: String] {
        var defined: [String: String] = [:]
        for (design, body) in try designDocuments(main) {
            for (view, code) in body["views"]?.objectValue ?? [:] {
                guard let map = code["map"]?.stringValue else { continue }
                defined[design + "/" + view] = signature(map: map, reduce: code["reduce"]?.stringValue)
                    + MapInput(design: body).signature
            }
        }
        return defined
    }

    /// Removes the indexes of views no design document defines (or defines with other code).
    private static func cleanup(_ state: inout State, _ database: String, _ main: SQLiteConnection,
                                _ views: SQLiteConnection) throws(SofaError) -> JSON {
        let defined = try definedViews(main)
        for index in try ViewIndex.stored(on: views) where defined[index.name] != index.signature {
            try ViewIndex.drop(index.name, on: views)
            state.indexes[database + "\u{0}" + index.name] = nil
        }
        return ["ok": true]
    }

    /// A design document's views' index as CouchDB describes it.
    private func info(_ database: String, _ design: String, _ main: SQLiteConnection,
                      _ views: SQLiteConnection) throws(SofaError) -> JSON {
        let defined = try Self.definedViews(main).filter { $0.key.hasPrefix(design + "/") }
        var exists = !defined.isEmpty
        if !exists { exists = try designExists(main, design) }
        guard exists else {
            throw SofaError(.notFound, "no design document '_design/\(design)'")
        }
        let stored = try ViewIndex.stored(on: views).filter { defined[$0.name] == $0.signature }
        let signature = (try? sha256(Array(defined.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }
            .joined(separator: ",").utf8)).hexString) ?? ""
        let file = StorageLayout.directory(of: database, in: dataDirectory).appendingPathComponent("views.sqlite3")
        let bytes = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        let updated = stored.count == defined.count ? stored.map(\.lastSequence).min() ?? 0 : 0
        return ["name": .string(design), "view_index": [
            "signature": .string(String(signature.prefix(32))), "language": "javascript",
            "sizes": ["file": .int(Int64(bytes)), "active": .int(Int64(bytes)), "external": 0],
            "update_seq": .int(Int64(updated)), "purge_seq": 0, "updater_running": false, "compact_running": false,
            "waiting_clients": 0, "waiting_commit": false, "rows": .int(Int64(stored.map(\.rowCount).reduce(0, +))),
        ]]
    }

    private func designExists(_ main: SQLiteConnection, _ design: String) throws(SofaError) -> Bool {
        var found = false
        try main.run("SELECT 1 FROM kv_default WHERE key = ? AND (flags & 1) = 0", [.text("_design/" + design)]) { _ in found = true }
        return found
    }
}
