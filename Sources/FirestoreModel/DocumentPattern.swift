/// A document path pattern as Eventarc's Firestore triggers take it, e.g.
/// `conversations/{conversationId}/messages/{messageId}`: literal segments, and `{name}` wildcards that
/// each match one segment.
public struct DocumentPattern: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    let segments: [Substring]

    public init(_ text: String) {
        self.text = text
        segments = text.split(separator: "/")
    }

    public var description: String { text }

    /// The wildcards bound to the document's segments, or nil if the document does not match.
    public func match(_ document: DocumentName) -> [String: String]? {
        guard segments.count == document.segments.count else { return nil }
        var captures: [String: String] = [:]
        for (pattern, segment) in zip(segments, document.segments) {
            if pattern.hasPrefix("{"), pattern.hasSuffix("}") {
                captures[String(pattern.dropFirst().dropLast())] = segment
            } else if pattern != segment {
                return nil
            }
        }
        return captures
    }
}
