/// What keeps a web page the developer happens to open from using the local cloud on their laptop.
/// Any page can send a POST to 127.0.0.1 (a `text/plain` body needs no preflight) and, through DNS
/// rebinding, read the answers. So a request must name this machine by address, `localhost` or a
/// host name allowed by `--allow-host` (a rebinding page names its own domain); a request from a
/// browser must come from such an origin; and a write must say it is JSON (as every Google client
/// does), except the OAuth token endpoint, which takes a form.
struct RequestGuard {
    let allowedHosts: [String]

    func refusal(of request: LocalRequest) -> LocalAPIError? {
        if let host = request.headers["host"], !isAllowed(Self.hostName(host)) {
            return LocalAPIError(
                code: 403, status: "PERMISSION_DENIED",
                message: "Host \"\(host.prefix(100))\" is not this local cloud's: name it by address or localhost, or start herald dev with --allow-host NAME.")
        }
        if let origin = request.headers["origin"] {
            // `scheme://authority`; a sandboxed page or a file sends "null", which names no host.
            let host = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? ""
            guard isAllowed(Self.hostName(host)) else {
                return LocalAPIError(code: 403, status: "PERMISSION_DENIED", message: "Requests from the web page at \(origin.prefix(100)) are not accepted.")
            }
        }
        guard !["GET", "HEAD", "OPTIONS"].contains(request.method), !request.body.isEmpty else { return nil }
        let type = request.headers["content-type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        let isTokenEndpoint = request.segments == ["token"]
        if type == "application/json" || (isTokenEndpoint && type == "application/x-www-form-urlencoded") { return nil }
        return LocalAPIError(
            code: 415, status: "INVALID_ARGUMENT",
            message:
                "A request with a body must send Content-Type: application/json\(isTokenEndpoint ? " (or a form, for /token)" : ""), not \"\(type.prefix(80))\"."
        )
    }

    func isAllowed(_ host: String) -> Bool {
        host == "localhost" || Self.isAddress(host) || allowedHosts.contains { $0.lowercased() == host }
    }

    /// The host of a `Host` header or an origin's authority, lowercased, without port or brackets.
    static func hostName(_ authority: String) -> String {
        let lower = authority.lowercased()
        if lower.hasPrefix("[") { return String(lower.dropFirst().prefix { $0 != "]" }) }
        return String(lower.prefix { $0 != ":" })
    }

    /// An IPv4 or IPv6 literal: no DNS name, so nothing a rebinding page could make point here.
    static func isAddress(_ host: String) -> Bool {
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) { return true }
        return host.contains(":") && host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }
}
