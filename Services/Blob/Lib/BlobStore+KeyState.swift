import SofaFiles
import Foundation
import SofaCore

/// `.sofa-keystate`: which key the blobs of the folder are in, and how far a rekey got.
///
///     {"format":1,"key":"none"}                                   a plain store
///     {"format":1,"key":"3f9a…"}                                  encrypted (EncryptionKey.check)
///     {"format":1,"key":"none","rekeyTo":"3f9a…","phase":1}       rekey under way, see +Rekey
///
/// It is replaced atomically (write `.sofa-keystate.new`, fsync, rename, fsync the folder). A
/// folder without one (a new folder, or one written by Couchbase Lite) gets one on first open,
/// after the key given has been checked against the smallest blob, if there is any.
struct KeyState: Codable, Equatable {
    var format = 1
    var key: String
    var rekeyTo: String?
    var phase: Int?
}

extension EncryptionKey {
    /// What the store's state file records to recognise this key without holding it:
    /// hex of SHA-256(`"sofa blob key check\0"` + key). The key has 256 bits of entropy (or is
    /// the output of PBKDF2), so this reveals nothing useful.
    func check() throws -> String {
        try sha256(Array("sofa blob key check\0".utf8) + rawBytes).hexString
    }
}

/// The state-file form of "no key" or a key.
func keyCheck(_ key: EncryptionKey?) throws -> String { try key?.check() ?? "none" }

extension BlobStore {
    static let keyStateName = ".sofa-keystate"

    var keyStatePath: String { path + "/" + Self.keyStateName }

    /// At open: recovers an interrupted rekey, then picks the candidate key the recorded state
    /// names (a `.crypto` error if none does). Without a state file, the first candidate is
    /// checked against the smallest blob and recorded.
    func openKeyState(candidates: [EncryptionKey?]) throws -> EncryptionKey? {
        var recorded = try readKeyState()
        if let interrupted = recorded, interrupted.rekeyTo != nil { recorded = try recoverRekey(interrupted) }
        let first = candidates[0]
        if let recorded {
            for candidate in candidates where try keyCheck(candidate) == recorded.key { return candidate }
            throw Self.wrongKey(encrypted: recorded.key != "none", keyGiven: first != nil, path)
        }
        try checkKeyAgainstSmallestBlob(first)
        try writeKeyState(KeyState(key: try keyCheck(first)))
        return first
    }

    static func wrongKey(encrypted: Bool, keyGiven: Bool, _ path: String) -> SofaError {
        switch (encrypted, keyGiven) {
        case (true, false): SofaError(.crypto, "the blob store \(path) is encrypted: it needs its encryption key")
        case (false, true): SofaError(.crypto, "the blob store \(path) is not encrypted, but an encryption key was given")
        default: SofaError(.crypto, "wrong encryption key for the blob store \(path)")
        }
    }

    /// For a folder without a state file: the smallest blob must read back to its key.
    private func checkKeyAgainstSmallestBlob(_ key: EncryptionKey?) throws {
        var smallest: (BlobKey, UInt64)?
        for blob in try keys() {
            guard let size = try fileSize(filePath(blob)) else { continue }
            if smallest == nil || size < smallest!.1 { smallest = (blob, size) }
        }
        guard let (blob, _) = smallest else { return }
        do {
            let file = try PosixFile.openForReading(filePath(blob), notFound: "no blob \(blob)")
            try BlobReader(file: file, key: blob, encryptionKey: key).verify()
        } catch let error as SofaError where error.is(.crypto) || error.is(.corruptData) {
            throw SofaError(.crypto, key == nil
                ? "the blobs in \(path) cannot be read without a key (encrypted, or corrupt): \(error.message)"
                : "wrong encryption key for the blobs in \(path) (or they are corrupt): \(error.message)")
        }
    }

    func readKeyState() throws -> KeyState? {
        guard let size = try fileSize(keyStatePath) else { return nil }
        let file = try PosixFile.openForReading(keyStatePath, notFound: "no key state")
        var bytes = [UInt8](repeating: 0, count: Int(size))
        _ = try bytes.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        do {
            return try JSONDecoder().decode(KeyState.self, from: Data(bytes))
        } catch {
            throw SofaError(.corruptData, "unreadable blob store state \(keyStatePath): \(error)")
        }
    }

    func writeKeyState(_ keyState: KeyState) throws {
        let newPath = keyStatePath + ".new"
        try removeFile(newPath)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let bytes = Array(try encoder.encode(keyState))
        let file = try PosixFile.create(newPath)
        try bytes.withUnsafeBytes { try file.write($0) }
        try file.sync()
        try renameFile(newPath, keyStatePath)
        try syncDirectory(path)
    }
}
