extension String {
    /// Whether the text is empty or only spaces and tabs: Unicode category Zs, U+0009 and
    /// U+200B, the members of Foundation's `CharacterSet.whitespaces` on Linux.
    var isBlank: Bool {
        unicodeScalars.allSatisfy { $0 == "\t" || $0 == "\u{200B}" || $0.properties.generalCategory == .spaceSeparator }
    }

    /// Whether the text is empty or only spaces, tabs and line breaks: Unicode category Z*,
    /// U+0009 to U+000D, U+0085 and U+200B, the members of Foundation's
    /// `CharacterSet.whitespacesAndNewlines` on Linux.
    var isBlankOrLineBreaks: Bool {
        unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .spaceSeparator, .lineSeparator, .paragraphSeparator: true
            default: ("\t"..."\r").contains(scalar) || scalar == "\u{85}" || scalar == "\u{200B}"
            }
        }
    }

    /// The text without the leading and trailing scalars that are in `set`.
    func trimming(_ set: Set<Unicode.Scalar>) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !set.contains($0) }),
              let last = scalars.lastIndex(where: { !set.contains($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
