/// SplitMix64: a deterministic generator, so that a randomised test names its seed when it
/// fails and runs again exactly. Shared by the property tests of every test target.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// One of `choices` (not empty).
    public mutating func pick<T>(_ choices: [T]) -> T { choices[Int(next() % UInt64(choices.count))] }

    /// True `percent` times in a hundred.
    public mutating func chance(_ percent: UInt64) -> Bool { next() % 100 < percent }
}
