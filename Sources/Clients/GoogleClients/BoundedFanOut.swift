/// Runs `body` for each of `count` indices with at most `maximumInFlight` running at once, and returns
/// the results in index order: the fan-out every push client does (one request per message, or per batch).
public func boundedFanOut<Result: Sendable>(
    _ count: Int, maximumInFlight: Int, _ body: @escaping @Sendable (Int) async -> Result
) async -> [Result] {
    await withTaskGroup(of: (Int, Result).self) { group in
        var results = [Result?](repeating: nil, count: count)
        var next = 0
        func start(_ index: Int) { group.addTask { (index, await body(index)) } }
        while next < min(max(1, maximumInFlight), count) {
            start(next)
            next += 1
        }
        for await (index, result) in group {
            results[index] = result
            if next < count {
                start(next)
                next += 1
            }
        }
        return results.map { $0! }
    }
}
