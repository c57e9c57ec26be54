import SofaCore
import SofaQL
import Testing

/// A design document as CouchDB checks it before it stores it (`couch_mrview`'s rules), each
/// refusal in its words.
struct DesignDocumentRuleTests {
    @Test(arguments: [
        (#"{"views":"invalid"}"#, "`views` field must have object type"),
        (#"{"views":{"v":{"reduce":"_count"}}}"#, "View `v` must contain map function"),
        (#"{"views":{"v":{"map":{}}}}"#, "`views.v.map` field must have string type"),
        (#"{"views":{"v":{"map":"function(doc){}","reduce":1}}}"#, "`views.v.reduce` field must have string type"),
        (#"{"views":{"v":{"map":"function(doc){}","reduce":" _foobar"}}}"#, "`_foobar` is not a supported reduce function."),
        (#"{"views":{"lib":"x"}}"#, "`views.lib` field must have object type"),
        (#"{"options":"invalid"}"#, "`options` field must have object type"),
        (#"{"options":{"include_design":1}}"#, "`options.include_design` field must have boolean type"),
        (#"{"language":1}"#, "`language` field must have string type"),
        (#"{"filters":{"f":1}}"#, "`filters.f` field must have object or string type"),
        (#"{"rewrites":{}}"#, "`rewrites` field must have string or array type"),
        (#"{"validate_doc_update":[]}"#, "`validate_doc_update` field must have string type"),
    ])
    func refused(body: String, reason: String) throws {
        let object = try #require(JSON.tryParse(body)?.objectValue)
        do throws(SofaError) {
            try DesignDocumentRules.check(object)
            Issue.record("\(body) was taken")
        } catch {
            #expect(error.sofaCode == .invalidDesignDoc && error.message == reason, "\(body): \(error)")
        }
    }

    @Test(arguments: [
        #"{"views":{"v":{"map":"function(doc){}","reduce":"_sum\nare\nawesome"},"lib":{"x":"1"}}}"#,
        #"{"language":"query","views":{"v":{"map":{"fields":{"a":"asc"}}}}}"#,
        #"{"filters":{"f":"function(doc){return true;}","g":{}},"options":{"local_seq":true},"rewrites":[]}"#,
        #"{}"#,
    ])
    func taken(body: String) throws {
        let object = try #require(JSON.tryParse(body)?.objectValue)
        #expect(throws: Never.self) { try DesignDocumentRules.check(object) }
    }
}
