public import SofaCore
internal import Foundation

/// What CouchDB checks in a design document before it stores it (`couch_mrview`'s rules, in its
/// words; `.invalidDesignDoc`, which the HTTP API answers 400 `invalid_design_doc`): the type of
/// each field it reads, a map function in every view, and only the built-in reduce functions it
/// has. The gateway checks every design document written (after who may write it), sofa-http
/// each of a bulk's in its place. Whether the functions compile is found when a view is first
/// queried.
public enum DesignDocumentRules {
    /// A step of a field's path: a member by name, or every member (`nil`).
    private typealias Step = (key: String?, types: [String])

    public static func check(_ body: JSONObject) throws(SofaError) {
        let map = body["language"]?.stringValue == "query" ? "object" : "string"
        let paths: [[Step]] = [
            [("filters", ["object"]), (nil, ["object", "string"])],
            [("language", ["string"])],
            [("lists", ["object"]), (nil, ["object", "string"])],
            [("options", ["object"])],
            [("options", ["object"]), ("include_design", ["boolean"])],
            [("options", ["object"]), ("local_seq", ["boolean"])],
            [("options", ["object"]), ("partitioned", ["boolean"])],
            [("rewrites", ["string", "array"])],
            [("shows", ["object"]), (nil, ["object", "string"])],
            [("updates", ["object"]), (nil, ["object", "string"])],
            [("validate_doc_update", ["string"])],
            [("views", ["object"]), ("lib", ["object"])],
            [("views", ["object"]), (nil, ["object"]), ("map", [map])],
            [("views", ["object"]), (nil, ["object"]), ("reduce", ["string"])],
        ]
        for path in paths { try check(.object(body), path[...], at: []) }
        guard case .object(let views)? = body["views"] else { return }
        for (name, view) in views where name != "lib" {
            guard view["map"] != nil else {
                throw SofaError(.invalidDesignDoc, "View `\(name)` must contain map function")
            }
            let reduce = view["reduce"]?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if reduce.hasPrefix("_"), BuiltinReduce(named: reduce) == nil {
                throw SofaError(.invalidDesignDoc, "`\(reduce)` is not a supported reduce function.")
            }
        }
    }

    private static func check(_ value: JSON, _ steps: ArraySlice<Step>, at path: [String]) throws(SofaError) {
        guard let step = steps.first, case .object(let members) = value else { return }
        let named: [(String, JSON)] = step.key.map { key in members[key].map { [(key, $0)] } ?? [] } ?? Array(members)
        for (key, member) in named {
            guard step.types.contains(where: { matches(member, $0) }) else {
                throw SofaError(.invalidDesignDoc,
                                 "`\((path + [key]).joined(separator: "."))` field must have \(step.types.joined(separator: " or ")) type")
            }
            try check(member, steps.dropFirst(), at: path + [key])
        }
    }

    private static func matches(_ value: JSON, _ type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("string", .string), ("array", .array), ("boolean", .bool): return true
        default: return false
        }
    }
}
