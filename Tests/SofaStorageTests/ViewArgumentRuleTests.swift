import SofaCore
@testable import SofaQuery
import Testing

/// A view query's options as CouchDB checks them (`couch_mrview_util`'s rules, in its words):
/// each refusal with its message, and what is taken.
struct ViewArgumentRuleTests {
    @Test(arguments: [
        (#"{"group":true}"#, false, "Invalid use of grouping on a map view."),
        (#"{"group_level":1}"#, false, "Invalid use of grouping on a map view."),
        (#"{"reduce":true}"#, false, "Reduce is invalid for map-only views."),
        (#"{"reduce":"yes"}"#, true, "Invalid `reduce` value."),
        (#"{"reduce":false,"group":true}"#, true, "Invalid use of grouping on a map view."),
        (#"{"include_docs":true}"#, true, "`include_docs` is invalid for reduce"),
        (#"{"conflicts":true}"#, true, "`conflicts` is invalid for reduce views."),
        (#"{"keys":[1,2]}"#, true, "Multi-key fetchs for reduce views must use `group=true`"),
        (#"{"keys":1}"#, false, "`keys` must be an array of strings."),
        (#"{"keys":[1],"key":1}"#, false, "`start_key` is incompatible with `keys`"),
        (#"{"keys":[1],"endkey":1}"#, false, "`end_key` is incompatible with `keys`"),
        (#"{"startkey":2,"endkey":1}"#, false,
         "No rows can match your key range, reverse your start_key and end_key or set descending=true"),
        (#"{"startkey":1,"endkey":2,"descending":true}"#, false,
         "No rows can match your key range, reverse your start_key and end_key or set descending=false"),
        (#"{"startkey":1,"endkey":1.0,"startkey_docid":"b","endkey_docid":"a"}"#, false,
         "No rows can match your key range, reverse your start_key and end_key or set descending=true"),
        (#"{"startkey_docid":5}"#, false, "`start_key_docid` must be a string."),
        (#"{"limit":-1}"#, false, "`limit` must be a positive integer."),
        (#"{"skip":-1}"#, false, "`skip` must be >= 0"),
        (#"{"stale":"false"}"#, false, "Invalid value for `stale`."),
        (#"{"update":"soon"}"#, false, "Invalid value for `update`."),
    ])
    func refused(options: String, reduces: Bool, message: String) throws {
        let given = try #require(JSON.tryParse(options)?.objectValue)
        do throws(SofaError) {
            _ = try ViewEngine.options(given, reduces: reduces)
            Issue.record("\(options) was taken")
        } catch {
            #expect(error.sofaCode == .invalidParameter && error.message == message, "\(options): \(error)")
        }
    }

    @Test(arguments: [
        (#"{"group":true,"keys":[1,2]}"#, true),
        (#"{"reduce":false,"keys":[1,2],"include_docs":true}"#, true),
        (#"{"startkey":1,"endkey":1,"startkey_docid":"z","endkey_docid":"a"}"#, false),  // equal keys: never refused
        (#"{"startkey":2,"endkey":1,"descending":true}"#, false),
        (#"{"keys":[],"startkey":1}"#, false),
        (#"{"stale":"ok","update":"lazy","group_level":0}"#, false),
    ])
    func taken(options: String, reduces: Bool) throws {
        let given = try #require(JSON.tryParse(options)?.objectValue)
        #expect(throws: Never.self) { _ = try ViewEngine.options(given, reduces: reduces) }
    }

    @Test func staleNamesTheUpdate() {
        #expect(ViewEngine.updateMode(["stale": "ok"]) == "false")
        #expect(ViewEngine.updateMode(["stale": "update_after"]) == "lazy")
        #expect(ViewEngine.updateMode(["update": "lazy"]) == "lazy")
        #expect(ViewEngine.updateMode(["update": false]) == "false")
        #expect(ViewEngine.updateMode([:]) == "true")
    }
}
