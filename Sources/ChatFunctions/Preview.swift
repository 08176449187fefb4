import Foundation

/// The one-line text a notification shows for a message.
public enum Preview {
    public static let maximumCharacters = 80

    /// The first 80 user-perceived characters (grapheme clusters: an emoji or a letter with its
    /// combining marks is never split), "…" when cut; a readable label for messages without text.
    public static func of(text: String?, type: String?) -> String {
        let trimmed = (text ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let collapsed = trimmed.split(whereSeparator: \.isNewline).joined(separator: " ")
        if !collapsed.isEmpty {
            guard collapsed.count > maximumCharacters else { return collapsed }
            return String(collapsed.prefix(maximumCharacters - 1)) + "…"
        }
        switch type?.lowercased() {
        case "image", "photo": return "📷 Photo"
        case "video": return "🎥 Video"
        case "audio", "voice": return "🎤 Voice message"
        case "file", "document": return "📎 File"
        case "location": return "📍 Location"
        case "sticker": return "Sticker"
        default: return "New message"
        }
    }
}
