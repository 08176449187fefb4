import EmbeddedFirestore
import Foundation
import Hummingbird
import NIOCore

/// Who may reach what when `herald dev` listens beyond this machine (`--host 0.0.0.0`, a phone on the
/// Wi-Fi): the documents API (Firestore REST, WebChannel, and gRPC, which serves nothing else) and
/// Auth's sign-in calls answer everyone; everything else (the console, admin and replay endpoints, fault injection, the FCM sink
/// and its records, the OAuth and identity token endpoints, the metadata server, the trace receiver)
/// answers only to this machine, known by the connection's peer address (never by a header a client
/// could write), or to the networks `--admin-from` names (a container's bridge, a compose network).
public struct PeerAccess: Sendable, Hashable {
    /// Networks trusted like this machine, besides loopback.
    public var adminNetworks: [Network]

    public init(adminNetworks: [Network] = []) { self.adminNetworks = adminNetworks }

    /// An IPv4 or IPv6 network, `ADDRESS/PREFIX` (a bare address: that one address).
    public struct Network: Sendable, Hashable, CustomStringConvertible {
        let bytes: [UInt8]
        let prefix: Int
        public let description: String

        public init?(_ text: String) {
            let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
            guard let address = PeerAccess.bytes(of: parts[0]) else { return nil }
            let bits = address.count * 8
            let prefix = parts.count == 2 ? Int(parts[1]) : bits
            guard let prefix, (0...bits).contains(prefix) else { return nil }
            self.bytes = address
            self.prefix = prefix
            self.description = text
        }

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var left = prefix
            for (a, b) in zip(address, bytes) where left > 0 {
                let mask: UInt8 = left >= 8 ? 0xFF : UInt8(0xFF) << (8 - left)
                if a & mask != b & mask { return false }
                left -= 8
            }
            return true
        }
    }

    /// An address as bytes (4 for IPv4, 16 for IPv6; an IPv4-mapped IPv6 address as its IPv4 bytes).
    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    static let loopback = [Network("127.0.0.0/8")!, Network("::1")!]

    /// Whether the peer counts as this machine: a loopback address, or one in an admin network. A peer
    /// that is not an IP connection (a Unix socket) is local.
    public func isLocal(_ peer: SocketAddress?) -> Bool {
        guard let peer else { return false }
        guard let ip = peer.ipAddress else { return true }
        guard let bytes = Self.bytes(of: ip) else { return false }
        return (Self.loopback + adminNetworks).contains { $0.contains(bytes) }
    }

    /// Whether a request is for what an app calls, which answers everyone: the documents API, and Auth's
    /// sign-in calls (not the Admin SDKs' `projects/P/accounts…`, nor the emulator's own endpoints).
    static func isDocumentsAPI(_ request: LocalRequest) -> Bool {
        let s = request.segments
        // v1/projects/P/databases/D/documents…, as REST and the WebChannel streams name them.
        if s.count >= 5, s[0] == "v1", s[1] == "projects", s[3] == "databases" { return true }
        if s.count == 3, s[0] == "identitytoolkit.googleapis.com", s[1] == "v1", s[2].hasPrefix("accounts:") { return true }
        if s == ["securetoken.googleapis.com", "v1", "token"] { return true }
        return FirestoreWebChannel.stream(of: request) != nil
    }

    func refusal(of request: LocalRequest, from peer: SocketAddress?) -> LocalAPIError? {
        guard !Self.isDocumentsAPI(request), !isLocal(peer) else { return nil }
        return LocalAPIError(
            code: 403, status: "PERMISSION_DENIED",
            message:
                "herald dev serves other machines the Firestore API only; /\(request.segments.prefix(3).joined(separator: "/").prefix(80)) answers this machine (or a network given with --admin-from)."
        )
    }
}

/// A request context that knows the connection's peer: the only word on who is asking that a client
/// cannot forge.
struct PeerRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
