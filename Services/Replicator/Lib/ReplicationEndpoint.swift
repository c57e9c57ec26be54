public import SofaCore

// `ReplicationEndpoint` (how "db" and "tcp://host:port/db" are read) is in SofaCore: the CLI reads
// them too.

/// The ID of a replication: derived from source, target and filter (a push A → B and a pull of
/// B from A are one and the same replication), so a restarted replication finds its checkpoints.
/// Hex SHA-1 of `source \n target \n docIDs (sorted, comma-separated) \n filter`, then
/// `\n collection` for a collection other than the default one, then for a design document's
/// filter `\n collection \n ddoc/name \n query params` (keys sorted), then for a start sequence
/// `\n since N`.
public enum ReplicationID {
    public static func derive(source: ReplicationEndpoint, target: ReplicationEndpoint, docIDs: [String],
                              filter: String, collection: String = "", designFilter: String = "",
                              queryParams: JSONObject = [:], since: UInt64 = 0) -> String {
        var parts = [source.description, target.description, docIDs.sorted().joined(separator: ","), filter]
        if !collection.isEmpty || !designFilter.isEmpty { parts.append(collection) }  // the default collection keeps the IDs it had
        if !designFilter.isEmpty {
            let sorted = JSONObject(queryParams.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
            parts += [designFilter, JSON.object(sorted).compactString]
        }
        if since > 0 { parts.append("since \(since)") }
        return hexSHA1(parts.joined(separator: "\n"))
    }

    /// The SHA-1 of `text`'s UTF-8, in lower-case hex.
    static func hexSHA1(_ text: String) -> String {
        let digest = SHA1Stream()
        digest.update(Array(text.utf8))
        return digest.finish().map { byte in
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
        }.joined()
    }

    /// The `_local` document holding the checkpoint on both sides.
    public static func checkpointDocument(_ id: String) -> String { "_local/replication-\(id)" }
}
