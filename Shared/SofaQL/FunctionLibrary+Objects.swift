internal import SofaCore

/// Object functions. LiteCore has none; these are N1QL's (Couchbase Server's) four readers, with
/// members taken in name order (names compared by their UTF-8 bytes):
///
///     object_length({"b":1,"a":2})   2
///     object_names(…)                ["a","b"]
///     object_pairs(…)                [{"name":"a","val":2},{"name":"b","val":1}]
///     object_values(…)               [2,1]
///
/// MISSING → MISSING, null and non-objects → null.
extension FunctionLibrary {
    static let objects: [SQLFunction] = [
        reader("object_length") { members in .integer(Int64(members.count)) },
        reader("object_names") { members in .json(.array(members.map { .string($0.key) })) },
        reader("object_pairs") { members in
            .json(.array(members.map { .object(JSONObject([("name", .string($0.key)), ("val", $0.value)])) }))
        },
        reader("object_values") { members in .json(.array(members.map(\.value))) },
    ]

    private static func reader(_ name: String,
                               _ read: @escaping @Sendable ([JSONObject.Element]) -> SQLValue) -> SQLFunction {
        function(name, 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            guard case .json(.object(let object)) = args[0] else { return .null }
            return read(object.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
        }
    }
}
