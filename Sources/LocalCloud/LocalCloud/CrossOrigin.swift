import EmbeddedFirestore
import Hummingbird

/// CORS for the pages `RequestGuard` lets in (a web app on another loopback port, with the Firestore
/// web SDK): a preflight is answered for them, and every answer names the page's origin, with
/// credentials allowed (the SDK's XHRs send them) and WebChannel's headers exposed, as Google's
/// emulator answers. A page the guard refuses gets no CORS header: its browser shows it nothing.
enum CrossOrigin {
    /// `OPTIONS` with `Access-Control-Request-Method`: what the page may send.
    static func preflight(_ request: LocalRequest) -> Response? {
        guard request.method == "OPTIONS", let origin = request.headers["origin"], request.headers["access-control-request-method"] != nil else {
            return nil
        }
        var fields: HTTPFields = [
            .accessControlAllowMethods: "GET, POST, PATCH, PUT, DELETE, OPTIONS", .accessControlMaxAge: "3600",
        ]
        if let asked = request.headers["access-control-request-headers"] { fields[.accessControlAllowHeaders] = asked }
        return allowing(origin, Response(status: .noContent, headers: fields))
    }

    static func allowing(_ origin: String?, _ response: Response) -> Response {
        guard let origin else { return response }
        var response = response
        response.headers[.accessControlAllowOrigin] = origin
        response.headers[.accessControlAllowCredentials] = "true"
        response.headers[.accessControlExposeHeaders] = "x-client-wire-protocol, x-http-session-id, x-http-initial-response"
        response.headers[.vary] = "Origin"
        return response
    }
}
