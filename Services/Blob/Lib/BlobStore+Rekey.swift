import SofaFiles
public import SofaCore

/// Rekey: encrypt a plain store, decrypt an encrypted one, or change its key — every blob
/// rewritten, none lost, whatever the moment of a crash.
///
/// Two phases, with `.sofa-keystate` as the journal (the choice: no blob is ever overwritten
/// before every blob exists in its new form, so a crash never needs both keys to recover, and
/// the state file never has to hold a key; the price is room for a second copy of the blobs):
///
/// 1. State `{key: old, rekeyTo: new, phase: 1}`. Each blob is decrypted with the old key and
///    written in its new form beside itself as `<name>.blob.rekey`, its SHA-1 checked against its key
///    (so a wrong or corrupt blob stops the rekey with nothing changed), and fsynced; then the
///    folder is fsynced.
/// 2. State `{key: old, rekeyTo: new, phase: 2}` — the commit point. Each `<name>.blob.rekey` is
///    renamed over its `<name>.blob` (atomic), the folder fsynced, then state `{key: new}`.
///
/// Recovery at open: in phase 1 the `.rekey` files (some perhaps partial) are deleted and the
/// store stays in the old key; in phase 2 the remaining `.rekey` files are renamed into place and
/// the store is in the new key. Neither needs a key, and afterwards every blob is in one form.
extension BlobStore {
    static let sideSuffix = ".rekey"

    /// Where a test stops a rekey, as a crash would (nothing cleaned up).
    enum RekeyStop: Equatable {
        /// After `n + 1` blobs have their new form beside them (phase 1).
        case afterSideFile(Int)
        /// Right after the commit point.
        case afterCommit
        /// After `n + 1` renames (phase 2).
        case afterRename(Int)
    }

    /// Rewrites every blob under `newKey` (nil: decrypts the store). Exclusive: installs, opens
    /// and deletes wait until it is done; readers opened before keep reading what they opened,
    /// and a writer started before it fails at install with `.busy`.
    public func rekey(to newKey: EncryptionKey?) throws { try rekey(to: newKey, stoppingAt: nil) }

    func rekey(to newKey: EncryptionKey?, stoppingAt stop: RekeyStop?) throws {
        try state.withLock { state in
            let oldCheck = try keyCheck(state.key), newCheck = try keyCheck(newKey)
            guard oldCheck != newCheck else { return }
            try removeSideFiles()
            let keys = try keys().sorted()
            try writeKeyState(KeyState(key: oldCheck, rekeyTo: newCheck, phase: 1))
            do {
                for (index, key) in keys.enumerated() {
                    try reencode(key, from: state.key, to: newKey)
                    if stop == .afterSideFile(index) { throw SimulatedCrash() }
                }
                try syncDirectory(path)
            } catch is SimulatedCrash {
                throw SimulatedCrash()
            } catch {
                try? removeSideFiles()
                try? writeKeyState(KeyState(key: oldCheck))
                throw error
            }
            try writeKeyState(KeyState(key: oldCheck, rekeyTo: newCheck, phase: 2))
            if stop == .afterCommit { throw SimulatedCrash() }
            try renameSideFiles(stoppingAt: stop)
            try writeKeyState(KeyState(key: newCheck))
            state.key = newKey
            state.epoch += 1
        }
    }

    /// Finishes (phase 2) or rolls back (phase 1) an interrupted rekey; returns the state after.
    func recoverRekey(_ interrupted: KeyState) throws -> KeyState {
        let after: KeyState
        if interrupted.phase == 2, let newCheck = interrupted.rekeyTo {
            try renameSideFiles(stoppingAt: nil)
            after = KeyState(key: newCheck)
        } else {
            try removeSideFiles()
            try syncDirectory(path)
            after = KeyState(key: interrupted.key)
        }
        try writeKeyState(after)
        return after
    }

    /// Writes `<name>.rekey`: the blob decrypted with `old`, encrypted with `new`, checked, fsynced.
    private func reencode(_ key: BlobKey, from old: EncryptionKey?, to new: EncryptionKey?) throws {
        let file: PosixFile
        do {
            file = try PosixFile.openForReading(filePath(key), notFound: "blob \(key) vanished during rekey")
        } catch let error as SofaError where error.is(.notFound) {
            return  // deleted meanwhile (storage's compaction unlinks unreferenced blobs): nothing to rewrite
        }
        let reader = try BlobReader(file: file, key: key, encryptionKey: old)
        let sidePath = self.sidePath(key)
        try removeFile(sidePath)
        let encoder = try BlobEncoder(file: try PosixFile.create(sidePath), key: new)
        try reader.forEachChunk(chunkSize: 256 * 1024) { try encoder.write($0) }
        let actual = try encoder.finish()
        guard actual == key else {
            throw SofaError(.corruptData, "blob \(key) reads back as content with SHA-1 \(actual) (corrupt, or not in the store's key): rekey abandoned, nothing changed")
        }
    }

    private func sidePath(_ key: BlobKey) -> String { filePath(key) + Self.sideSuffix }

    /// The keys that have a `.rekey` file, and those files' names.
    private func sideFiles() throws -> [(BlobKey, String)] {
        try directoryEntries(path).compactMap { name in
            guard name.hasSuffix(Self.sideSuffix), let key = BlobKey(fileName: String(name.dropLast(Self.sideSuffix.count)))
            else { return nil }
            return (key, name)
        }.sorted { $0.0 < $1.0 }
    }

    private func removeSideFiles() throws {
        for (_, name) in try sideFiles() { try removeFile(path + "/" + name) }
    }

    private func renameSideFiles(stoppingAt stop: RekeyStop?) throws {
        for (index, (key, name)) in try sideFiles().enumerated() {
            try renameFile(path + "/" + name, filePath(key))
            if stop == .afterRename(index) { throw SimulatedCrash() }
        }
        try syncDirectory(path)
    }
}
