import HeraldCore
import Synchronization
import SystemAccess
import ZoneInfo

/// The IANA time zone database as the system installs it (`/usr/share/zoneinfo`, or `$TZDIR`): each
/// zone read once, when first asked for, and kept. Images copy the same directory.
public final class ZoneInfoDirectory: Sendable {
    public static let defaultPath = "/usr/share/zoneinfo"
    /// More than the database has (about 600 names): what hostile names cannot grow past.
    static let maximumCached = 1024
    static let maximumFileBytes = 256 * 1024

    public let path: String
    let cache = Mutex<[String: TimeZoneRules?]>([:])

    public init(path: String) { self.path = path }

    public static func system(environment: [String: String]) -> ZoneInfoDirectory {
        ZoneInfoDirectory(path: environment["TZDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultPath)
    }

    public var timeZones: TimeZones { TimeZones { [self] name in rules(named: name) } }

    /// The zone's rules, or nil when the database has no such zone (or its file cannot be read).
    public func rules(named name: String) -> TimeZoneRules? {
        guard TimeZoneRules.isPlausibleName(name) else { return nil }
        if let cached = cache.withLock({ $0[name] }) { return cached }
        let rules = read(name)
        cache.withLock { cache in
            if cache.count < Self.maximumCached { cache[name] = rules }
        }
        return rules
    }

    func read(_ name: String) -> TimeZoneRules? {
        guard let data = try? LocalFile.read(path + "/" + name, limit: Self.maximumFileBytes) else { return nil }
        return try? TimeZoneRules(name: name, tzif: data)
    }
}
