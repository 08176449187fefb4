import HeraldHTTPClient

/// Where Herald may send credentials (access tokens, signed assertions, identity tokens) over plain
/// `http`: to this machine, to the metadata server, and to an emulator — hosts a local cloud or Google's
/// own runtime provides. Anywhere else a URL must be `https`, so a setting that is wrong by one letter
/// cannot send tokens across a network in clear.
public struct CleartextPolicy: Sendable {
    /// Hosts besides loopback that may be reached over `http`, lower-cased without their ports.
    public let hosts: Set<String>

    /// The metadata server (`GCE_METADATA_HOST`, else Google's) and the emulator (`FIRESTORE_EMULATOR_HOST`) of this environment.
    public init(environment: [String: String]) {
        var hosts: Set<String> = [ApplicationDefaultCredentials.googleMetadataHost, "metadata.google.internal"]
        for key in ["GCE_METADATA_HOST", "FIRESTORE_EMULATOR_HOST"] {
            if let value = environment[key], !value.isEmpty { hosts.insert(Self.host(ofAuthority: value)) }
        }
        self.hosts = hosts
    }

    /// Why `url`, given as `setting`, may not be used, or nil: not an http(s) URL, or plain `http` to
    /// another host than those allowed.
    public func problem(_ url: String, setting: String) -> String? {
        guard let parsed = try? HTTPURL(url) else { return "\(setting) must be an http(s) URL, not \"\(HTTPURL.redacted(url))\"" }
        let host = parsed.origin.host.lowercased()
        if parsed.origin.secure || Self.isLoopback(host) || hosts.contains(host) { return nil }
        return "\(setting) must be https, not \"\(HTTPURL.redacted(url))\": plain http only to this machine, the metadata server "
            + "(GCE_METADATA_HOST) or the emulator (FIRESTORE_EMULATOR_HOST), so no token crosses a network in clear"
    }

    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }

    /// `host` of `host:port` or `[v6]:port`, lower-cased.
    static func host(ofAuthority authority: String) -> String {
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<end]).lowercased()
        }
        return String(authority.split(separator: ":").first ?? "").lowercased()
    }
}
