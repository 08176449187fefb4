import WireFormats

/// A document path pattern as Eventarc's Firestore triggers take it, e.g.
/// `conversations/{conversationId}/messages/{messageId}`: literal segments, and `{name}` wildcards that
/// each match one segment.
public struct DocumentPattern: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    let segments: [Segment]

    enum Segment: Sendable, Hashable {
        case literal(String)
        case wildcard(name: String)
    }

    public init(_ text: String) {
        self.text = text
        segments = text.parts(splitAt: "/").filter { !$0.isEmpty }.map { part in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .wildcard(name: String(part.dropFirst().dropLast())) : .literal(part)
        }
    }

    public var description: String { text }

    /// The wildcards bound to the document's segments, or nil if the document does not match.
    public func match(_ document: DocumentName) -> [String: String]? {
        guard segments.count == document.segments.count else { return nil }
        var captures: [String: String] = [:]
        for (pattern, segment) in zip(segments, document.segments) {
            switch pattern {
            case .wildcard(let name): captures[name] = segment
            case .literal(let literal): if literal != segment { return nil }
            }
        }
        return captures
    }
}
