public import SofaFiles
import SofaCore

/// Streams one new blob into a temporary file of the store's folder, then installs it under the
/// SHA-1 of what was written.
///
/// The temporary file (`incoming-<random>.tmp`) is locked (flock) for the writer's life, so a
/// store opening meanwhile (even in another process) leaves it alone, while one left by a crash
/// is unlocked and removed when the store next opens. A writer dropped or cancelled without
/// `install` removes its file. Not thread-safe: one writer per thread at a time.
public final class BlobWriter {
    private enum State { case writing, installed, cancelled }

    private let store: BlobStore
    private let tempPath: String
    private let encoder: BlobEncoder
    private let epoch: Int
    private var state = State.writing

    init(store: BlobStore, tempPath: String, file: PosixFile, key: EncryptionKey?, epoch: Int) throws {
        self.store = store
        self.tempPath = tempPath
        self.epoch = epoch
        do {
            guard try file.lock(wait: false) else { throw SofaError(.unexpectedError, "new temporary file \(tempPath) is locked") }
            encoder = try BlobEncoder(file: file, key: key)
        } catch {
            _ = try? removeFile(tempPath)
            throw error
        }
    }

    deinit {
        if state == .writing { _ = try? removeFile(tempPath) }
    }

    /// Bytes written so far.
    public var length: UInt64 { encoder.length }

    /// Appends a chunk.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        try checkWriting()
        do { try encoder.write(bytes) } catch { cancel(); throw error }
    }

    /// Appends a chunk.
    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Finishes the file, fsyncs it, checks it against `expected` (a mismatch is `.corruptData`
    /// and installs nothing), renames it atomically to its key's name and fsyncs the folder.
    /// Installing content the store already has is harmless: one blob remains.
    @discardableResult
    public func install(expected: BlobKey? = nil) throws -> BlobKey {
        try checkWriting()
        let key: BlobKey
        do {
            key = try encoder.finish()
            if let expected, expected != key {
                throw SofaError(.corruptData, "the content written does not match the expected key \(expected) (its SHA-1 is \(key))")
            }
            try store.install(tempPath: tempPath, as: key, epoch: epoch)
        } catch {
            cancel()
            throw error
        }
        state = .installed
        return key
    }

    /// Abandons the blob: its temporary file is removed. Calling it again does nothing.
    public func cancel() {
        guard state == .writing else { return }
        state = .cancelled
        _ = try? removeFile(tempPath)
    }

    private func checkWriting() throws {
        switch state {
        case .writing: return
        case .installed: throw SofaError(.notOpen, "this blob writer has already installed its blob")
        case .cancelled: throw SofaError(.notOpen, "this blob writer was cancelled")
        }
    }
}
