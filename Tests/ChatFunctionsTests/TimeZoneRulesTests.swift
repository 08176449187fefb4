import FirestoreModel
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Synchronization
import Testing
import WireFormats
import ZoneInfo

/// Herald reads the IANA time zone database itself (the functions have no Foundation, so no ICU);
/// Python's `zoneinfo` reads the same files with its own implementation and is the oracle.
@Suite struct TimeZoneRulesTests {
    static let database = ZoneInfoDirectory(path: ZoneInfoDirectory.defaultPath)

    static func requireDatabase() throws {
        guard FileManager.default.fileExists(atPath: ZoneInfoDirectory.defaultPath + "/Europe/Berlin") else {
            try skipTest("no time zone database at \(ZoneInfoDirectory.defaultPath) (apt-get install tzdata)")
        }
    }

    /// Python's offsets, in seconds east of UTC, of each zone at each instant.
    static func pythonOffsets(zones: [String]?, instants: [Int64]) async throws -> [String: [Int]] {
        let python = try await PythonReference.forTest(importing: "zoneinfo")
        let script = """
            import json, sys, zoneinfo
            from datetime import datetime, timezone
            request = json.load(sys.stdin)
            zones = request["zones"] or sorted(zoneinfo.available_timezones())
            out = {}
            for name in zones:
                tz = zoneinfo.ZoneInfo(name)
                out[name] = [int(datetime.fromtimestamp(t, timezone.utc).astimezone(tz).utcoffset().total_seconds()) for t in request["instants"]]
            json.dump(out, sys.stdout)
            """
        let request: JSONValue = ["zones": zones.map { .array($0.map { .string($0) }) } ?? .null, "instants": .array(instants.map { .integer($0) })]
        let result = try await ProcessRunner.run(python, ["-c", script], stdin: Data(request.serialized().utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try JSONValue(parsing: result.stdout).objectValue ?? [:]
        return parsed.mapValues { $0.arrayValue?.compactMap { $0.int64Value.map(Int.init) } ?? [] }
    }

    @Test func everyZoneAgreesWithPythonFrom1970To2060() async throws {
        try Self.requireDatabase()
        // Every 29 days and 7 hours: every month, weekday and hour of day comes up.
        let instants = Array(stride(from: Int64(0), to: 2_840_000_000, by: 29 * 86_400 + 7 * 3_600))
        let expected = try await Self.pythonOffsets(zones: nil, instants: instants)
        #expect(expected.count > 400)
        var disagreements: [String] = []
        for (zone, offsets) in expected.sorted(by: { $0.key < $1.key }) {
            guard let rules = Self.database.rules(named: zone) else {
                disagreements.append("\(zone): not read")
                continue
            }
            for (instant, offset) in zip(instants, offsets) where rules.offset(at: instant) != offset {
                disagreements.append("\(zone) at \(instant): \(rules.offset(at: instant)), Python \(offset)")
                break
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
    }

    @Test func zonesWithUnusualRulesAgreeHourByHour() async throws {
        try Self.requireDatabase()
        // Northern and southern DST, a negative DST (Dublin), two hours (Troll), 45 minutes (Chatham),
        // Ramadan changes listed year by year (Casablanca), changes at 24:00 (Santiago, Godthab).
        let zones = [
            "Europe/Berlin", "America/New_York", "Australia/Sydney", "Europe/Dublin", "Antarctica/Troll", "Pacific/Chatham",
            "Africa/Casablanca", "America/Santiago", "America/Nuuk", "Asia/Tehran", "Australia/Lord_Howe", "Asia/Kolkata",
        ]
        var instants: [Int64] = []
        for year in [2026, 2038, 2051] {
            let start = Int64((year - 1970) * 365 + (year - 1969) / 4) * 86_400
            instants += stride(from: start, to: start + 366 * 86_400, by: 3_600)
        }
        let expected = try await Self.pythonOffsets(zones: zones, instants: instants)
        for zone in zones {
            let rules = try #require(Self.database.rules(named: zone), "\(zone)")
            let offsets = try #require(expected[zone])
            let wrong = zip(instants, offsets).filter { rules.offset(at: $0.0) != $0.1 }
            #expect(wrong.isEmpty, "\(zone): \(wrong.count) hours differ, first at \(wrong.first.map { "\($0.0): Python \($0.1)" } ?? "")")
        }
    }

    @Test func berlinAcrossBothChangesOf2026() throws {
        try Self.requireDatabase()
        let berlin = try #require(Self.database.rules(named: "Europe/Berlin"))
        let springForward: Int64 = 1_774_746_000  // 2026-03-29 01:00 UTC
        #expect(berlin.offset(at: springForward - 1) == 3_600)
        #expect(berlin.offset(at: springForward) == 7_200)
        let fallBack: Int64 = 1_792_890_000  // 2026-10-25 01:00 UTC
        #expect(berlin.offset(at: fallBack - 1) == 7_200)
        #expect(berlin.offset(at: fallBack) == 3_600)
        #expect(berlin.secondOfDay(at: springForward) == 3 * 3_600)  // 03:00 local, 02:00 never happened
    }

    @Test func hostileNamesAreNeverLookedUp() {
        for name in [
            "../../etc/passwd", "/etc/passwd", "Europe/../../../etc/shadow", "Europe//Berlin", "", ".", "Europe/Berlin\0",
            String(repeating: "A", count: 65), "Europe/Berlin/", "Ünïcode/Zone",
        ] {
            #expect(!TimeZoneRules.isPlausibleName(name), "\(name)")
        }
        #expect(TimeZoneRules.isPlausibleName("America/Argentina/Buenos_Aires"))
        #expect(TimeZoneRules.isPlausibleName("Etc/GMT+5"))
        let recorded = Mutex<[String]>([])
        let zones = TimeZones { name in
            recorded.withLock { $0.append(name) }
            return nil
        }
        #expect(zones.rules(named: "../../etc/passwd") == nil)
        #expect(zones.rules(named: "UTC") == .utc)
        _ = zones.rules(named: "Europe/Berlin")
        #expect(recorded.withLock { $0 } == ["Europe/Berlin"])
    }

    @Test func damagedFilesAreErrorsNotCrashes() throws {
        try Self.requireDatabase()
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: ZoneInfoDirectory.defaultPath + "/Europe/Berlin")))
        #expect(throws: TimeZoneError.self) { try TimeZoneRules(name: "x", tzif: Array("not a tzif file".utf8)) }
        for length in [0, 4, 20, 44, 60, bytes.count / 2, bytes.count - 10] {
            #expect(throws: TimeZoneError.self, "cut at \(length)") { try TimeZoneRules(name: "x", tzif: Array(bytes.prefix(length))) }
        }
        var huge = bytes
        huge.replaceSubrange(32..<36, with: [0x7F, 0xFF, 0xFF, 0xFF])  // the transition count
        #expect(throws: TimeZoneError.self) { try TimeZoneRules(name: "x", tzif: huge) }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var mutated = bytes
            for _ in 0..<4 { mutated[Int.random(in: 0..<mutated.count, using: &random)] = UInt8.random(in: 0...255, using: &random) }
            if let rules = try? TimeZoneRules(name: "x", tzif: mutated) { _ = rules.offset(at: Int64.random(in: -5_000_000_000...5_000_000_000)) }
        }
    }
}
