import SofaCore

/// A typed object stored as a document (the model layer): a `Codable` class whose properties
/// are the document's, beside the fields the layer keeps — `_id`, `_rev`, `objectType` (the
/// type's name: a document from anywhere decodes into the right type), `createdAt` and
/// `updatedAt` (set on save, ISO 8601), `creator` and `editors` (the signed-in user, set on
/// save). Properties the type does not know survive a load and save. Objects are the main
/// actor's, as their `Controller` is.
///
/// ```swift
/// final class Note: ManagedObject {
///     var title: String
///     var text = ""
///     init(title: String) { self.title = title }
///     func refresh(from newer: Note) { title = newer.title; text = newer.text }
/// }
/// let notes = try await Controller<Note>(database: db)
/// let note = Note(title: "Groceries")
/// try await notes.save(note)
/// for await change in notes.changes() { print(change.kind, change.id) }
/// ```
public protocol ManagedObject: AnyObject, Codable {
    /// The `objectType` of its documents (default: the type's name).
    static var objectType: String { get }
    /// The views of its design document (`_design/<objectType>`), installed or updated when its
    /// controller opens: name → map (and reduce) source. `all` (every object by ID) is added.
    static var views: [String: ViewSource] { get }
    /// Merges two conflicting revisions (`mine` is the current winner); nil keeps the winner
    /// by Sofa's rule (the default). The controller applies it to conflicts it finds.
    static func resolve(mine: Self, theirs: Self) -> Self?
    /// Takes the properties of a newer revision of the same object (a change that arrived by
    /// replication), so that the instance the controller handed out stays the one in use.
    func refresh(from newer: Self)
}

extension ManagedObject {
    public static var objectType: String { String(describing: self) }
    public static var views: [String: ViewSource] { [:] }
    public static func resolve(mine: Self, theirs: Self) -> Self? { nil }
}

/// A view's code.
public struct ViewSource: Sendable, Equatable {
    public var map: String
    public var reduce: String?

    public init(map: String, reduce: String? = nil) {
        self.map = map
        self.reduce = reduce
    }
}

/// The fields the layer keeps in each managed document.
public struct ManagedFields: Sendable, Equatable {
    public var id: String
    public var rev: String
    public var objectType: String
    public var createdAt: String
    public var updatedAt: String
    public var creator: String
    public var editors: [String]

    /// Their names in the document.
    public static let names: Set<String> = ["_id", "_rev", "objectType", "createdAt", "updatedAt", "creator", "editors"]

    init(document: JSONObject) {
        id = document["_id"]?.stringValue ?? ""
        rev = document["_rev"]?.stringValue ?? ""
        objectType = document["objectType"]?.stringValue ?? ""
        createdAt = document["createdAt"]?.stringValue ?? ""
        updatedAt = document["updatedAt"]?.stringValue ?? ""
        creator = document["creator"]?.stringValue ?? ""
        editors = document["editors"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }
}

/// What happened to an object.
public enum ObjectChangeKind: String, Sendable, Hashable, CaseIterable {
    case added, updated, deleted
}

/// A change to one object of a controller's type, from the database's changes feed (a local
/// save or one that arrived by replication alike). The object itself, refreshed to this
/// revision, is the controller's `cached(id:)` (nil once deleted).
public struct ObjectChange: Sendable, Equatable {
    public var kind: ObjectChangeKind
    public var id: String
    /// The new revision ("" for a deletion).
    public var rev: String
    public var sequence: UInt64
}
