internal import SofaFiles
import SofaCore
import SofaQL
import Foundation

/// The live design documents of a database (in the default collection), in ID order: each one's
/// name (without `_design/`) and body, parsed (one that is not JSON is skipped).
func designDocuments(_ main: SQLiteConnection) throws(SofaError) -> [(name: String, body: JSON)] {
    var found: [(name: String, body: JSON)] = []
    try main.run("SELECT key, body FROM kv_default WHERE key >= '_design/' AND key < '_design0' AND (flags & 1) = 0 ORDER BY key") { row in
        if let body = JSON.tryParse(row.blob(1)) { found.append((String(row.text(0).dropFirst("_design/".count)), body)) }
    }
    return found
}
