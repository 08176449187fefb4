#if canImport(Glibc)
import Glibc
#endif

public struct NoFreePort: Error, CustomStringConvertible {
    public var description: String { "could not find a free port on 127.0.0.1" }
}

/// A loopback port nothing listens on now (the kernel picks it), for a server started next.
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw NoFreePort() }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw NoFreePort() }
    return Int(UInt16(bigEndian: address.sin_port))
}
