import Foundation
public import SofaCore

/// `Attachments/.sofa-key`: an encrypted database's key, kept by sofa-blob so that it serves the
/// database after a restart without anyone giving the key again — the way a CouchDB or Couchbase
/// Server user expects a service to behave (the key is given once, when the database is created).
///
///     {"format":1,"key":"00010203…1e1f"}                       encrypted (64 hex digits)
///     {"format":1,"key":"none","next":"00010203…1e1f"}         a rekey under way (see below)
///
/// A plain database has no key file. The file is mode 0600 in a 0700 folder, so only the
/// service's user reads it, and it is replaced atomically (write `.sofa-key.new`, fsync, rename,
/// fsync the folder). During a rekey it names both keys; the store's own journal
/// (`.sofa-keystate`, which holds a check value, never a key) decides after a crash which one the
/// blobs are in, and the file is then settled to that one.
///
/// The trade-off of this choice: the key sits on the same volume as the blobs, so encryption
/// protects blobs copied or leaked on their own (a backup of `Attachments/`, a replica's files,
/// a stolen blob), and keeps the format Couchbase Lite reads, but not a whole stolen data volume.
/// What it buys is that a database lives in one folder: deleting it deletes its key, and a
/// database created again under the same name cannot meet a stale key, which keys kept apart
/// (`SOFA_BLOB_KEYS`, a secrets mount) would need extra bookkeeping to avoid. Keeping keys off
/// the volume is the next step: wrap this file's key with a master key given to sofa-blob alone.
public struct KeyFile: Equatable, Sendable {
    public static let name = ".sofa-key"

    /// The key the blobs are in (nil: plain, only while a rekey from plain is under way).
    public var key: EncryptionKey?
    /// During a rekey: the key it moves to (`.some(nil)`: decrypting).
    public var next: EncryptionKey??

    public init(key: EncryptionKey?, next: EncryptionKey?? = nil) {
        self.key = key
        self.next = next
    }

    /// The keys the store may be in, the settled one first.
    public var candidates: [EncryptionKey?] {
        if let next { return [key, next] }
        return [key]
    }

    private struct Stored: Codable {
        var format = 1
        var key: String
        var next: String?
    }

    /// The key file of `folder`, nil when there is none.
    public static func read(in folder: String) throws -> KeyFile? {
        let path = folder + "/" + name
        guard let size = try fileSize(path) else { return nil }
        let file = try PosixFile.openForReading(path, notFound: "no key file")
        var bytes = [UInt8](repeating: 0, count: Int(min(size, 4096)))
        _ = try bytes.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        func key(_ text: String) throws -> EncryptionKey? {
            text == "none" ? nil : try EncryptionKey(hex: text)
        }
        do {
            let stored = try JSONDecoder().decode(Stored.self, from: Data(bytes))
            guard stored.format == 1 else { throw SofaError(.unsupported, "format \(stored.format)") }
            return KeyFile(key: try key(stored.key), next: try stored.next.map { try key($0) })
        } catch {
            // Never echo the file's content: it is a key.
            throw SofaError(.corruptData, "unreadable key file \(path) (\(error is DecodingError ? "not the expected JSON" : "\(error)"))")
        }
    }

    /// Replaces the key file of `folder` atomically.
    public func write(in folder: String) throws {
        try makeDirectory(folder)
        let path = folder + "/" + Self.name, newPath = path + ".new"
        try removeFile(newPath)
        func text(_ key: EncryptionKey?) -> String { key?.rawBytes.hexString ?? "none" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let bytes = Array(try encoder.encode(Stored(key: text(key), next: next.map { text($0) })))
        let file = try PosixFile.create(newPath)  // mode 0600
        try bytes.withUnsafeBytes { try file.write($0) }
        try file.sync()
        try renameFile(newPath, path)
        try syncDirectory(folder)
    }

    /// Removes the key file of `folder` (the database is now plain).
    public static func remove(in folder: String) throws {
        if try removeFile(folder + "/" + name) { try syncDirectory(folder) }
    }
}
