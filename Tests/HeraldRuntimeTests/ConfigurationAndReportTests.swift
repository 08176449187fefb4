import FirestoreEvents
import FirestoreModel
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import Testing
import WireFormats

@Suite struct ConfigurationTests {
    @Test func defaults() throws {
        let config = try RuntimeConfiguration(environment: [:])
        #expect(config.port == 8080)
        #expect(config.database == "(default)")
        #expect(config.schema == "default")
        #expect(config.logLevel == .info)
        #expect(config.logFormat == .json)
        #expect(try RuntimeConfiguration(environment: [:], stdoutIsTerminal: true).logFormat == .text)
    }

    @Test func readsEveryVariable() throws {
        let config = try RuntimeConfiguration(environment: [
            "GOOGLE_CLOUD_PROJECT": "my-proj", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:8787", "FIRESTORE_DATABASE": "chat",
            "FCM_ENDPOINT": "http://127.0.0.1:8787", "HERALD_SCHEMA": "prd004", "LOG_LEVEL": "WARNING", "LOG_FORMAT": "text", "PORT": "9000",
        ])
        #expect(config.project == "my-proj")
        #expect(config.firestoreEmulatorHost == "127.0.0.1:8787")
        #expect(config.database == "chat")
        #expect(config.fcmEndpoint == "http://127.0.0.1:8787")
        #expect(config.schema == "prd004")
        #expect(config.logLevel == .warning)
        #expect(config.logFormat == .text)
        #expect(config.port == 9000)
    }

    @Test func listsEveryProblemAtOnce() {
        let error = #expect(throws: ConfigurationError.self) {
            try RuntimeConfiguration(environment: [
                "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/key.json", "FIRESTORE_EMULATOR_HOST": "localhost",
                "PORT": "http", "LOG_FORMAT": "xml", "GOOGLE_CLOUD_PROJECT": "a b", "HERALD_LEDGER_COLLECTION": "_herald/events",
                "FIRESTORE_ENDPOINT": "ftp://x",
            ])
        }
        #expect(error?.problems.count == 7)
        #expect(error?.description.contains("GOOGLE_APPLICATION_CREDENTIALS") == true)
    }
}

@Suite struct EventProcessorTests {
    let logger = Logger(label: "test") { _ in CloudLogHandler(label: "test", level: .critical, format: .json, sink: LineSink { _ in }) }

    func process(_ change: DocumentChange, gateway: any DocumentGateway = Rooms.snapshot) async throws -> EventResponse {
        let http = try Rooms.httpRequest(change)
        return await EventProcessor(function: RelayFunction(), gateway: gateway).process(EventRequest(headers: http.headers, body: http.body), logger: logger)
    }

    @Test func theReportListsReadsWritesAndPushes() async throws {
        let response = try await process(Rooms.created(text: "Dinner at 6pm"))
        let report = try #require(response.report?.json)
        #expect(report["outcome"] == ["status": "applied"])
        #expect(
            report["documentsRead"] == [
                [
                    "name": .string(Rooms.room.resourceName), "found": true,
                    "document": FirestoreJSON.json(Rooms.snapshot.documents[Rooms.room]!),
                ]
            ])
        #expect(report["writes"]?.arrayValue?.first?["updateTransforms"] == [["fieldPath": "count", "increment": ["integerValue": "1"]]])
        #expect(
            report["pushes"] == [
                ["message": ["token": "tok-a", "notification": ["title": "Room", "body": "Dinner at 6pm"]]],
                ["message": ["token": "tok-b", "notification": ["title": "Room", "body": "Dinner at 6pm"]]],
            ])
    }

    @Test func skipsAreReportedWithTheirReason() async throws {
        let elsewhere = try DocumentName(project: "herald-test", path: "rooms/r404/messages/m1")
        let missingRoom = try await process(Rooms.created(document: elsewhere))
        #expect(missingRoom.status == 200)
        #expect(missingRoom.report?.outcome == .skipped(reason: "room missing"))
        #expect(missingRoom.report?.documentsRead.missing == [try DocumentName(project: "herald-test", path: "rooms/r404")])

        let otherPath = try DocumentName(project: "herald-test", path: "lobby/l1/messages/m1")
        let unmatched = try await process(Rooms.created(document: otherPath))
        #expect(
            unmatched.report?.outcome
                == .skipped(reason: "document lobby/l1/messages/m1 does not match the trigger pattern rooms/{roomId}/messages/{messageId}"))
    }

    @Test func anEventWithoutDataReadsTheDocumentItself() async throws {
        var change = Rooms.created()
        change.newDocument = nil
        let gateway = SnapshotGateway(
            documents: Array(Rooms.snapshot.documents.values) + [
                FirestoreDocument(name: Rooms.message, fields: ["text": .string("read back")])
            ])
        let response = try await process(change, gateway: gateway)
        #expect(response.report?.event.change.newDocument?["text"] == .string("read back"))
        #expect(response.report?.plan.pushes.first?.content["notification"]?["body"] == "read back")
    }
}
