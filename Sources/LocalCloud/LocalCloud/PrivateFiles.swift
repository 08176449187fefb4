import EmbeddedFirestore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Files only this user may read: the local cloud's keys and database. A key is written under a new
/// name created exclusively with mode 0600 (never a moment world-readable, never through a planted
/// link) and renamed into place; directories are 0700.
enum PrivateFiles {
    /// Creates `path` (and its parents) if needed, and makes it 0700.
    static func directory(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard chmod(path, 0o700) == 0 else { throw LocalAPIError.internalError("cannot make \(path) private (mode 0700)") }
    }

    /// Writes `contents` to `path`, readable by this user only.
    static func write(_ contents: String, to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try Self.directory(directory)
        let temporary = "\(path).\(UInt64.random(in: 0...UInt64.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw LocalAPIError.internalError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        let bytes = Array(contents.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else {
                close(descriptor)
                unlink(temporary)
                throw LocalAPIError.internalError("cannot write \(temporary)")
            }
            written += result
        }
        guard fsync(descriptor) == 0, close(descriptor) == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw LocalAPIError.internalError("cannot put \(path) in place")
        }
    }
}
