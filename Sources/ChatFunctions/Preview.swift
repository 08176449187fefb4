#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one-line text a notification shows for a message.
public enum Preview {
    public static let maximumCharacters = 80
    /// However the characters are made (an emoji with modifiers, letters under many combining marks),
    /// the preview stays a small part of FCM's 4 KiB payload.
    public static let maximumBytes = 1500

    /// A message's type as a notification's data carries it: a short plain word, else "text".
    public static func type(_ stored: String?) -> String {
        guard let stored, (1...32).contains(stored.utf8.count), stored.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return "text" }
        return stored
    }

    /// The first 80 user-perceived characters (grapheme clusters: an emoji or a letter with its
    /// combining marks is never split), "…" when cut; a readable label for messages without text.
    public static func of(text: String?, type: String?) -> String {
        let trimmed = (text ?? "").trimmingWhitespace
        let collapsed = trimmed.split(whereSeparator: \.isNewline).joined(separator: " ")
        if !collapsed.isEmpty {
            return StoredValues.bounded(collapsed, characters: maximumCharacters, bytes: maximumBytes)
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
