/// Every failure in Sofa is a domain, a code and a human message.
///
/// Codes of the `.sofa` domain follow LiteCore's numbering (1…32) so that a client that knows
/// LiteCore's error codes reads Sofa's the same way; codes from 100 up are Sofa's own (the bus and
/// the cluster). The other domains carry the code of the library that failed (SQLite's result
/// code, a POSIX errno, a ZeroMQ errno).
public struct SofaError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Domain: String, Sendable, Hashable, CaseIterable {
        case sofa
        case posix
        case sqlite
        case zmq
        case json
        case wire
    }

    public var domain: Domain
    public var code: Int32
    public var message: String

    public init(_ domain: Domain, _ code: Int32, _ message: String) {
        self.domain = domain
        self.code = code
        self.message = message
    }

    public init(_ code: Code, _ message: String) {
        self.init(.sofa, code.rawValue, message)
    }

    /// The `.sofa` code, when this error is of that domain and the code is known.
    public var sofaCode: Code? { domain == .sofa ? Code(rawValue: code) : nil }

    public func `is`(_ code: Code) -> Bool { sofaCode == code }

    public var description: String { "\(domain.rawValue) error \(code): \(message)" }

    /// What a person reads for the code: the `.sofa` code's name (`conflict`, `not_found`), else
    /// the domain's (`sqlite`, `posix`, …; "error" for a `.sofa` code this version does not know).
    public var name: String {
        if let sofaCode { return sofaCode.name }
        return domain == .sofa ? "error" : domain.rawValue
    }
}

extension SofaError {
    /// Codes of the `.sofa` domain.
    public enum Code: Int32, Sendable, CaseIterable {
        case assertionFailed = 1
        case unimplemented = 2
        case badRevisionID = 4
        case corruptRevisionData = 5
        case notOpen = 6
        case notFound = 7
        case conflict = 8
        case invalidParameter = 9
        case unexpectedError = 10
        case cantOpenFile = 11
        case ioError = 12
        case corruptData = 15
        case busy = 16
        case unsupported = 19
        case wrongFormat = 21
        case crypto = 22
        case invalidQuery = 23
        case badDocID = 29
        // Sofa's own, from 100 up.
        case timeout = 100
        case unavailable = 101
        case messageTooLarge = 102
        case malformedMessage = 103
        case shuttingDown = 104
        case badDatabaseName = 105
        case databaseExists = 106
        case badJSON = 107
        /// The request was stopped because its client went away (or gave up on it).
        case cancelled = 108
        /// No user is signed in on the connection, or the name and password do not match (the
        /// message never says which).
        case unauthorized = 109
        /// The user is known but may not do this (a database's security object, an admin's task).
        case forbidden = 110
        /// A design document CouchDB would not store (a field of the wrong type, a view without a
        /// map function, a reduce function that is not one).
        case invalidDesignDoc = 111
        /// A design document's JavaScript that does not compile (CouchDB's `compilation_error`).
        case compilationError = 112

        /// The case's name in snake_case, as CouchDB names its errors: `not_found`, `bad_json`
        /// (an acronym is one word: `badRevisionID` is `bad_revision_id`).
        public var name: String {
            let letters = Array(String(describing: self))
            var name = ""
            for (index, letter) in letters.enumerated() {
                let startsWord = letter.isUppercase && index > 0
                    && (letters[index - 1].isLowercase || (index + 1 < letters.count && letters[index + 1].isLowercase))
                if startsWord { name += "_" }
                name += letter.lowercased()
            }
            return name
        }
    }

    public static func notFound(_ message: String) -> SofaError { SofaError(.notFound, message) }
    public static func conflict(_ message: String) -> SofaError { SofaError(.conflict, message) }
    public static func invalid(_ message: String) -> SofaError { SofaError(.invalidParameter, message) }
    public static func timeout(_ message: String) -> SofaError { SofaError(.timeout, message) }
    public static func unavailable(_ message: String) -> SofaError { SofaError(.unavailable, message) }
    public static func unauthorized(_ message: String) -> SofaError { SofaError(.unauthorized, message) }
    public static func forbidden(_ message: String) -> SofaError { SofaError(.forbidden, message) }
}

extension SofaError {
    private static let noRevisionWords = "does not exist, so it has no revision"

    /// A write names a revision of a document the collection does not have (never written, or
    /// purged): LiteCore's NotFound. CouchDB's HTTP API answers the same write as an update
    /// conflict (`isRevisionOfMissingDocument` lets it tell this not-found from the others).
    public static func revisionOfMissingDocument(_ id: String, revision: String) -> SofaError {
        SofaError(.notFound, "document '\(id)' \(noRevisionWords) \(revision)")
    }

    /// Whether this is `revisionOfMissingDocument`'s error.
    public var isRevisionOfMissingDocument: Bool { self.is(.notFound) && message.contains(Self.noRevisionWords) }

    private static let noDatabaseWords = "does not exist"

    /// The database named is not there (as opposed to something in it).
    public static func databaseNotFound(_ name: String) -> SofaError {
        SofaError(.notFound, "database '\(name)' \(noDatabaseWords)")
    }

    /// Whether this is `databaseNotFound`'s error.
    public var isDatabaseNotFound: Bool {
        self.is(.notFound) && message.hasPrefix("database '") && message.hasSuffix("' " + Self.noDatabaseWords)
    }
}
