import ChatFunctions
import FirestoreEvents
import FirestoreModel
import HeraldCore
import PushTokens
import Testing
import WireFormats

/// A token layout Herald does not ship, defined here with the public protocol alone: a map of device
/// ids to tokens, `pushTokens {iphone: "ExponentPushToken[…]"}`. Registered with one line, it is read
/// from a schema file, pushed to, cleaned and swept like the layouts Herald ships.
struct TokenMapValues: TokenFieldLayout, Hashable {
    static let key = "mapValues"
    static let summaryPrefix = "map values of"
    let field: String

    func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String] {
        (user[field]?.mapValue ?? [:]).sorted { $0.key < $1.key }.compactMap(\.value.stringValue)
    }

    func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write? {
        guard let device = (user[field]?.mapValue ?? [:]).first(where: { $0.value.stringValue == token })?.key, let version = user.updateTime else {
            return nil
        }
        return Write(.update(user.name, fields: [:], mask: [FieldPath(field, device)]), precondition: .updateTime(version))
    }

    /// A query cannot find a map's value: another holder is never found.
    func holders(of token: String, in schema: Schema) -> ValueLookup? { nil }

    func normalization(of document: FirestoreDocument, dropping superseded: Set<String>) -> TokenFix? {
        let dropped = (document[field]?.mapValue ?? [:]).filter {
            !($0.value.stringValue.map { PushToken.isWellFormed($0) && !superseded.contains($0) } ?? false)
        }
        return dropped.isEmpty ? nil : .update(fields: [:], mask: dropped.keys.sorted().map { FieldPath(field, $0) })
    }

    func misfits(of user: FirestoreDocument, tokenDocuments: [FirestoreDocument], kind: (FirestoreValue) -> String) -> [TokenMisfit] {
        misfit(user, expected: "a map of device ids to tokens", kind: kind) { $0.mapValue?.values.allSatisfy { $0.stringValue != nil } == true }
    }

    func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed {
        TokenSeed(userFields: [field: .map(Dictionary(uniqueKeysWithValues: tokens.enumerated().map { ("device\($0.offset)", .string($0.element)) }))])
    }

    func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write {
        Write(.update(user, fields: [field: .map(["device": .string(token)])], mask: [FieldPath(field, "device")]), precondition: .exists(true))
    }
}

@Suite struct TokenLayoutRegistrationTests {
    /// The one registration line.
    static let layouts = TokenLayouts.standard.adding(TokenMapValues.self)
    static let file: JSONValue = ["extends": "default", "tokens": ["mapValues": "pushTokens"]]
    static var schema: Schema { get throws { try Schema.load("own.json", file: file, tokenLayouts: layouts) } }

    @Test func aSchemaFileNamesItOnlyOnceRegistered() throws {
        let unknown = #expect(throws: SchemaError.self) { try Schema.load("own.json", file: Self.file) }
        #expect(unknown?.description.contains("not \"mapValues\"") == true, "\(String(describing: unknown))")
        let schema = try Self.schema
        #expect(schema.tokens == Schema.TokenStorage(TokenMapValues(field: "pushTokens")))
        #expect(Schema.key(named: "tokens")?.summary(in: schema) == "map values of `pushTokens`")
        let back = try Schema.load("back.json", file: try JSONValue(parsing: schema.fileText), tokenLayouts: Self.layouts)
        #expect(back.tokens == schema.tokens && back.fileText == schema.fileText)
        let taken: JSONValue = ["extends": "default", "tokens": ["mapValues": "pushTokens"], "badgeField": "pushTokens"]
        let clash = #expect(throws: SchemaError.self) { try Schema.load("own.json", file: taken, tokenLayouts: Self.layouts) }
        #expect(clash?.description.contains("pushTokens") == true, "the field is checked against the others: \(String(describing: clash))")
    }

    /// A message reaches each device in the map, and a dead token's removal takes its key only.
    @Test func aMessagePushesToEveryDeviceAndADeadOneLosesItsKey() throws {
        let world = PreferencesWorld(try Self.schema)
        let plan = try world.plan()
        #expect(plan.pushes.map(\.token).sorted() == ["tok-bob", "tok-carol"])
        let bob = try #require(plan.pushes.first { $0.token == "tok-bob" })
        #expect(bob.body == "Family • Alice: Dinner at 6pm")
        let bobs = try DocumentName(project: "p", path: "users/bob")
        #expect(bob.removal == Write(.update(bobs, fields: [:], mask: [FieldPath("pushTokens", "device0")]), precondition: .updateTime(Timestamp(seconds: 5))))
    }

    /// tokenCleanup watches the user documents and drops a malformed value; the daily pass clears stale ones.
    @Test func tokenCleanupNormalisesAndSweepsIt() throws {
        let schema = try Self.schema
        let cleanup = TokenCleanup(schema: schema)
        #expect(cleanup.trigger.pattern == schema.userPattern)
        let user = try DocumentName(project: "p", path: "users/bob")
        let fields: [String: FirestoreValue] = ["pushTokens": .map(["phone": .string("tok-bob"), "broken": .string("has space")])]
        let document = FirestoreDocument(name: user, fields: fields, updateTime: Timestamp(seconds: 5))
        let change = DocumentChange(eventID: "e", kind: .updated, time: Timestamp(seconds: 5), document: user, newDocument: document)
        let plan = cleanup.plan(for: change, given: DocumentsRead(found: [user: document])).plan
        let fix = try #require(plan.writes.first)
        #expect(fix.operation == .update(user, fields: [:], mask: [FieldPath("pushTokens", "broken")]), "\(plan.writes)")

        let field = try #require(schema.tokensUpdatedAtField)
        let now = Timestamp(seconds: 1_800_000_000)
        var stale = document
        stale.fields[field] = .timestamp(Timestamp(seconds: now.seconds - 61 * 86_400))
        stale.updateTime = Timestamp(seconds: now.seconds - 61 * 86_400)
        let sweep = try #require(cleanup.sweeps(at: now).first)
        #expect(cleanup.plan(sweep, for: stale, at: now).writes.map(\.operation) == [.update(user, fields: [:], mask: [FieldPath("pushTokens")])])
    }
}
