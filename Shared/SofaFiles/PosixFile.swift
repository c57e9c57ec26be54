#if canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#elseif canImport(Darwin)
public import Darwin
#endif
public import SofaCore
import CPosix

/// A POSIX file descriptor, closed in `deinit`. Every call's return code is checked where it is
/// made and becomes a `.posix` SofaError carrying errno, its message and the path.
public final class PosixFile {
    public let fd: Int32
    public let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Opens for reading; a missing file is `.notFound`.
    public static func openForReading(_ path: String, notFound: @autoclosure () -> String) throws -> PosixFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw SofaError.notFound(notFound()) }
            throw posixError("open", path)
        }
        return PosixFile(fd: fd, path: path)
    }

    /// Creates a new file that must not exist yet (O_EXCL), mode 0600.
    public static func create(_ path: String) throws -> PosixFile {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw posixError("create", path) }
        return PosixFile(fd: fd, path: path)
    }

    /// Creates a file for writing, emptying one that exists (a download's destination), with
    /// the mode a new file usually gets (0644 less the umask).
    public static func replace(_ path: String) throws -> PosixFile {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw posixError("create", path) }
        return PosixFile(fd: fd, path: path)
    }

    /// Opens an existing file for reading and writing, or nil if it is gone.
    public static func openExisting(_ path: String) throws -> PosixFile? {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw posixError("open", path)
        }
        return PosixFile(fd: fd, path: path)
    }

    public var size: UInt64 {
        get throws {
            var st = stat()
            guard fstat(fd, &st) == 0 else { throw posixError("fstat", path) }
            return UInt64(st.st_size)
        }
    }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        setDirect(false)
        return try readAt(buffer, offset)
    }

    /// The same with direct I/O (`buffer`, its size and `offset` aligned as `directAlignment`
    /// says); nil where the file system does not allow it (read through the page cache then).
    public func readDirect(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int? {
        guard setDirect(true) else { return nil }
        do {
            // A short direct read is the end of the file: reading on from there (an unaligned
            // offset) would be refused.
            return try readAt(buffer, offset, stopAtShortRead: true)
        } catch {
            guard let error = error as? SofaError, error.domain == .posix, error.code == EINVAL else { throw error }
            setDirect(false)
            return nil
        }
    }

    private func readAt(_ buffer: UnsafeMutableRawBufferPointer, _ offset: UInt64, stopAtShortRead: Bool = false) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw posixError("pread", path)
            }
            if n == 0 { break }
            done += n
            if stopAtShortRead && done < buffer.count { break }
        }
        return done
    }

    /// Writes all of `bytes` at the current position. With direct I/O on, `bytes` must be
    /// aligned as `directAlignment` says; where the file system refuses a direct write anyway
    /// (EINVAL), direct I/O is turned off and the rest is written through the page cache.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = systemWrite(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EINVAL && isDirect && setDirect(false) { continue }
                throw posixError("write", path)
            }
            done += n
        }
    }

    /// Buffers, file offsets and lengths of direct transfers are multiples of this (the largest
    /// logical block size of Linux block devices, so any device takes them).
    public static let directAlignment = 4096

    /// Whether transfers bypass the page cache (O_DIRECT).
    public private(set) var isDirect = false

    /// Turns direct I/O on or off; false when the file system does not allow it (nothing
    /// changes then). Large sequential transfers go direct: copying a gigabyte into the page
    /// cache costs more CPU than the disk takes to write it, and fsync then has little to do.
    @discardableResult
    public func setDirect(_ on: Bool) -> Bool {
        guard on != isDirect else { return true }
        guard sofa_set_direct_io(fd, on ? 1 : 0) == 0 else { return false }
        isDirect = on
        return true
    }

    /// Starts writing `length` bytes at `offset` back to the disk without waiting for it, so the
    /// final `sync` of a big file has little left to do. Where the call is not supported (not
    /// Linux's sync_file_range on this file system), it does nothing: `sync` still does it all.
    public func startWriteBack(offset: UInt64, length: UInt64) throws {
        let code = sofa_start_writeback(fd, off_t(offset), off_t(length))
        guard code == 0 || code == EINVAL || code == ENOSYS || code == ESPIPE else {
            throw posixError("sync_file_range", path, code)
        }
    }

    public func sync() throws {
        guard fsync(fd) == 0 else { throw posixError("fsync", path) }
    }

    /// Takes an exclusive advisory lock (flock); false when another descriptor holds it and
    /// `wait` is false. The lock dies with the descriptor, so with the process.
    public func lock(wait: Bool) throws -> Bool {
        while flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw posixError("flock", path)
        }
        return true
    }
}

/// The C `write`, reachable from inside `PosixFile` (whose own `write` hides it).
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }

public func posixError(_ call: String, _ path: String, _ code: Int32 = errno) -> SofaError {
    SofaError(.posix, code, "\(call) \(path): \(String(cString: strerror(code)))")
}

/// fsync of a directory, so that renames and unlinks in it are durable.
public func syncDirectory(_ path: String) throws {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw posixError("open directory", path) }
    defer { close(fd) }
    guard fsync(fd) == 0 else { throw posixError("fsync directory", path) }
}

/// Atomic rename within one directory.
public func renameFile(_ from: String, _ to: String) throws {
    guard rename(from, to) == 0 else { throw posixError("rename to \(to)", from) }
}

/// unlink; false when the file was already gone.
@discardableResult
public func removeFile(_ path: String) throws -> Bool {
    guard unlink(path) == 0 else {
        if errno == ENOENT { return false }
        throw posixError("unlink", path)
    }
    return true
}

/// The names in a directory (without `.` and `..`).
public func directoryEntries(_ path: String) throws -> [String] {
    guard let dir = opendir(path) else { throw posixError("opendir", path) }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// Creates `path` (and its parents) if missing.
public func makeDirectory(_ path: String) throws {
    var st = stat()
    if stat(path, &st) == 0 { return }
    let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    if !parent.isEmpty { try makeDirectory(parent) }
    guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw posixError("mkdir", path) }
}

/// A file's size, or nil when it does not exist.
public func fileSize(_ path: String) throws -> UInt64? {
    var st = stat()
    guard stat(path, &st) == 0 else {
        if errno == ENOENT { return nil }
        throw posixError("stat", path)
    }
    return UInt64(st.st_size)
}

/// Which file a path names (device and inode), to notice a folder deleted and made again.
public struct FileIdentity: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64
}

/// The identity of the file at `path`, or nil when it does not exist.
public func fileIdentity(_ path: String) throws -> FileIdentity? {
    var st = stat()
    guard stat(path, &st) == 0 else {
        if errno == ENOENT { return nil }
        throw posixError("stat", path)
    }
    return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
}
