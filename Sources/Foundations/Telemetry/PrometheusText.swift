/// Prometheus's text exposition format (0.0.4), read back: what a function serves at `/metrics`, for the
/// OTLP metrics exporter and for `herald dev`'s console.
public enum PrometheusText {
    /// One sample: `name{label="value",…} number`.
    public struct Sample: Sendable, Equatable {
        public var name: String
        public var labels: [(String, String)]
        public var value: Double

        public init(name: String, labels: [(String, String)], value: Double) {
            self.name = name
            self.labels = labels
            self.value = value
        }

        public func label(_ name: String) -> String? { labels.first { $0.0 == name }?.1 }

        public static func == (a: Sample, b: Sample) -> Bool {
            a.name == b.name && a.value == b.value && a.labels.elementsEqual(b.labels) { $0 == $1 }
        }
    }

    /// What `# TYPE` says a metric family is.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram, summary, untyped
    }

    /// The samples of `text`, and the kind of each family named by a `# TYPE` line. Lines that are
    /// neither are passed over.
    public static func parse(_ text: String) -> (samples: [Sample], kinds: [String: Kind]) {
        var samples: [Sample] = []
        var kinds: [String: Kind] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#") {
                let words = line.split(separator: " ")
                if words.count == 4, words[1] == "TYPE", let kind = Kind(rawValue: String(words[3])) { kinds[String(words[2])] = kind }
                continue
            }
            if let sample = sample(line) { samples.append(sample) }
        }
        return (samples, kinds)
    }

    static func sample(_ line: Substring) -> Sample? {
        var labels: [(String, String)] = []
        let name: Substring
        var rest: Substring
        if let open = line.firstIndex(of: "{") {
            name = line[..<open]
            rest = line[line.index(after: open)...]
            while let equals = rest.firstIndex(of: "=") {
                let key = rest[..<equals].drop { $0 == "," || $0 == " " }
                rest = rest[rest.index(after: equals)...]
                guard rest.first == "\"" else { return nil }
                rest = rest.dropFirst()
                var value = ""
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        value.append(character == "n" ? "\n" : character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
                labels.append((String(key), value))
                if rest.first == "," { rest = rest.dropFirst() }
                if rest.first == "}" { break }
            }
            guard rest.first == "}" else { return nil }
            rest = rest.dropFirst()
        } else {
            guard let space = line.firstIndex(of: " ") else { return nil }
            name = line[..<space]
            rest = line[space...]
        }
        let fields = rest.split(separator: " ")
        guard !name.isEmpty, let first = fields.first, let value = Double(first) ?? special(first) else { return nil }
        return Sample(name: String(name), labels: labels, value: value)
    }

    static func special(_ text: Substring) -> Double? {
        switch text {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        case "NaN": .nan
        default: nil
        }
    }
}
