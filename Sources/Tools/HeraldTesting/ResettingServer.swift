import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP listener that reads a request and resets the connection (SO_LINGER 0), for testing what
/// clients do when a connection dies under them.
public final class ResettingServer: @unchecked Sendable {
    public let port: Int
    let fd: Int32
    let counter = Counter()
    let thread: Thread

    /// How many connections were accepted (and reset) so far.
    public var connections: Int { counter.value }

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok, listen(fd, 64) == 0 else {
            close(fd)
            throw RawHTTPError("could not listen")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let counter = self.counter
        thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                counter.increment()
                // Each connection on its own thread, so one slow client never holds the others in the backlog.
                Thread.detachNewThread {
                    var timeout = timeval(tv_sec: 2, tv_usec: 0)
                    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    _ = recv(client, &buffer, buffer.count, 0)
                    close(client)
                }
            }
        }
        thread.start()
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
