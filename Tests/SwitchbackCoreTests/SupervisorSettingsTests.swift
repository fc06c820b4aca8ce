import SwitchbackCore
import Testing

/// `supervise.listen` and `supervise.ready` as the manifest spells them.
@Suite struct SupervisorSettingsTests {
    @Test(arguments: [
        ("127.0.0.1:8080", "listen", "127.0.0.1:8080"),
        ("web=0.0.0.0:80", "web", "0.0.0.0:80"),
        ("localhost:9000", "listen", "127.0.0.1:9000"),
        ("[::1]:8443", "listen", "[::1]:8443"),
        ("api=[::]:1", "api", "[::]:1"),
    ])
    func addressesThatRead(text: String, name: String, description: String) throws {
        let address = try #require(ListenAddress(text[...]))
        #expect(address.name == name)
        #expect(address.description == description)
    }

    @Test(arguments: ["example.com:80", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":8080", "=127.0.0.1:80",
                      "a b=127.0.0.1:80", "::1:8080", "[127.0.0.1]:80", "256.0.0.1:80", "127.0.0.1:-1"])
    func addressesThatDoNot(text: String) {
        #expect(ListenAddress(text[...]) == nil)
    }

    @Test func aListTakesCommasAndSpacesAndRefusesOneBadAddress() throws {
        let list = try #require(ListenAddress.parseList("127.0.0.1:80, web=[::1]:81 127.0.0.1:82"))
        #expect(list.map(\.description) == ["127.0.0.1:80", "[::1]:81", "127.0.0.1:82"])
        #expect(ListenAddress.parseList("127.0.0.1:80,nothing") == nil)
    }

    /// `[::]` takes both families unless an IPv4 address with its port is declared beside it.
    @Test func onlyTheIPv6AnyAddressListensOnBothFamilies() throws {
        func only(_ text: String, among list: String) throws -> Bool {
            try #require(ListenAddress(text[...])).isIPv6Only(among: try #require(ListenAddress.parseList(list)))
        }
        #expect(try only("[::]:80", among: "[::]:80") == false)
        #expect(try only("[::]:80", among: "[::]:80,0.0.0.0:81") == false)
        #expect(try only("[::]:80", among: "0.0.0.0:80,[::]:80") == true)
        #expect(try only("[::]:80", among: "127.0.0.1:80,[::]:80") == true)
        #expect(try only("[::1]:80", among: "[::1]:80") == true)
        #expect(try only("127.0.0.1:80", among: "127.0.0.1:80") == false)
    }

    @Test func readinessChecks() throws {
        #expect(ReadinessCheck("") == .mark)
        #expect(ReadinessCheck("mark") == .mark)
        #expect(ReadinessCheck("tcp:127.0.0.1:8080")?.description == "a TCP connect to 127.0.0.1:8080")
        #expect(ReadinessCheck("http://127.0.0.1:8080/health?deep=1")?.description == "an HTTP GET of http://127.0.0.1:8080/health?deep=1")
        #expect(ReadinessCheck("http://127.0.0.1:8080")?.description == "an HTTP GET of http://127.0.0.1:8080/")
        #expect(ReadinessCheck("command:test -e /run/ready") == .command("test -e /run/ready"))
        // Only loopback for HTTP, no names, no spaces in the path, something after command:.
        for text in ["http://10.0.0.1:80/", "http://127.0.0.1:80/a b", "command:", "udp:127.0.0.1:53", "tcp:web=127.0.0.1:80"] {
            #expect(ReadinessCheck(text) == nil, "\(text)")
        }
        #expect(ReadinessCheck("http://[::1]:80/ok")?.description == "an HTTP GET of http://[::1]:80/ok", "::1 is loopback")
        #expect(ReadinessCheck("http://localhost:80/")?.description == "an HTTP GET of http://127.0.0.1:80/")
    }
}
