import HTTPTypes
import Hummingbird
import NIOCore

/// What the Firestore streams (gRPC, WebChannel) ask of the server they are mounted in: the store and
/// its WebChannel sessions, who may call, which project is served, and the answer to a unary call,
/// which goes through that server's own routing (its checks, injected faults, the REST handler), so
/// every protocol answers exactly as REST does.
package struct FirestoreStreamHost: Sendable {
    package var firestore: LocalFirestore
    package var webChannels: WebChannelSessions
    /// Host names requests may name besides IP addresses and `localhost` (see `RequestGuard`).
    package var allowedHosts: [String]
    /// Checks a request's `authorization` header.
    package var authorize: @Sendable (String?) throws(LocalAPIError) -> Void
    /// Refuses a project the server does not serve.
    package var checkServed: @Sendable (_ project: String) throws(LocalAPIError) -> Void
    package var answer: @Sendable (LocalRequest) async -> Answer

    /// What a request gets once it is past the HTTP layer's checks: an answer, or (an injected fault)
    /// the connection reset.
    package enum Answer: Sendable {
        case response(LocalResponse)
        case reset
    }

    package init(
        firestore: LocalFirestore, webChannels: WebChannelSessions, allowedHosts: [String],
        authorize: @escaping @Sendable (String?) throws(LocalAPIError) -> Void,
        checkServed: @escaping @Sendable (String) throws(LocalAPIError) -> Void,
        answer: @escaping @Sendable (LocalRequest) async -> Answer
    ) {
        self.firestore = firestore
        self.webChannels = webChannels
        self.allowedHosts = allowedHosts
        self.authorize = authorize
        self.checkServed = checkServed
        self.answer = answer
    }
}

extension Response {
    /// `result` as an HTTP response.
    package init(_ result: LocalResponse) {
        var fields: HTTPFields = [.contentType: result.contentType]
        for (name, value) in result.headers { if let n = HTTPField.Name(name) { fields[n] = value } }
        self.init(status: .init(code: result.status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: result.body)))
    }
}
