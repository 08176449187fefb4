import FirestoreEvents
import FirestoreModel
import HeraldCore

/// Counts a message's reactions: one per person, `…/messages/{messageId}/reactions/{userId}`.
public struct OnReaction: EventFunction, ConfigurableFunction {
    public static let name = "onReaction"
    public static let summary = "Counts a message's reactions."
    public init(settings: FunctionSettings) {}

    public var trigger: Trigger {
        Trigger(pattern: "conversations/{conversationId}/messages/{messageId}/reactions/{userId}", kinds: [.created])
    }

    public func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        guard let message = change.document.parent else { return .skip("a reaction outside a message") }
        guard try reading.document(message) != nil else { return .skip("message \(message.path) is gone") }
        let counted = FieldTransform(FieldPath("reactionCount"), .increment(.integer(1)))
        return Plan(writes: [Write(.transform(message), transforms: [counted], precondition: .exists(true))])
    }
}
