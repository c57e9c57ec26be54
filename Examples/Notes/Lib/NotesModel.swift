public import SofaClient
import SofaCore
import Foundation

/// Sofa's example app model: notebooks and notes, two managed types in two databases of one
/// package (`<package>+notebooks`, `<package>+notes`). The tests use it.
public final class Notebook: ManagedObject {
    public var title: String
    public var color: String?

    public init(title: String, color: String? = nil) {
        self.title = title
        self.color = color
    }

    public func refresh(from newer: Notebook) {
        title = newer.title
        color = newer.color
    }

    public static var views: [String: ViewSource] {
        ["by_title": ViewSource(map: "function (doc) { if (doc.objectType === 'Notebook') { emit(doc.title, null); } }")]
    }
}

public final class Note: ManagedObject {
    public var notebook: String
    public var title: String
    public var text: String
    public var tags: [String]
    /// An attachment's digest ({"@type": "blob", "digest": …}), if the note has one.
    public var attachment: BlobReference?

    public init(notebook: String, title: String, text: String = "", tags: [String] = [], attachment: BlobReference? = nil) {
        self.notebook = notebook
        self.title = title
        self.text = text
        self.tags = tags
        self.attachment = attachment
    }

    public func refresh(from newer: Note) {
        notebook = newer.notebook
        title = newer.title
        text = newer.text
        tags = newer.tags
        attachment = newer.attachment
    }

    public static var views: [String: ViewSource] {
        ["by_notebook": ViewSource(map: "function (doc) { if (doc.objectType === 'Note') { emit(doc.notebook, doc.title); } }",
                                   reduce: "_count")]
    }

    /// Concurrent edits merge: the text of both, tags of both.
    public static func resolve(mine: Note, theirs: Note) -> Note? {
        let merged = Note(notebook: mine.notebook, title: mine.title,
                          text: mine.text == theirs.text ? mine.text : [mine.text, theirs.text].sorted().joined(separator: "\n"),
                          tags: Array(Set(mine.tags + theirs.tags)).sorted(), attachment: mine.attachment ?? theirs.attachment)
        return merged
    }
}

/// An attachment as a document references it.
public struct BlobReference: Codable, Sendable, Equatable {
    public var type = "blob"
    public var digest: String
    public var length: UInt64

    enum CodingKeys: String, CodingKey {
        case type = "@type", digest, length
    }

    public init(digest: String, length: UInt64) {
        self.digest = digest
        self.length = length
    }
}

/// The app: its package and a controller per type.
@MainActor
public final class NotesApp {
    public let package: Package
    public let notebooks: Controller<Notebook>
    public let notes: Controller<Note>

    /// Opens (creating when missing) the package's two databases and their controllers.
    public init(client: SofaClient, package name: String = "notes") async throws {
        package = try Package(client: client, name: name)
        let existing = Set(try await package.databaseNames())
        if existing.isEmpty { try await package.create() }
        for member in ["notebooks", "notes"] where !existing.contains(member) { _ = try await package.createDatabase(member) }
        notebooks = try await Controller<Notebook>(database: package.database("notebooks"))
        notes = try await Controller<Note>(database: package.database("notes"))
    }

    public func close() {
        notebooks.close()
        notes.close()
    }
}
