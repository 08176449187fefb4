/// A POSIX TZ rule such as `CET-1CEST,M3.5.0,M10.5.0/3` (with RFC 8536's extensions: `<+03>` names,
/// hours from -167 to 167): a standard offset, and optionally daylight time between two dates a year.
struct PosixTimeZone: Sendable, Hashable {
    /// A day of the year the rule names.
    enum Day: Sendable, Hashable {
        /// `Jn`: day 1...365, February 29 never counted.
        case julian(Int)
        /// `n`: day 0...365, February 29 counted.
        case zeroBased(Int)
        /// `Mm.w.d`: weekday `d` (0 Sunday) of week `w` (5: the last) of month `m`.
        case monthWeekDay(month: Int, week: Int, weekday: Int)
    }

    struct Change: Sendable, Hashable {
        var day: Day
        /// Local seconds after midnight (may be negative or past a day).
        var time: Int
    }

    /// Seconds east of UTC.
    var standardOffset: Int
    var daylightOffset: Int?
    var start: Change?
    var end: Change?

    init(standardOffset: Int, daylightOffset: Int? = nil, start: Change? = nil, end: Change? = nil) {
        self.standardOffset = standardOffset
        self.daylightOffset = daylightOffset
        self.start = start
        self.end = end
    }

    init?(_ text: String) {
        var scanner = Scanner(Array(text.utf8))
        guard scanner.name(), let standardWest = scanner.offset() else { return nil }
        standardOffset = -standardWest
        guard !scanner.isAtEnd else { return }
        guard scanner.name() else { return nil }
        if let west = scanner.offset() { daylightOffset = -west } else { daylightOffset = standardOffset + 3600 }
        if scanner.isAtEnd {
            // No rule given: POSIX leaves it to the implementation; this is the United States' since 2007.
            start = Change(day: .monthWeekDay(month: 3, week: 2, weekday: 0), time: 7200)
            end = Change(day: .monthWeekDay(month: 11, week: 1, weekday: 0), time: 7200)
            return
        }
        guard scanner.skip(","), let start = scanner.change(), scanner.skip(","), let end = scanner.change(), scanner.isAtEnd else { return nil }
        self.start = start
        self.end = end
    }

    func offset(at seconds: Int64) -> Int {
        guard let daylightOffset, let start, let end else { return standardOffset }
        let year = CivilCalendar.civil(days: CivilCalendar.floorDiv(seconds + Int64(standardOffset), 86_400)).year
        // The change to daylight time happens at a standard-time wall clock, the change back at a daylight one.
        let begins = instant(start, year: year) - Int64(standardOffset)
        let ends = instant(end, year: year) - Int64(daylightOffset)
        let isDaylight = begins < ends ? (begins <= seconds && seconds < ends) : !(ends <= seconds && seconds < begins)
        return isDaylight ? daylightOffset : standardOffset
    }

    /// Local seconds since 1970 of a change in `year`.
    func instant(_ change: Change, year: Int64) -> Int64 {
        let days: Int64
        switch change.day {
        case .julian(let n):
            let leap = CivilCalendar.isLeap(year) && n >= 60 ? 1 : 0
            days = CivilCalendar.days(year: year, month: 1, day: 1) + Int64(n - 1 + leap)
        case .zeroBased(let n):
            days = CivilCalendar.days(year: year, month: 1, day: 1) + Int64(n)
        case .monthWeekDay(let month, let week, let weekday):
            let first = CivilCalendar.days(year: year, month: Int64(month), day: 1)
            var day = 1 + Int(CivilCalendar.floorMod(Int64(weekday) - CivilCalendar.weekday(days: first), 7)) + (week - 1) * 7
            let length = CivilCalendar.daysIn(month: month, year: year)
            while day > length { day -= 7 }
            days = first + Int64(day - 1)
        }
        return days * 86_400 + Int64(change.time)
    }

    struct Scanner {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { position == bytes.count }
        var next: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skip(_ character: Character) -> Bool {
            guard let next, let ascii = character.asciiValue, next == ascii else { return false }
            position += 1
            return true
        }

        /// `EST` (three or more letters) or `<+0330>`.
        mutating func name() -> Bool {
            if skip("<") {
                let start = position
                while let next, next != UInt8(ascii: ">") { position += 1 }
                return position - start >= 3 && skip(">")
            }
            let start = position
            while let next, (0x41...0x5A).contains(next) || (0x61...0x7A).contains(next) { position += 1 }
            return position - start >= 3
        }

        mutating func number(maximumDigits: Int) -> Int? {
            var value = 0, digits = 0
            while let next, (0x30...0x39).contains(next), digits < maximumDigits {
                value = value * 10 + Int(next - 0x30)
                digits += 1
                position += 1
            }
            return digits == 0 ? nil : value
        }

        /// `[+-]hh[:mm[:ss]]` in seconds.
        mutating func time(maximumHours: Int) -> Int? {
            let sign = skip("-") ? -1 : (skip("+") ? 1 : 1)
            guard let hours = number(maximumDigits: 3), hours <= maximumHours else { return nil }
            var total = hours * 3600
            if skip(":") {
                guard let minutes = number(maximumDigits: 2), minutes < 60 else { return nil }
                total += minutes * 60
                if skip(":") {
                    guard let seconds = number(maximumDigits: 2), seconds < 60 else { return nil }
                    total += seconds
                }
            }
            return sign * total
        }

        /// An offset as POSIX writes it: hours west of UTC.
        mutating func offset() -> Int? {
            guard let next, next == UInt8(ascii: "+") || next == UInt8(ascii: "-") || (0x30...0x39).contains(next) else { return nil }
            return time(maximumHours: 24)
        }

        mutating func change() -> Change? {
            let day: Day
            if skip("M") {
                guard let month = number(maximumDigits: 2), (1...12).contains(month), skip("."),
                      let week = number(maximumDigits: 1), (1...5).contains(week), skip("."),
                      let weekday = number(maximumDigits: 1), (0...6).contains(weekday) else { return nil }
                day = .monthWeekDay(month: month, week: week, weekday: weekday)
            } else if skip("J") {
                guard let n = number(maximumDigits: 3), (1...365).contains(n) else { return nil }
                day = .julian(n)
            } else {
                guard let n = number(maximumDigits: 3), (0...365).contains(n) else { return nil }
                day = .zeroBased(n)
            }
            guard skip("/") else { return Change(day: day, time: 7200) }
            return time(maximumHours: 167).map { Change(day: day, time: $0) }
        }
    }
}

/// The proleptic Gregorian calendar in whole days since 1970-01-01 (Howard Hinnant's algorithms).
enum CivilCalendar {
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
    static func floorMod(_ a: Int64, _ b: Int64) -> Int64 { a - floorDiv(a, b) * b }

    static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysIn(month: Int, year: Int64) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// 0 Sunday … 6 Saturday (1970-01-01 was a Thursday).
    static func weekday(days: Int64) -> Int64 { floorMod(days + 4, 7) }
}
