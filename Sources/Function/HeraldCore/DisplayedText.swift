/// Text a client wrote, made safe to show in a notification: a display name, a group name or a
/// message's preview cannot change what the phone shows about *who* wrote (docs/notifications.md).
///
/// - Line breaks (and the other separators of lines and paragraphs) become spaces; runs of spaces one.
/// - Invisible characters go: controls, format characters (zero-width spaces and joiners outside emoji,
///   the soft hyphen, tag characters, the byte order mark) and every explicit bidi control
///   (U+202A–U+202E embeddings and overrides, U+2066–U+2069 isolates, U+200E/U+200F/U+061C marks).
/// - A text with right-to-left letters is wrapped in a first-strong isolate (U+2068 … U+2069), so its
///   direction stays inside it and cannot reorder the rest of the line ("Family • Alice: …").
import WireFormats

public enum DisplayedText {
    public static let firstStrongIsolate: Unicode.Scalar = "\u{2068}"
    public static let popDirectionalIsolate: Unicode.Scalar = "\u{2069}"

    /// What a text cut short ends with.
    public static let ellipsis = "…"

    /// `text` if it is at most `characters` user-perceived characters and `bytes` of UTF-8; else its
    /// first `characters` characters (fewer if they outgrow `bytes`), whole characters only, then "…".
    public static func bounded(_ text: String, characters: Int, bytes: Int) -> String {
        // Never more characters than bytes: a short text is counted without walking its clusters.
        if text.utf8.count <= min(bytes, characters) || (text.utf8.count <= bytes && text.count <= characters) { return text }
        var result = ""
        var size = 0
        for character in text.prefix(characters) {
            let length = character.utf8.count
            guard size + length + ellipsis.utf8.count <= bytes else { break }
            result.append(character)
            size += length
        }
        return result + ellipsis
    }

    /// The text with invisible characters removed and line breaks made spaces (not isolated).
    public static func cleaned(_ text: String) -> String {
        // The usual case, checked cheaply: printable ASCII holds nothing to remove.
        if text.utf8.allSatisfy({ (0x20...0x7E).contains($0) }), !text.contains("  ") {
            return text.trimmingWhitespace
        }
        var scalars = String.UnicodeScalarView()
        var lastWasSpace = true
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            if isLineBreak(scalar) || scalar.properties.isWhitespace {
                if !lastWasSpace { scalars.append(" ") }
                lastWasSpace = true
            } else if isInvisible(scalar, after: previous) {
                // Tag characters spell a subdivision flag after U+1F3F4 (🏴󠁧󠁢󠁳󠁣󠁴󠁿): those are shown.
                guard (0xE0020...0xE007F).contains(scalar.value), let before = previous, before.value == 0x1F3F4 || (0xE0020...0xE007F).contains(before.value)
                else { continue }
                scalars.append(scalar)
            } else {
                scalars.append(scalar)
                lastWasSpace = false
            }
            previous = scalar
        }
        var result = String(scalars)
        while result.last == " " { result.removeLast() }
        return result
    }

    /// Cleaned, and isolated when it holds right-to-left letters.
    public static func shown(_ text: String) -> String {
        let clean = cleaned(text)
        guard clean.unicodeScalars.contains(where: isRightToLeft) else { return clean }
        return "\(firstStrongIsolate)\(clean)\(popDirectionalIsolate)"
    }

    static func isLineBreak(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A...0x0D, 0x85, 0x2028, 0x2029: true
        default: false
        }
    }

    /// Controls, bidi controls and invisible format characters. A zero-width joiner between two
    /// emoji (👩‍👩‍👧) and the variation selectors are part of what is shown and stay.
    static func isInvisible(_ scalar: Unicode.Scalar, after previous: Unicode.Scalar?) -> Bool {
        switch scalar.value {
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return true
        case 0x200D: return !(previous?.properties.isEmoji ?? false) || (previous?.value ?? 0) < 0x80
        default: break
        }
        switch scalar.properties.generalCategory {
        case .control, .format, .unassigned, .privateUse, .surrogate: return true
        default: return false
        }
    }

    /// Letters of right-to-left scripts (Hebrew, Arabic, Syriac, Thaana, N'Ko and their presentation forms).
    static func isRightToLeft(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0590...0x08FF, 0xFB1D...0xFDFF, 0xFE70...0xFEFF, 0x10800...0x10FFF, 0x1E800...0x1EFFF: true
        default: false
        }
    }

    /// What a name looks like, for telling look-alikes apart: case folded, marks and invisible
    /// characters dropped, and the Cyrillic and Greek letters that look Latin mapped to it
    /// ("Аlice" with a Cyrillic А looks like "alice"). An approximation of Unicode's confusable skeleton
    /// for the letters a name is likely to borrow.
    public static func skeleton(_ name: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in cleaned(name).lowercased().unicodeScalars {
            if scalar.properties.generalCategory == .nonspacingMark || scalar.properties.isWhitespace { continue }
            if let latin = lookAlikes[scalar.value] {
                result.append(latin)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    static let lookAlikes: [UInt32: Unicode.Scalar] = [
        // Cyrillic
        0x0430: "a", 0x0435: "e", 0x043E: "o", 0x0440: "p", 0x0441: "c", 0x0443: "y", 0x0445: "x", 0x0456: "i", 0x0458: "j",
        0x0455: "s", 0x0501: "d", 0x04BB: "h", 0x0432: "b", 0x043A: "k", 0x043C: "m", 0x043D: "h", 0x0442: "t", 0x0457: "i",
        // Greek
        0x03B1: "a", 0x03BF: "o", 0x03C1: "p", 0x03BD: "v", 0x03C4: "t", 0x03B9: "i", 0x03BA: "k", 0x03C5: "u", 0x03C7: "x",
        // Latin and digits that pass for each other
        0x0131: "i", 0x0269: "i", 0x0261: "g", 0x0031: "l", 0x0049: "l", 0x0030: "o", 0x00DF: "b",
    ]
}
