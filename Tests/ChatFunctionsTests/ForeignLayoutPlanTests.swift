import ChatFunctions
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// onMessageCreated on layouts no preset has, as other chat libraries keep them: each was once read
/// wrong or not at all (SchemaInferenceOfForeignLayoutsTests has what `schema infer` proposes for them).
@Suite struct ForeignLayoutPlanTests {
    /// react-native-gifted-chat keeps the sender in a map (`user: {_id, name}`): the sender is not
    /// pushed to, and the name the message carries is shown.
    @Test func aSenderInsideAMapIsReadThere() throws {
        let file = try JSONValue(parsing: #"{"extends": "default", "senderIDField": "user._id", "senderNameField": "user.name"}"#)
        var world = PreferencesWorld(try Schema.load("gifted.json", file: file))
        world.message["user"] = .map(["_id": .string("alice"), "name": .string("Ally"), "avatar": .string("https://example.com/a.png")])
        let plan = try world.plan()
        #expect(plan.pushes.map(\.token).sorted() == ["tok-bob", "tok-carol"])
        #expect(plan.pushes.first?.content["notification"]?["body"] == "Family • Ally: Dinner at 6pm")
        world.message["user"] = .map(["_id": .string("mallory")])
        #expect(try world.plan().pushes.isEmpty, "a sender who is not a member")
    }

    /// flyer_chat keeps `firstName` and `lastName` and no full name: with `familyNameField` alerts and
    /// @mentions use both, and either alone when the other is blank.
    @Test func aNameKeptInTwoFieldsIsShownWhole() throws {
        let file = try JSONValue(parsing: #"{"extends": "default", "displayNameField": "firstName", "familyNameField": "lastName"}"#)
        var world = PreferencesWorld(try Schema.load("flyer.json", file: file))
        world.senderName = "John"
        world.users = ["alice": ["lastName": .string("Smith")], "bob": ["lastName": .string("Jones")]]
        func bob() throws -> String? { try world.plan().pushes.first { $0.token == "tok-bob" }?.content["notification"]?["body"]?.stringValue }
        #expect(try bob() == "Family • John Smith: Dinner at 6pm")
        world.text = "@bob jones are you in?"
        #expect(try bob() == "Family • John Smith mentioned you: @bob jones are you in?")
        world.text = "Dinner at 6pm"
        world.senderName = "  "
        #expect(try bob() == "Family • Smith: Dinner at 6pm", "a blank first name leaves the last")
        world.users["alice"] = ["lastName": .integer(7)]
        #expect(try bob() == "Family • Someone: Dinner at 6pm", "no name at all")
    }

    /// Members kept as a map (`{uid: true}`), one of them `false` (who left): pushes go to the others.
    @Test func membersKeptAsAMapAreRead() throws {
        var world = PreferencesWorld("default")
        world.conversation["members"] = .map(["alice": .boolean(true), "bob": .map(["role": .string("admin")]), "carol": .boolean(false)])
        let plan = try world.plan()
        #expect(plan.pushes.map(\.token) == ["tok-bob"])
        #expect(plan.pushes.first?.content["notification"]?["body"] == "Family • Alice: Dinner at 6pm")
    }

    /// Readers kept as a map (`readBy: {uid: timestamp}`; `false` for none): a reader's new key counts
    /// their unread message down, as an array's new id does.
    @Test func readersKeptAsAMapAreRead() throws {
        var world = ReceiptWorld()
        world.message["readBy"] = .map(["bob": .timestamp(Timestamp(seconds: 20)), "carol": .boolean(false)])
        world.previous = world.message.merging(["readBy": .map(["carol": .boolean(false)])]) { $1 }
        let plan = try world.plan()
        #expect(plan.allWrites.contains { $0.document.path == "conversations/family/messages/m1/heraldReads/bob" })
        #expect(!plan.allWrites.contains { $0.document.path.hasSuffix("heraldReads/carol") }, "false is no read")
        #expect(plan.pushes.map(\.token) == ["b-phone", "b-ipad"])
    }

    /// react-native-gifted-chat keeps no type: a photo is a message with an empty text and the photo's
    /// address in `image`. With `mediaFields` its alert shows the label, and its data the type; a type
    /// field, where a message has one, still decides.
    @Test func aMessageWithoutATypeTakesItFromItsMediaField() throws {
        let file: JSONValue = ["extends": "default", "mediaFields": ["image": "image", "video": "video"]]
        var world = PreferencesWorld(try Schema.load("gifted.json", file: file))
        world.text = ""
        world.type = ""
        world.message["image"] = .string("https://example.com/p.jpg")
        let plan = try world.plan()
        #expect(plan.pushes.first?.body == "Family • Alice: 📷 Photo")
        #expect(plan.pushes.first?.content["data"]?["type"] == "image")
        world.message["image"] = .string(" ")
        #expect(try world.plan().pushes.first?.body == "Family • Alice: New message", "a blank address is no photo")
        world.type = "video"
        #expect(try world.plan().pushes.first?.body == "Family • Alice: 🎥 Video")
    }
}
