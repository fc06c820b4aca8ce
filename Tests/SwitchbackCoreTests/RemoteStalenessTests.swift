import Testing
@testable import SwitchbackCore

@Suite struct RemoteStalenessTests {
    @Test func freshWhileTheHeldDirectiveIsValidAndVerifiedRecently() {
        var record = RemoteRecord()
        record.firstAttemptAt = 1_000
        record.lastVerifiedAt = 2_000
        record.heldExpiresAt = 10_000
        #expect(record.staleness(now: 2_500, maxStalenessSeconds: 3_600) == nil)
        #expect(RemoteRecord().staleness(now: 2_500, maxStalenessSeconds: 1) == nil)
    }

    @Test func staleOnceTheHeldDirectiveExpires() throws {
        var record = RemoteRecord()
        record.lastVerifiedAt = 2_000
        record.heldExpiresAt = 3_000
        let stale = try #require(record.staleness(now: 3_000, maxStalenessSeconds: 86_400))
        #expect(stale.cause == .heldDirectiveExpired)
        #expect(stale.since == 3_000)
        #expect(stale.description == "Stale: the directive this install holds expired at 1970-01-01 00:50:00 UTC and none has verified since; the decision stays, so publish a fresh directive (rollbackctl sign --renew) and check that this install reaches the server.")
    }

    @Test func staleWhenNothingVerifiedWithinTheLimit() throws {
        var record = RemoteRecord()
        record.lastVerifiedAt = 2_000
        record.heldExpiresAt = 100_000
        #expect(record.staleness(now: 5_599, maxStalenessSeconds: 3_600) == nil)
        let stale = try #require(record.staleness(now: 5_600, maxStalenessSeconds: 3_600))
        #expect(stale.cause == .notVerifiedRecently)
        #expect(stale.since == 5_600)
        #expect(stale.description.contains("(the limit is 1 h)"))
    }

    @Test func aNeverVerifiedInstallCountsFromItsFirstCheck() throws {
        var record = RemoteRecord()
        record.firstAttemptAt = 1_000
        record.lastAttemptAt = 1_500
        #expect(record.staleness(now: 1_059, maxStalenessSeconds: 60) == nil)
        let stale = try #require(record.staleness(now: 1_060, maxStalenessSeconds: 60))
        #expect(stale.cause == .notVerifiedRecently)
        #expect(stale.description.hasPrefix("Stale: no directive has verified in the 1 min since this install's first check; the decision stays"))
    }

    @Test func theEarlierCauseWins() throws {
        var record = RemoteRecord()
        record.lastVerifiedAt = 1_000
        record.heldExpiresAt = 1_500
        let stale = try #require(record.staleness(now: 9_000, maxStalenessSeconds: 3_600))
        #expect(stale.cause == .heldDirectiveExpired)
        #expect(stale.since == 1_500)
    }

    @Test func theNewFieldsRoundTrip() throws {
        var record = RemoteRecord()
        record.firstAttemptAt = 1_000
        record.highestSeenSerial = 7
        record.lastVerifiedAt = 2_000
        record.heldExpiresAt = 3_000
        record.consecutiveFailures = 2
        #expect(try RemoteRecord.parse(record.serialized(), path: "remote") == record)
    }
}

@Suite struct ConditionalCheckRuleTests {
    func verified(at time: Int64) -> RemoteRecord {
        var record = RemoteRecord()
        record.lastVerifiedAt = time
        record.lastSuccessAt = time
        record.outcome = "applied"
        return record
    }

    @Test func validatorsAreSentAfterAVerifiedDirective() {
        #expect(verified(at: 1_000).mayUseValidators(now: 1_060, maxStalenessSeconds: 86_400))
    }

    @Test func neverTwo304sInARow() {
        var record = verified(at: 1_000)
        record.outcome = "unchanged"
        record.code = "not_modified"
        #expect(!record.mayUseValidators(now: 1_000, maxStalenessSeconds: 86_400))
        record.code = nil  // the same serial fetched again: a verified 200
        #expect(record.mayUseValidators(now: 1_000, maxStalenessSeconds: 86_400))
    }

    @Test func unconditionalWhenNeverVerifiedOrHalfWayToStale() {
        #expect(!RemoteRecord().mayUseValidators(now: 1_000, maxStalenessSeconds: 86_400))
        #expect(verified(at: 1_000).mayUseValidators(now: 1_000 + 43_199, maxStalenessSeconds: 86_400))
        #expect(!verified(at: 1_000).mayUseValidators(now: 1_000 + 43_200, maxStalenessSeconds: 86_400))
    }
}
