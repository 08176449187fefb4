import ChatFunctions
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// Hostile inputs, round 3, class 1: a notification cannot lie about its sender. Display names, group
/// names and message texts are any client's to write; what Bob's phone shows about *who* wrote stays
/// true: bidi controls and invisible characters removed, line breaks made spaces, right-to-left text
/// isolated, a look-alike of another member's name followed by the sender's id. In titles, bodies
/// and localization arguments alike.
@Suite struct SenderSpoofingTests {
    /// What Bob sees when Alice's client writes `senderName` as her name (and `text`, in Family).
    static func shown(
        senderName: String, text: String = "Dinner at 6pm", group: String = "Family", preset: String = "default"
    ) throws -> (line: String, arguments: [String]) {
        var world = PreferencesWorld(preset)
        world.senderName = senderName
        world.text = text
        world.conversation[world.schema.groupNameField] = .string(group)
        let push = try #require(try world.plan().pushes.first { $0.token == "tok-bob" }).content
        let title = push["notification"]?["title"]?.stringValue
        let body = push["notification"]?["body"]?.stringValue ?? ""
        let apns = push["apns"]?["payload"]?["aps"]?["alert"]
        let arguments = (apns?["title-loc-args"]?.arrayValue ?? []) + (apns?["loc-args"]?.arrayValue ?? [])
        #expect(apns?["body"]?.stringValue == body, "APNs shows the same")
        return ([title, body].compactMap { $0 }.joined(separator: " / "), arguments.compactMap(\.stringValue))
    }

    static let isolate = (open: "\u{2068}", close: "\u{2069}")

    @Test func aNameThatBorrowsAnotherMembersLooksIsMarkedWithTheSendersID() throws {
        // Carol is a member: Alice's client calls her "Carol" in several disguises.
        for disguise in ["Carol", "\u{202E}Carol", "Car\u{200B}ol", "C\u{0430}rol", "CAROL", "Carol\u{2066}", "Ca\u{00AD}rol"] {
            let shown = try Self.shown(senderName: disguise)
            #expect(
                shown.line.hasPrefix("Family • ") && shown.line.contains(" (alice): Dinner at 6pm"),
                "\(disguise.unicodeScalars.map { $0.value }): \(shown.line)")
            #expect(shown.arguments.contains { $0.hasSuffix(" (alice)") }, "the localization arguments too: \(shown.arguments)")
        }
        // A name of its own is shown as it is.
        #expect(try Self.shown(senderName: "Alice").line == "Family • Alice: Dinner at 6pm")
        #expect(try Self.shown(senderName: "Carolina").line == "Family • Carolina: Dinner at 6pm")
    }

    @Test func lineBreaksAndInvisibleCharactersCannotForgeALine() throws {
        // A name that would put "Carol: Meet me outside" on a line of its own.
        let forged = try Self.shown(senderName: "Alice\nCarol: Meet me outside\u{2029}", text: "ok")
        #expect(forged.line == "Family • Alice Carol: Meet me outside: ok", "\(forged.line)")
        let joined = forged.arguments.joined()
        #expect(!joined.contains("\n") && !joined.contains("\u{2029}"))
        // Zero-width and format characters go; an emoji's own joiners stay.
        #expect(try Self.shown(senderName: "A\u{200B}l\u{FEFF}i\u{200C}c\u{2060}e").line == "Family • Alice: Dinner at 6pm")
        #expect(try Self.shown(senderName: "Alice 👩‍👩‍👧").line == "Family • Alice 👩‍👩‍👧: Dinner at 6pm")
        // The group's name too.
        #expect(try Self.shown(senderName: "Alice", group: "Fam\u{202E}ily\r\nAdmins").line == "Family Admins • Alice: Dinner at 6pm")
    }

    @Test func bidiControlsCannotReorderTheSenderPart() throws {
        // An override in the text would run backwards over what follows it on the line; removed.
        let text = try Self.shown(senderName: "Alice", text: "\u{202E}txt.exe\u{202C} hi")
        #expect(text.line == "Family • Alice: txt.exe hi", "\(text.line)")
        // Right-to-left names and texts keep their direction inside an isolate.
        let hebrew = "\u{05D0}\u{05DC}\u{05D9}\u{05E1}"
        let named = try Self.shown(senderName: hebrew)
        #expect(named.line == "Family • \(Self.isolate.open)\(hebrew)\(Self.isolate.close): Dinner at 6pm", "\(named.line)")
        #expect(named.arguments.contains("\(Self.isolate.open)\(hebrew)\(Self.isolate.close)"))
        let arabic = "مرحبا بالجميع"
        #expect(try Self.shown(senderName: "Alice", text: arabic).line == "Family • Alice: \(Self.isolate.open)\(arabic)\(Self.isolate.close)")
        // A name that closes an isolate it did not open cannot escape: its own isolates are removed first.
        let escape = try Self.shown(senderName: "\u{2069}\u{202E}\(hebrew)")
        #expect(escape.line == "Family • \(Self.isolate.open)\(hebrew)\(Self.isolate.close): Dinner at 6pm", "\(escape.line)")
    }

    /// "Sender name and message preview" presets put the sender in the title: the same rules.
    @Test func theTitleIsHeldToTheSameRules() throws {
        let shown = try Self.shown(senderName: "\u{202E}Carol\n", preset: "prd004")
        #expect(shown.line == "Carol (alice) in Family / Dinner at 6pm", "\(shown.line)")
        #expect(shown.arguments.first == "Carol (alice)", "\(shown.arguments)")
    }

    @Test func displayedTextRules() {
        #expect(DisplayedText.cleaned("  a\t\tb\n\nc  ") == "a b c")
        #expect(DisplayedText.skeleton("Аlice") == DisplayedText.skeleton("alice"))
        #expect(DisplayedText.skeleton("Bob") != DisplayedText.skeleton("Rob"))
        #expect(
            DisplayedText.cleaned("🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}") == "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
            "a subdivision flag")
        #expect(DisplayedText.cleaned("x\u{E0067}y") == "xy", "tag characters elsewhere")
    }
}
