#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a ``DirectiveFetcher`` got from the server.
public enum FetchResult: Sendable, Equatable {
    /// A 200 answer with its body (at most the body cap), its validators and its `Date`.
    case fetched(body: Data, etag: String?, lastModified: String?, date: String?)
    /// A 304 answer to a conditional request, with any refreshed validators.
    case notModified(etag: String?, lastModified: String?)
    /// No usable answer: a ``SyncOutcome/refused(_:reason:)`` or
    /// ``SyncOutcome/unreachable(_:reason:)`` saying why.
    case failed(SyncOutcome)
}
