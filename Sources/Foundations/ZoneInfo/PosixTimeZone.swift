import WireFormats

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
            var value = 0
            var digits = 0
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
                    let weekday = number(maximumDigits: 1), (0...6).contains(weekday)
                else { return nil }
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
