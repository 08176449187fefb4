import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import Testing

struct DemoWorldTests {
    /// Two `--send` lines run within one millisecond: each message is its own document (before, ids
    /// came from the time alone, so in prd001's flat messages collection the second write hit
    /// `exists: false` and was dropped — one run in a few on CI).
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func messagesWrittenInTheSameMillisecondAreDifferentDocuments(preset: String) throws {
        let world = DemoWorld(schema: try #require(Schema.presets[preset]), project: "p")
        let now = Timestamp.now()
        let first = try #require(try world.message(sending: "alice→family: Dinner at 6pm", at: now))
        let second = try #require(try world.message(sending: "bob→alice-bob: Running late", at: now))
        let third = try #require(try world.message(sending: "bob→alice-bob: Running late", at: now))
        let paths = Set([first, second, third].map { $0.write.document.path })
        #expect(paths.count == 3, "\(paths)")
    }
}
