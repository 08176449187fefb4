/// The samples of a Prometheus text exposition (`name{labels} value`), by the whole series: what a
/// test reads back from a function's `/metrics`.
public func prometheusSamples(_ text: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        samples[String(line[..<space])] = value
    }
    return samples
}
