import HeraldCore
import WireFormats

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
    /// combining marks is never split), then "…" when cut; a readable label for messages without text.
    /// Invisible characters and line breaks go, and a right-to-left text is isolated, so it keeps its own
    /// direction without reordering the sender's part of the line (`DisplayedText`).
    public static func of(text: String?, type: String?) -> String {
        let collapsed = collapsed(text)
        return collapsed.isEmpty
            ? label(type: type).text : DisplayedText.shown(DisplayedText.bounded(collapsed, characters: maximumCharacters, bytes: maximumBytes))
    }

    /// The key of the label's string in the app's languages, for a message without text (a text is never translated).
    public static func localizationKey(text: String?, type: String?) -> String? {
        (text ?? "").isBlank ? label(type: type).key : nil
    }

    static func collapsed(_ text: String?) -> String { DisplayedText.cleaned(text ?? "") }

    static func label(type: String?) -> (text: String, key: String) {
        switch type?.lowercased() {
        case "image", "photo": ("📷 Photo", "herald_body_photo")
        case "video": ("🎥 Video", "herald_body_video")
        case "audio", "voice": ("🎤 Voice message", "herald_body_voice")
        case "file", "document": ("📎 File", "herald_body_file")
        case "location": ("📍 Location", "herald_body_location")
        case "sticker": ("Sticker", "herald_body_sticker")
        default: ("New message", "herald_body_message")
        }
    }
}
