internal import SofaQL
internal import SofaCore

/// Which index a Mango find is answered by, chosen as CouchDB chooses (`mango_idx_view`): a JSON
/// index whose every field the selector constrains (outside `$or`/`$not`/`$nor`, and not only by
/// `$ne`, `$nin` or `$exists: false`), and whose leading fields the sort names in order; the one
/// with the most fields, then the first by design document and name; `_all_docs` when none is,
/// which cannot sort by anything but `_id`. `use_index` names the one to take when it is usable
/// (a partial index is taken only so).
/// Sofa's SQLite picks its own plan; the choice is what `_explain`, the warnings and the sort
/// refusal say, as CouchDB's would.
struct MangoIndexChoice {
    /// The index chosen (nil: `_all_docs`).
    var index: JSON?
    /// The warnings of the answer (CouchDB's words).
    var warnings: [String] = []

    static let noIndexWarning = "No matching index found, create an index to optimize query time."

    /// The choice among `indexes` (Mango's listing entries, `_all_docs` left out), or the
    /// refusal of a sort no index can serve.
    static func choose(_ find: Mango.Find, useIndex: JSON?, indexes: [JSON]) throws -> MangoIndexChoice {
        let constrained = Self.constrainedFields(find.selector)
        let pinned = Self.constrainedFields(find.selector, equalityOnly: true)
        let sortFields = find.sort.map(\.field)
        func fields(_ index: JSON) -> [String] {
            (index["def"]?["fields"]?.arrayValue ?? []).compactMap { $0.objectValue?.keys.first ?? $0.stringValue }
        }
        func usable(_ index: JSON) -> Bool {
            let columns = fields(index)
            // Every field but those the sort names (and `_id`, `_rev`) is constrained…
            let required = columns.filter { !sortFields.contains($0) && $0 != "_id" && $0 != "_rev" }
            guard !columns.isEmpty, required.allSatisfy(constrained.contains) else { return false }
            guard !sortFields.isEmpty else { return true }
            // …and the sort's fields follow one another in the index, after fields the selector
            // pins to one value (CouchDB's `can_use_sort`).
            guard let start = columns.firstIndex(of: sortFields[0]), columns[..<start].allSatisfy(pinned.contains) else { return false }
            return Array(columns.dropFirst(start).prefix(sortFields.count)) == sortFields
        }
        func identity(_ index: JSON) -> String { (index["ddoc"]?.stringValue ?? "") + "/" + (index["name"]?.stringValue ?? "") }
        var choice = MangoIndexChoice()
        if let useIndex {
            let named = Self.named(useIndex, in: indexes)
            if let named, usable(named) {
                choice.index = named
                return choice
            }
            let written = useIndex.arrayValue.map { $0.compactMap(\.stringValue).joined(separator: ", ") } ?? useIndex.stringValue ?? ""
            choice.warnings.append(named == nil
                ? "\(written) is not a valid index for this query."
                : "\(written) was not used because it does not contain a valid index for this query.")
        }
        // A partial index serves only a find that names it (CouchDB's rule).
        let candidates = indexes.filter { usable($0) && $0["def"]?["partial_filter_selector"] == nil }.sorted { a, b in
            let (fa, fb) = (fields(a).count, fields(b).count)
            return fa != fb ? fa > fb : identity(a) < identity(b)
        }
        if let best = candidates.first {
            choice.index = best
            return choice
        }
        if !sortFields.isEmpty, sortFields != ["_id"] {
            throw CouchError(.badRequest, "no_usable_index", "No index exists for this sort, try indexing by the sort fields.")
        }
        choice.warnings.append(Self.noIndexWarning)
        return choice
    }

    /// The index `use_index` names: `"ddoc"` or `["ddoc", "name"]`, the design document with or
    /// without `_design/`.
    static func named(_ useIndex: JSON, in indexes: [JSON]) -> JSON? {
        let parts = useIndex.arrayValue?.compactMap(\.stringValue) ?? useIndex.stringValue.map { [$0] } ?? []
        guard let first = parts.first else { return nil }
        let ddoc = first.hasPrefix("_design/") ? first : "_design/" + first
        return indexes.first { $0["ddoc"]?.stringValue == ddoc && (parts.count < 2 || $0["name"]?.stringValue == parts[1]) }
    }

    /// The fields a selector constrains in a way an index range serves: at its top, or under
    /// `$and`, by a value or by operators other than `$ne`, `$nin`, `$exists: false` alone (with
    /// `equalityOnly`, the fields it pins to one value: a value, or `$eq`).
    static func constrainedFields(_ selector: JSON, prefix: String = "", equalityOnly: Bool = false) -> Set<String> {
        guard let object = selector.objectValue else { return [] }
        var found: Set<String> = []
        for (key, value) in object {
            if key == "$and" {
                for part in value.arrayValue ?? [] { found.formUnion(constrainedFields(part, prefix: prefix, equalityOnly: equalityOnly)) }
            } else if !key.hasPrefix("$") {
                let field = prefix.isEmpty ? key : prefix + "." + key
                if let operators = value.objectValue, operators.keys.contains(where: { $0.hasPrefix("$") }) {
                    let ranged = operators.contains { op, operand in
                        equalityOnly ? op == "$eq"
                            : !["$ne", "$nin", "$or", "$nor", "$not"].contains(op) && !(op == "$exists" && operand.boolValue == false)
                    }
                    if ranged { found.insert(field) }
                } else if let inner = value.objectValue, !inner.isEmpty {
                    found.formUnion(constrainedFields(value, prefix: field, equalityOnly: equalityOnly))
                } else {
                    found.insert(field)
                }
            }
        }
        return found
    }
}
