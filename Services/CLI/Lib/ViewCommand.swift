internal import ArgumentParser
internal import SofaClient
internal import SofaCluster

/// `sofa view DB ddoc/name`: a design document's view, as CouchDB answers it.
struct ViewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view", abstract: "Query a view of a design document (its rows, or its reductions).",
        discussion: "Keys are JSON: --key '\"cat\"', --start-key '[2020]'. Prints CouchDB's answer as JSON.")
    @Argument var db: String
    @Argument(help: "The view: DESIGN/NAME (of _design/DESIGN).") var view: String
    @Option(help: "Only this key (JSON).") var key: String?
    @Option(name: .customLong("start-key"), help: "From this key (JSON).") var startKey: String?
    @Option(name: .customLong("end-key"), help: "To this key (JSON).") var endKey: String?
    @Option(name: .customLong("group-level"), help: "Group the reduction by the first N elements of array keys.") var groupLevel: Int?
    @Flag(help: "Group the reduction by whole key.") var group = false
    @Option(help: "false: list the rows of a view with a reduce function (true on a view without one is refused).") var reduce: Bool?
    @Flag(name: .customLong("include-docs"), help: "Add each row's document.") var includeDocs = false
    @Flag(help: "Newest keys first.") var descending = false
    @Option(help: "At most this many rows.") var limit: Int?
    @Option(help: "Skip this many rows first.") var skip: Int?
    @Option(help: "true (bring the index up to date first), false or lazy.") var update: String?
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            var given = JSONObject()
            for (name, text) in [("key", key), ("startkey", startKey), ("endkey", endKey)] {
                guard let text else { continue }
                guard let value = JSON.tryParse(text) else {
                    throw SofaError(.invalidParameter, "--\(name == "key" ? "key" : name == "startkey" ? "start-key" : "end-key") takes JSON, not \(text)")
                }
                given[name] = value
            }
            if let groupLevel { given["group_level"] = .int(Int64(groupLevel)) }
            if group { given["group"] = true }
            if let reduce { given["reduce"] = .bool(reduce) }
            if includeDocs { given["include_docs"] = true }
            if descending { given["descending"] = true }
            if let limit { given["limit"] = .int(Int64(limit)) }
            if let skip { given["skip"] = .int(Int64(skip)) }
            if let update { given["update"] = .string(update) }
            let client = try await options.connect()
            defer { client.close() }
            printJSON(try await client.database(db).view(view, options: given))
        }
    }
}
