/// Arithmetic modulo an odd number in Montgomery form, on 64-bit limbs (least significant first).
/// What depends on a secret runs in time that depends only on sizes: no branch or index on a secret
/// value (the final subtraction and the window's table look-up are masked, every exponent bit is used).
struct Montgomery: Sendable {
    let modulus: [UInt64]
    /// −modulus⁻¹ mod 2⁶⁴.
    let inverse: UInt64
    /// R² mod modulus, R = 2^(64·limbs).
    let rSquared: [UInt64]

    var limbs: Int { modulus.count }

    /// `modulus` must be odd and its top limb non-zero.
    init(modulus: [UInt64]) {
        precondition(modulus.count > 0 && modulus[0] & 1 == 1 && modulus.last != 0)
        self.modulus = modulus
        var inverse: UInt64 = 1
        for _ in 0..<6 { inverse = inverse &* (2 &- modulus[0] &* inverse) }  // Newton: doubles the correct bits
        self.inverse = 0 &- inverse
        // R² mod m by doubling 1, 2·64·limbs times, each reduced (sizes only: no secret-dependent branch).
        var value = [UInt64](repeating: 0, count: modulus.count)
        value[0] = 1
        for _ in 0..<(128 * modulus.count) {
            var carry: UInt64 = 0
            for i in 0..<value.count {
                let next = value[i] >> 63
                value[i] = value[i] << 1 | carry
                carry = next
            }
            Self.subtractIfNotBelow(&value, modulus, overflow: carry)
        }
        self.rSquared = value
    }

    /// a·b·R⁻¹ mod m, for a, b < m (CIOS).
    func multiply(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        let n = limbs
        var t = [UInt64](repeating: 0, count: n + 2)
        for i in 0..<n {
            var carry: UInt64 = 0
            for j in 0..<n { (t[j], carry) = Self.multiplyAdd(a[j], b[i], t[j], carry) }
            var (sum, overflow) = t[n].addingReportingOverflow(carry)
            t[n] = sum
            t[n + 1] = overflow ? 1 : 0
            let factor = t[0] &* inverse
            (_, carry) = Self.multiplyAdd(factor, modulus[0], t[0], 0)
            for j in 1..<n { (t[j - 1], carry) = Self.multiplyAdd(factor, modulus[j], t[j], carry) }
            (sum, overflow) = t[n].addingReportingOverflow(carry)
            t[n - 1] = sum
            t[n] = t[n + 1] &+ (overflow ? 1 : 0)
        }
        var result = Array(t[0..<n])
        Self.subtractIfNotBelow(&result, modulus, overflow: t[n])
        return result
    }

    /// x mod m for any x < m·R (up to twice the limbs of m).
    func reduce(_ x: [UInt64]) -> [UInt64] {
        let n = limbs
        precondition(x.count <= 2 * n)
        var t = x + [UInt64](repeating: 0, count: 2 * n + 1 - x.count)
        for i in 0..<n {
            let factor = t[i] &* inverse
            var carry: UInt64 = 0
            for j in 0..<n { (t[i + j], carry) = Self.multiplyAdd(factor, modulus[j], t[i + j], carry) }
            for k in (i + n)..<(2 * n + 1) {
                let (sum, overflow) = t[k].addingReportingOverflow(carry)
                t[k] = sum
                carry = overflow ? 1 : 0
            }
        }
        var result = Array(t[n..<(2 * n)])
        Self.subtractIfNotBelow(&result, modulus, overflow: t[2 * n])
        // That is x·R⁻¹; once more by R² gives x.
        return multiply(result, rSquared)
    }

    /// base^exponent mod m, for base < m, in time that depends on the sizes only (a fixed 4-bit window
    /// over every bit of the exponent's limbs, each table entry read for every window).
    func power(_ base: [UInt64], _ exponent: [UInt64]) -> [UInt64] {
        let n = limbs
        var one = [UInt64](repeating: 0, count: n)
        one[0] = 1
        var table = [multiply(one, rSquared)]  // 1 in Montgomery form
        table.append(multiply(base, rSquared))
        for i in 2..<16 { table.append(multiply(table[i - 1], table[1])) }
        var accumulator = table[0]
        for limb in exponent.reversed() {
            for shift in stride(from: 60, through: 0, by: -4) {
                for _ in 0..<4 { accumulator = multiply(accumulator, accumulator) }
                let window = (limb >> UInt64(shift)) & 0xF
                accumulator = multiply(accumulator, Self.select(table, index: window))
            }
        }
        return multiply(accumulator, one)
    }

    /// base^exponent mod m for a public exponent (variable time: square and multiply on its bits).
    func publicPower(_ base: [UInt64], _ exponent: UInt64) -> [UInt64] {
        var one = [UInt64](repeating: 0, count: limbs)
        one[0] = 1
        let montgomeryBase = multiply(base, rSquared)
        var accumulator = montgomeryBase
        let top = 63 - exponent.leadingZeroBitCount
        for bit in stride(from: top - 1, through: 0, by: -1) {
            accumulator = multiply(accumulator, accumulator)
            if (exponent >> UInt64(bit)) & 1 == 1 { accumulator = multiply(accumulator, montgomeryBase) }
        }
        return multiply(accumulator, one)
    }

    /// table[index], reading every entry.
    private static func select(_ table: [[UInt64]], index: UInt64) -> [UInt64] {
        var result = [UInt64](repeating: 0, count: table[0].count)
        for (i, entry) in table.enumerated() {
            let mask = 0 &- UInt64(truncatingIfNeeded: ((UInt64(i) ^ index) &- 1) >> 63)  // all ones when i == index
            for j in 0..<result.count { result[j] |= entry[j] & mask }
        }
        return result
    }

    /// (lo, hi) of a·b + c + d; it cannot overflow 128 bits.
    @inline(__always)
    static func multiplyAdd(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) -> (UInt64, UInt64) {
        var (high, low) = a.multipliedFullWidth(by: b)
        var overflow: Bool
        (low, overflow) = low.addingReportingOverflow(c)
        high &+= overflow ? 1 : 0
        (low, overflow) = low.addingReportingOverflow(d)
        high &+= overflow ? 1 : 0
        return (low, high)
    }

    /// value − m when value (with `overflow` as one more limb on top) ≥ m, else value; masked, not branched.
    static func subtractIfNotBelow(_ value: inout [UInt64], _ m: [UInt64], overflow: UInt64) {
        let (difference, borrow) = Limbs.subtract(value, m)
        // Keep the difference unless it borrowed past the extra limb.
        let keep = 0 &- ((overflow | (borrow ^ 1)) & 1)
        for i in 0..<value.count { value[i] = (difference[i] & keep) | (value[i] & ~keep) }
    }
}

/// Big-endian bytes ↔ limbs.
enum Limbs {
    static func from(bigEndian bytes: some Collection<UInt8>, count: Int? = nil) -> [UInt64] {
        let bytes = Array(bytes)
        let needed = max(1, (bytes.count + 7) / 8)
        var limbs = [UInt64](repeating: 0, count: max(needed, count ?? 0))
        for (index, byte) in bytes.reversed().enumerated() { limbs[index / 8] |= UInt64(byte) << UInt64(8 * (index % 8)) }
        return limbs
    }

    static func bigEndian(_ limbs: [UInt64], bytes count: Int) -> [UInt8] {
        (0..<count).map { index in
            let position = count - 1 - index
            guard position / 8 < limbs.count else { return 0 }
            return UInt8(truncatingIfNeeded: limbs[position / 8] >> UInt64(8 * (position % 8)))
        }
    }

    /// Drops the zero limbs on top (a length that is public: the size of a key's numbers).
    static func trimmed(_ limbs: [UInt64]) -> [UInt64] {
        var limbs = limbs
        while limbs.count > 1, limbs.last == 0 { limbs.removeLast() }
        return limbs
    }

    /// Whether a < b (variable time: for public numbers).
    static func less(_ a: [UInt64], _ b: [UInt64]) -> Bool {
        let a = trimmed(a)
        let b = trimmed(b)
        if a.count != b.count { return a.count < b.count }
        for i in stride(from: a.count - 1, through: 0, by: -1) where a[i] != b[i] { return a[i] < b[i] }
        return false
    }

    /// a·b, schoolbook.
    static func multiply(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var product = [UInt64](repeating: 0, count: a.count + b.count)
        for i in 0..<a.count {
            var carry: UInt64 = 0
            for j in 0..<b.count { (product[i + j], carry) = Montgomery.multiplyAdd(a[i], b[j], product[i + j], carry) }
            product[i + b.count] = carry
        }
        return product
    }

    /// a − b over a's limbs (b no longer than a), and the borrow out of the top (1 when b > a).
    static func subtract(_ a: [UInt64], _ b: [UInt64]) -> (difference: [UInt64], borrow: UInt64) {
        var difference = a
        var borrow: UInt64 = 0
        for i in 0..<a.count {
            let (d1, o1) = a[i].subtractingReportingOverflow(i < b.count ? b[i] : 0)
            let (d2, o2) = d1.subtractingReportingOverflow(borrow)
            difference[i] = d2
            borrow = (o1 ? 1 : 0) | (o2 ? 1 : 0)
        }
        return (difference, borrow)
    }

    /// a + b (as long as the longer), dropping a carry out of the top (callers know there is none).
    static func add(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var sum = a.count >= b.count ? a : b
        let other = a.count >= b.count ? b : a
        var carry: UInt64 = 0
        for i in 0..<sum.count {
            let (s1, o1) = sum[i].addingReportingOverflow(i < other.count ? other[i] : 0)
            let (s2, o2) = s1.addingReportingOverflow(carry)
            sum[i] = s2
            carry = (o1 ? 1 : 0) | (o2 ? 1 : 0)
        }
        return sum
    }
}
