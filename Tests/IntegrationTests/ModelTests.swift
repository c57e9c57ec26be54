import Foundation
import NotesExample
import SofaClient
import SofaCore
import SofaWire
import Testing

/// The SDK's model layer through real processes, with the example app's model (notebooks and
/// notes): typed objects and their fields, cached instances, notifications for local and
/// replicated changes, the conflict policy across two clusters, metadata, packages replicated
/// to another cluster, snapshots and their restore, and `sofa dump`.
@Suite(.serialized) struct ModelTests {
    /// The notifications a controller announced, as they arrive; `wait` is woken by each arrival.
    @MainActor final class Received {
        var changes: [ObjectChange] = []
        var task: Task<Void, Never>?
        private var waiters: [UUID: (condition: ([ObjectChange]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]

        init(_ stream: AsyncStream<ObjectChange>) {
            task = Task { @MainActor [weak self] in
                for await change in stream { self?.arrived(change) }
            }
        }

        private func arrived(_ change: ObjectChange) {
            changes.append(change)
            for (key, waiter) in waiters where waiter.condition(changes) {
                waiters[key] = nil
                waiter.continuation.resume(returning: true)
            }
        }

        /// Waits (up to `timeout`) until `condition` holds for what arrived, checked as each change arrives.
        func wait(_ what: String, timeout: Duration = .seconds(30), until condition: @escaping ([ObjectChange]) -> Bool) async throws {
            if condition(changes) { return }
            let key = UUID()
            let met = await withCheckedContinuation { continuation in
                waiters[key] = (condition, continuation)
                let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
                DispatchQueue.main.asyncAfter(deadline: .now() + seconds) { [weak self] in
                    MainActor.assumeIsolated { self?.waiters.removeValue(forKey: key)?.continuation.resume(returning: false) }
                }
            }
            guard met else { throw SofaError(.timeout, "\(what): got \(changes)") }
        }
    }

    @Test func typedObjectsKeepTheirFieldsTheirUnknownPropertiesAndTheirInstances() async throws {
        try await Cluster.with { cluster in try await Self.typedObjects(cluster) }
    }

    @MainActor static func typedObjects(_ cluster: Cluster) async throws {
        do {
            let app = try await NotesApp(client: cluster.client, package: "work")
            defer { app.close() }
            let received = Received(app.notes.changes())
            let deletions = Received(app.notes.changes([.deleted]))
            let admin = try await cluster.client.session().name

            let note = Note(notebook: "b1", title: "Bread", tags: ["baking"])
            let id = try await app.notes.save(note)
            let fields = try #require(app.notes.fields(of: note))
            #expect(fields.id == id && fields.objectType == "Note" && fields.creator == admin && fields.editors == [admin])
            #expect(!fields.createdAt.isEmpty && fields.createdAt == fields.updatedAt)
            #expect(try await app.notes.load(id: id) === note)

            // A document written by someone else, with a property the type does not know.
            let db = app.package.database("notes")
            _ = try await db.put(id: "ext", json: #"{"objectType":"Note","notebook":"b1","title":"Ext","text":"","tags":[],"extra":{"k":1}}"#)
            let ext = try #require(try await app.notes.load(id: "ext"))
            #expect(ext.title == "Ext")
            ext.title = "Ext 2"
            try await app.notes.save(ext)
            let stored = try await db.get(id: "ext").json()
            #expect(stored["extra"] == ["k": 1] && stored["title"] == "Ext 2" && stored["objectType"] == "Note")
            #expect(stored["createdAt"]?.stringValue?.isEmpty == false && stored["creator"]?.stringValue == admin)

            note.text = "flour, water"
            try await app.notes.save(note)
            #expect(app.notes.fields(of: note).map { $0.updatedAt >= $0.createdAt } == true)
            // (The changes feed lists a document once, at its latest change: the update is
            // announced before the deletion only if it is read before the deletion commits.)
            try await received.wait("the update") { $0.contains { $0.kind == .updated && $0.id == id } }
            try await app.notes.delete(note)
            #expect(try await app.notes.load(id: id) == nil)
            // Each change once, of the right kind, in commit order (from the changes feed).
            try await received.wait("five changes") { $0.count >= 5 }
            #expect(received.changes.map { "\($0.kind.rawValue) \($0.id)" }
                    == ["added \(id)", "added ext", "updated ext", "updated \(id)", "deleted \(id)"])
            // A stream of one kind: the deletion alone.
            try await deletions.wait("the deletion") { !$0.isEmpty }
            #expect(deletions.changes.map(\.id) == [id])

            // Queries: a view of the type's design document and N1QL.
            try await app.notes.save(Note(notebook: "b2", title: "Soup"))
            #expect(try await app.notes.objects(view: "by_notebook", options: ["key": "b1"]).map(\.title) == ["Ext 2"])
            #expect(try await app.notes.objects(where: "notebook = $b", parameters: ["b": "b2"]).map(\.title) == ["Soup"])
            #expect(try await app.notes.all().count == 2)

            // Metadata: replicated and local, freeform.
            try await db.setMetadata(["schema": 2, "owner": "ann"])
            try await db.setLocalMetadata(["lastOpened": "today"])
            #expect(try await db.metadata() == ["schema": 2, "owner": "ann"])
            #expect(try await db.localMetadata() == ["lastOpened": "today"])
            try await db.setMetadata(["schema": 3])
            #expect(try await db.metadata() == ["schema": 3])
        }
    }

    @Test func replicatedChangesAreAnnouncedOnceAndConflictsMergeByTheTypesPolicy() async throws {
        try await Cluster.with { a in try await Cluster.with { b in try await Self.replicatedChanges(a, b) } }
    }

    @MainActor static func replicatedChanges(_ a: Cluster, _ b: Cluster) async throws {
        do {
            do {
                let appA = try await NotesApp(client: a.client, package: "sync")
                defer { appA.close() }
                let appB = try await NotesApp(client: b.client, package: "sync")
                defer { appB.close() }
                let onB = Received(appB.notes.changes())
                let note = Note(notebook: "n", title: "Shared", text: "base")
                let id = try await appA.notes.save(note)
                try await appA.package.replicate(with: b.supervisor.gatewayEndpoint, direction: .push, remote: b.client)
                try await onB.wait("the replicated note") { $0.contains { $0.id == id } }
                #expect(appB.notes.cached(id: id)?.title == "Shared")

                // Concurrent edits on both clusters, then replication both ways: B's controller
                // finds the conflict and writes the merge its type's policy makes.
                let onBoth = try #require(try await appB.notes.load(id: id))
                onBoth.text = "from B"
                try await appB.notes.save(onBoth)
                note.text = "from A"
                try await appA.notes.save(note)
                try await appA.package.replicate(with: b.supervisor.gatewayEndpoint, direction: .both, remote: b.client)
                let merged = ["from A", "from B"].joined(separator: "\n")
                // The merged revision comes back through B's feed as an update.
                try await onB.wait("the merge on B") { _ in appB.notes.cached(id: id)?.text == merged }
                #expect(try await appB.package.database("notes").conflicts(id: id).isEmpty)
                #expect(try await appB.package.database("notes").get(id: id).json()["text"]?.stringValue == merged)
                // Announced once as added, then as updates.
                #expect(onB.changes.filter { $0.id == id && $0.kind == .added }.count == 1)
                #expect(onB.changes.filter { $0.id == id }.dropFirst().allSatisfy { $0.kind == .updated })
            }
        }
    }

    @Test func aPackageOfThreeDatabasesReplicatesToAnotherCluster() async throws {
        try await Cluster.with { a in
            try await Cluster.with { b in
                let package = try Package(client: a.client, name: "trio")
                try await package.create(databases: ["one", "two", "three"])
                for (index, member) in ["one", "two", "three"].enumerated() {
                    _ = try await package.database(member).bulk((0..<(index + 1) * 5).map { .put(id: "\(member)-\($0)", json: #"{"n":\#($0)}"#) })
                }
                #expect(try await Package.list(a.client) == ["trio"])
                #expect(try await package.databaseNames() == ["one", "three", "two"])
                try await package.replicate(with: b.supervisor.gatewayEndpoint, remote: b.client)
                let there = try Package(client: b.client, name: "trio")
                #expect(try await there.databaseNames() == ["one", "three", "two"])
                for member in ["one", "two", "three"] {
                    let here = try await package.database(member).allDocs().map { "\($0.id) \($0.rev)" }
                    #expect(try await there.database(member).allDocs().map { "\($0.id) \($0.rev)" } == here)
                }
                try await there.delete()
                #expect(try await Package.list(b.client).isEmpty)
            }
        }
    }

    @Test func snapshotsStoreEachAttachmentOnceAndRestoreTheExactState() async throws {
        try await Cluster.with(clientTimeout: .seconds(60)) { cluster in try await Self.snapshots(cluster) }
    }

    @MainActor static func snapshots(_ cluster: Cluster) async throws {
        do {
            let app = try await NotesApp(client: cluster.client, package: "snap")
            defer { app.close() }
            let db = app.package.database("notes")
            // 1,000 notes; 100 with an attachment: 50 of their own, 50 sharing 5.
            var blobs: [BlobReference] = []
            for index in 0..<55 {
                let info = try await db.putBlob(Array("attachment \(index) ".utf8) + [UInt8](repeating: UInt8(index), count: 1000))
                blobs.append(BlobReference(digest: info.key, length: info.length))
            }
            let items: [BulkItem] = (0..<1000).map { index in
                let attachment: BlobReference? = index < 50 ? blobs[index] : index < 100 ? blobs[50 + index % 5] : nil
                let note = Note(notebook: "b\(index % 10)", title: "note \(index)", tags: ["t\(index % 3)"], attachment: attachment)
                var body = (try? JSON.parse(Array(JSONEncoder().encode(note))).objectValue) ?? [:]
                body["objectType"] = "Note"
                return .put(id: String(format: "note-%04d", index), rev: "", body: JSON.object(body).compactBytes(), deleted: false)
            }
            for start in stride(from: 0, to: 1000, by: 250) { _ = try await db.bulk(Array(items[start..<start + 250])) }
            try await app.notebooks.save(Notebook(title: "Kitchen"))
            func state() async throws -> [String: String] {
                var all: [String: String] = [:]
                for member in ["notes", "notebooks"] {
                    for document in try await app.package.database(member).allDocs(includeBodies: true) where !document.id.hasPrefix("_design/") {
                        all[member + "/" + document.id] = String(decoding: document.body, as: UTF8.self)
                    }
                }
                return all
            }
            let before = try await state()
            let info = try await app.package.takeSnapshot("monday")
            #expect(info.objectCount == 1001)
            // Each distinct attachment is stored once in the snapshot database.
            let folder = cluster.directory.appendingPathComponent("data/snap+_snapshots.sofa/Attachments")
            let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])?
                .compactMap { $0 as? URL }.filter { $0.lastPathComponent.hasSuffix(".blob") } ?? []
            #expect(files.count == 55)
            // A second snapshot of unchanged objects writes no new copies.
            let copies = try await app.package.snapshots.allDocs(startKey: "copy:", endKey: "copy:\u{10FFFF}").count
            try await app.package.takeSnapshot("tuesday")
            #expect(try await app.package.snapshots.allDocs(startKey: "copy:", endKey: "copy:\u{10FFFF}").count == copies)
            #expect(try await app.package.listSnapshots().map(\.name) == ["monday", "tuesday"])

            // Edits, deletions and additions; then the restore gives exactly the snapshotted state.
            let received = Received(app.notes.changes())
            let first = try #require(try await app.notes.load(id: "note-0001"))
            first.title = "changed"
            try await app.notes.save(first)
            let second = try #require(try await app.notes.load(id: "note-0002"))
            try await app.notes.delete(second)
            try await app.notes.save(Note(notebook: "b0", title: "new since"))
            let restored = try await app.package.restoreSnapshot("monday")
            #expect(restored.written == 2 && restored.deleted == 1)
            #expect(try await state() == before)
            // The restore is announced as the usual changes.
            try await received.wait("the restore's changes") { $0.count >= 6 }
            #expect(Set(received.changes.suffix(3).map { "\($0.kind.rawValue) \($0.id)" }).contains("added note-0002"))
            #expect(app.notes.cached(id: "note-0001")?.title == "note 1")
        }
    }

    @Test func sofaDumpPrintsDocumentsWithEveryOption() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("dumped")
            let a = try await db.put(id: "a", json: #"{"objectType":"Note","title":"A","n":1}"#)
            _ = try await db.put(id: "a", json: #"{"objectType":"Note","title":"A2","n":2}"#, rev: a.rev)
            _ = try await db.put(id: "b", json: #"{"objectType":"Notebook","title":"B","n":3}"#)
            let c = try await db.put(id: "c", json: #"{"objectType":"Note","title":"C"}"#)
            _ = try await db.delete(id: "c", rev: c.rev)
            let gateway = cluster.supervisor.gatewayEndpoint
            func lines(_ arguments: [String]) async throws -> [JSON] {
                let run = try await runSofa(["dump", "dumped"] + arguments, gateway: gateway)
                #expect(run.status == 0, "\(arguments): \(run.err)")
                return try run.out.split(separator: "\n").map { try JSON.parse(Array($0.utf8)) }
            }
            #expect(try await lines([]).map { $0["_id"]?.stringValue } == ["a", "b"])
            #expect(try await lines(["--deleted"]).map { $0["_id"]?.stringValue } == ["a", "b", "c"])
            #expect(try await lines(["--id", "b"]).first?["title"] == "B")
            #expect(try await lines(["--type", "Notebook"]).map { $0["_id"]?.stringValue } == ["b"])
            let keyed = try await lines(["--keys", "title"])
            #expect(keyed.first?.objectValue?.keys.sorted() == ["_id", "_rev", "title"])
            let all = try await lines(["--all", "--id", "a"])
            #expect(all.first?["title"] == "A2")
            #expect(all.allSatisfy { $0["_id"] == "a" })
        }
    }
}
