import EmbeddedFirestore
import FirestoreModel
import Foundation
import WireFormats

/// A unix-cron schedule (`minute hour day-of-month month day-of-week`), as Cloud Scheduler takes it:
/// `*` (or `?`), numbers, `a-b` ranges, `*/n`, `a-b/n` and `a/n` steps, comma lists, month names
/// (`JAN`…`DEC`) and weekday names (`SUN`…`SAT`), `0` or `7` for Sunday. When both the day of the
/// month and the day of the week are restricted, a day matches either (unix cron's rule: `0 0 13 * 5`
/// runs on every 13th and every Friday). Times are UTC. Checked against croniter (SchedulerTests).
public struct CronSchedule: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    let minutes: [Bool]
    let hours: [Bool]
    let daysOfMonth: [Bool]
    let months: [Bool]
    let daysOfWeek: [Bool]
    /// Both day fields are restricted: a day matches either.
    let eitherDay: Bool

    public static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    public static let dayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    public init(_ text: String) throws(LocalAPIError) {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 5 else { throw .invalidArgument("a schedule has five fields (minute hour day month weekday), not \"\(text)\"") }
        func field(
            _ index: Int, _ range: ClosedRange<Int>, every: ClosedRange<Int>? = nil, names: [String] = [], namesFrom first: Int = 0
        ) throws(LocalAPIError) -> [Bool] {
            do {
                return try Self.parse(String(parts[index]), range, every: every ?? range, names: names, namesFrom: first)
            } catch {
                throw .invalidArgument("bad schedule field \"\(parts[index])\" in \"\(text)\": \(error.reason)")
            }
        }
        let minutes = try field(0, 0...59)
        let hours = try field(1, 0...23)
        let daysOfMonth = try field(2, 1...31)
        let months = try field(3, 1...12, names: Self.monthNames, namesFrom: 1)
        // 7 is Sunday too, when named: `*` and steps run over 0-6.
        var weekdays = try field(4, 0...7, every: 0...6, names: Self.dayNames)
        if weekdays[7] { weekdays[0] = true }
        let daysOfWeek = Array(weekdays[0...6])
        // A day field is unrestricted when it is `*` (or `?`), or names every day while the other holds a `*`:
        // as croniter (and Vixie cron, but for its `*/n` bug) decide which rule applies.
        let (dayText, weekdayText) = (parts[2], parts[4])
        let anyDayOfMonth = dayText == "*" || dayText == "?" || (daysOfMonth[1...31].allSatisfy { $0 } && weekdayText.contains("*"))
        let anyDayOfWeek = weekdayText == "*" || weekdayText == "?" || (daysOfWeek.allSatisfy { $0 } && dayText.contains("*"))
        let eitherDay = !anyDayOfMonth && !anyDayOfWeek
        let someDayExists = (1...12).contains { month in months[month] && (1...Self.longest(month)).contains { daysOfMonth[$0] } }
        guard someDayExists || eitherDay else { throw .invalidArgument("the schedule \"\(text)\" names no day that exists") }
        (self.minutes, self.hours, self.daysOfMonth, self.months, self.daysOfWeek, self.eitherDay) = (
            minutes, hours, daysOfMonth, months, daysOfWeek, eitherDay
        )
        description = text
    }

    struct FieldError: Error { var reason: String }

    /// One field as a table of the values it names, indexed by value: any in `range`, where `*` and an
    /// open step (`a/n`) run over `every`.
    static func parse(
        _ text: String, _ range: ClosedRange<Int>, every: ClosedRange<Int>, names: [String], namesFrom first: Int
    ) throws(FieldError) -> [Bool] {
        var values = [Bool](repeating: false, count: range.upperBound + 1)
        func value(_ token: Substring) throws(FieldError) -> Int {
            if let number = Int(token), range.contains(number) { return number }
            if let index = names.firstIndex(of: token.uppercased()) { return index + first }
            throw FieldError(reason: "\"\(token)\" is not in \(range.lowerBound)-\(range.upperBound)\(names.isEmpty ? "" : " or a name")")
        }
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = item.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            var step = 1
            if pieces.count == 2 {
                guard let given = Int(pieces[1]), given > 0 else { throw FieldError(reason: "the step \"\(pieces[1])\" is not a positive number") }
                step = given
            }
            let span: ClosedRange<Int>
            if pieces[0] == "*" || pieces[0] == "?" {
                span = every
            } else {
                let bounds = pieces[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
                let low = try value(bounds[0])
                // `a/n` runs from a to the field's end.
                let high = bounds.count == 2 ? try value(bounds[1]) : (pieces.count == 2 ? max(low, every.upperBound) : low)
                guard low <= high else { throw FieldError(reason: "the range \(pieces[0]) runs backwards") }
                span = low...high
            }
            for value in stride(from: span.lowerBound, through: span.upperBound, by: step) { values[value] = true }
        }
        return values
    }

    static func longest(_ month: Int) -> Int { month == 2 ? 29 : CivilCalendar.daysIn(month: month, year: 2001) }

    func matches(day: Int, weekday: Int) -> Bool {
        eitherDay ? daysOfMonth[day] || daysOfWeek[weekday] : daysOfMonth[day] && daysOfWeek[weekday]
    }

    /// The first whole minute strictly after `date` that the schedule names, found field by field: a
    /// month that does not match is skipped whole, a day, an hour, each at once. Within 28 years every
    /// calendar repeats, so a schedule that names no time in them names none (`distantFuture`).
    public func next(after date: Date) -> Date {
        let start = Int64((date.timeIntervalSince1970 / 60).rounded(.down)) + 1
        var days = CivilCalendar.floorDiv(start, 1440)
        var minuteOfDay = Int(CivilCalendar.floorMod(start, 1440))
        let lastDay = days + 28 * 366
        while days <= lastDay {
            let (year, month, day) = CivilCalendar.civil(days: days)
            guard months[Int(month)] else {
                // To the first day of the next month.
                days += Int64(CivilCalendar.daysIn(month: Int(month), year: year)) - day + 1
                minuteOfDay = 0
                continue
            }
            if matches(day: Int(day), weekday: Int(CivilCalendar.weekday(days: days))),
                let found = nextMinute(from: minuteOfDay)
            {
                return Date(timeIntervalSince1970: Double(days * 1440 + Int64(found)) * 60)
            }
            days += 1
            minuteOfDay = 0
        }
        return .distantFuture
    }

    /// The first minute of the day at or after `minuteOfDay` whose hour and minute match.
    func nextMinute(from minuteOfDay: Int) -> Int? {
        var hour = minuteOfDay / 60
        var minute = minuteOfDay % 60
        while hour < 24 {
            if hours[hour], let found = (minute..<60).first(where: { minutes[$0] }) { return hour * 60 + found }
            hour += 1
            minute = 0
        }
        return nil
    }
}
