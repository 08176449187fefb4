import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A bare TCP connection for tests that need to send a request in pieces (a body still arriving
/// when the server is told to stop) or bytes no HTTP client would send.
public final class RawHTTPConnection: Sendable {
    let fd: Int32

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // No close here: self is fully initialized, so deinit runs when init throws and closes fd. A second
        // close could hit a descriptor another thread has opened since (a child's pipe: EBADF there).
        guard result == 0 else { throw RawHTTPError("connect() to port \(port) failed") }
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw RawHTTPError("send() failed") }
            offset += sent
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads until the peer closes the connection or `timeout` passes.
    public func readAll(timeout: TimeInterval = 10) -> String { read(timeout: timeout).text }

    /// What arrives until the peer closes the connection (`closedByPeer`) or `timeout` passes without a byte.
    public func read(timeout: TimeInterval) -> (text: String, closedByPeer: Bool) {
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return (String(decoding: data, as: UTF8.self), true) }
            if n < 0 { return (String(decoding: data, as: UTF8.self), errno == ECONNRESET) }
            data.append(contentsOf: buffer[0..<n])
        }
    }

    /// What arrives until it contains `text` (an answer, a `100 Continue`: evidence of how far the server
    /// got), the peer closes the connection, or `timeout` passes in all.
    public func read(until text: String, timeout: TimeInterval) -> String {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !String(decoding: data, as: UTF8.self).contains(text) {
            let left = (deadline - ContinuousClock.now) / .seconds(1)
            guard left > 0 else { break }
            // At least a millisecond: a zero timeout would wait forever.
            let wait = max(left, 0.001)
            var tv = timeval(tv_sec: Int(wait), tv_usec: Int((wait - wait.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: data, as: UTF8.self)
    }
}

public struct RawHTTPError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
