#if canImport(Glibc)
import Glibc
#endif

public struct NoFreePort: Error, CustomStringConvertible {
    public var description: String { "could not find a free port on 127.0.0.1" }
}

/// A loopback port nothing listens on now, for a server started next. Chosen below Linux's default
/// range of ephemeral ports (32768–60999): a port the kernel picks comes from that range, where any
/// outgoing connection may take it as its own local port between this call and the server's bind
/// ("Address already in use", seen in a full test run). The kernel's pick if none is free below it.
public func freeLoopbackPort() throws -> Int {
    for _ in 0..<64 {
        if let port = bindableLoopbackPort(Int.random(in: 20_000..<32_768)) { return port }
    }
    guard let port = bindableLoopbackPort(0) else { throw NoFreePort() }
    return port
}

/// `port` (the kernel's choice for 0) if a socket can bind it on 127.0.0.1 now.
private func bindableLoopbackPort(_ port: Int) -> Int? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}
