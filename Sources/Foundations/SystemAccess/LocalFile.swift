#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files read and written whole, and the process's environment, on the C library alone (the functions
/// link no Foundation). Errors name the path and the system's reason.
public enum LocalFile {
    public struct Failure: Error, CustomStringConvertible, Sendable, Equatable {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// The whole file; more than `limit` bytes is an error (a file is read into memory, so it is bounded).
    public static func read(_ path: String, limit: Int = 64 << 20) throws(Failure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(path: path, reason: systemError()) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Failure(path: path, reason: systemError()) }
        guard status.st_mode & S_IFMT != S_IFDIR else { throw Failure(path: path, reason: "is a directory") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(path: path, reason: systemError())
            }
            if count == 0 { return bytes }
            guard bytes.count + count <= limit else { throw Failure(path: path, reason: "larger than \(limit) bytes") }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Whether `path` names something this process may read.
    public static func isReadable(_ path: String) -> Bool { access(path, R_OK) == 0 }

    /// The names in a directory (without `.` and `..`).
    public static func entries(of path: String) throws(Failure) -> [String] {
        guard let directory = opendir(path) else { throw Failure(path: path, reason: systemError()) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private static func systemError() -> String { String(cString: strerror(errno)) }
}

/// The process's environment variables.
public enum ProcessEnvironment {
    public static func current() -> [String: String] {
        var variables: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return variables
    }
}
