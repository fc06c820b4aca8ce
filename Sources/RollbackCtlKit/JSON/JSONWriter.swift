/// Encodes any `Encodable` value as `JSON` without Foundation, so that `--json` output is
/// written from the same `Codable` types the tests decode with Foundation's `JSONDecoder`.
///
/// Guarantees: an optional property that is nil is written as `null` under its key (not
/// left out), so every key of a document is always present; integers and Booleans print
/// as JSON numbers and literals; non-finite doubles print as `null`.
enum JSONWriter {
    /// The value as JSON.
    static func json(_ value: some Encodable) throws -> JSON {
        let node = Node()
        try value.encode(to: TreeEncoder(node: node, codingPath: []))
        return node.json
    }

    /// The value printed, pretty and with sorted keys (`JSON.rendered`).
    static func render(_ value: some Encodable) -> String {
        do { return try json(value).rendered } catch {
            // The documents are plain structs of strings, numbers and Booleans: nothing throws.
            fatalError("Could not encode \(type(of: value)) as JSON: \(error)")
        }
    }

    /// One value being built; containers share it by reference.
    final class Node {
        enum Content {
            case value(JSON)
            case object([String: Node])
            case array([Node])
        }
        var content = Content.value(.null)

        var json: JSON {
            switch content {
            case .value(let value): return value
            case .object(let members): return .object(members.mapValues(\.json))
            case .array(let elements): return .array(elements.map(\.json))
            }
        }

        /// A member under `key`, made an object if it was not one.
        func member(_ key: String) -> Node {
            var members: [String: Node] = [:]
            if case .object(let existing) = content { members = existing }
            let child = members[key] ?? Node()
            members[key] = child
            content = .object(members)
            return child
        }

        func becomeObject() { if case .object = content {} else { content = .object([:]) } }
        func becomeArray() { if case .array = content {} else { content = .array([]) } }

        func append() -> Node {
            var elements: [Node] = []
            if case .array(let existing) = content { elements = existing }
            let child = Node()
            elements.append(child)
            content = .array(elements)
            return child
        }

        var count: Int {
            if case .array(let elements) = content { return elements.count }
            return 0
        }
    }

    struct TreeEncoder: Encoder {
        let node: Node
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            node.becomeObject()
            return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            node.becomeArray()
            return Unkeyed(node: node, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node, codingPath: codingPath) }
    }

    struct Single: SingleValueEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { node.content = .value(.null) }
        mutating func encode(_ value: Bool) throws { node.content = .value(.bool(value)) }
        mutating func encode(_ value: String) throws { node.content = .value(.string(value)) }
        mutating func encode(_ value: Double) throws { node.content = .value(value.isFinite ? .number(String(value)) : .null) }
        mutating func encode(_ value: Float) throws { try encode(Double(value)) }
        mutating func encode(_ value: Int) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: Int8) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: Int16) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: Int32) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: Int64) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: UInt) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: UInt8) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: UInt16) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: UInt32) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: UInt64) throws { node.content = .value(.number(String(value))) }
        mutating func encode(_ value: some Encodable) throws {
            try value.encode(to: TreeEncoder(node: node, codingPath: codingPath))
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        let codingPath: [any CodingKey]

        private func encoder(_ key: Key) -> TreeEncoder {
            TreeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
        }

        mutating func encodeNil(forKey key: Key) throws { node.member(key.stringValue).content = .value(.null) }
        mutating func encode(_ value: some Encodable, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: String, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Double, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Float, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Int, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { try value.encode(to: encoder(key)) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { try value.encode(to: encoder(key)) }

        // A nil optional is written as null: the documents keep every key.
        mutating func encodeIfPresent(_ value: (some Encodable)?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try put(value, key) }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try put(value, key) }

        private func put(_ value: (some Encodable)?, _ key: Key) throws {
            guard let value else { node.member(key.stringValue).content = .value(.null); return }
            try value.encode(to: encoder(key))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            encoder(key).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            encoder(key).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { encoder(Key(stringValue: "super")!) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder(key) }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]
        var count: Int { node.count }

        private func next() -> TreeEncoder { TreeEncoder(node: node.append(), codingPath: codingPath) }

        mutating func encodeNil() throws { _ = node.append() }
        mutating func encode(_ value: some Encodable) throws { try value.encode(to: next()) }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            next().container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { next().unkeyedContainer() }
        mutating func superEncoder() -> any Encoder { next() }
    }
}
