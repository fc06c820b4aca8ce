#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Fetches the directive at `url`, verifies it and says what to do: the one entry point of
/// `rollbackctl sync`. Never throws and never traps on anything a server sends.
///
/// - `conditional` are the validators from the previous result's ``SyncResult/conditional``;
///   they are sent only if they were obtained for this `url` and `context.currentVersion`.
/// - The whole fetch ends within `options.deadline` (default 5 s).
/// - Only ``SyncOutcome/applied(_:)`` asks the caller to change the decision (persist the
///   directive's decision, reason and serial). Every other outcome leaves it alone, so a failed
///   fetch never changes the decision.
///
/// ```swift
/// let result = await sync(url: manifestURL, trust: trust, context: context,
///                         conditional: state.lastConditional, options: FetchOptions())
/// if let directive = result.outcome.appliedDirective { state.apply(directive) }
/// state.lastSync = result  // Codable; result.description is the line for `status`
/// ```
public func sync(
    url: URL,
    trust: TrustConfig,
    context: InstallContext,
    conditional: ConditionalHeaders = .none,
    options: FetchOptions = FetchOptions()
) async -> SyncResult {
    let sent = conditional.isUsable(for: url, currentVersion: context.currentVersion) ? conditional : .none
    let fetched = await DirectiveFetcher(options: options).fetch(url, conditional: sent)
    let checkedAt = Date(timeIntervalSince1970: context.now.timeIntervalSince1970.rounded(.down))

    func validators(etag: String?, lastModified: String?) -> ConditionalHeaders {
        ConditionalHeaders(etag: etag, lastModified: lastModified, url: url.absoluteString, currentVersion: context.currentVersion)
    }

    switch fetched {
    case .failed(let outcome):
        return SyncResult(outcome: outcome, url: url.absoluteString, checkedAt: checkedAt, conditional: conditional)
    case .notModified(let etag, let lastModified):
        let next = validators(etag: etag ?? sent.etag, lastModified: lastModified ?? sent.lastModified)
        return SyncResult(outcome: .unchanged(serial: nil), url: url.absoluteString, checkedAt: checkedAt, conditional: next)
    case .fetched(let body, let etag, let lastModified, let date):
        let (outcome, authentic) = DirectiveEvaluator.judge(body, trust: trust, context: context)
        // Remember validators only for a directive judged good; a refused one is fetched
        // (and refused, visibly) again next time instead of hiding behind a 304. Nor those
        // that cannot tell a same-second, same-size change (ConditionalHeaders.areTrustworthy).
        let trusted = ConditionalHeaders.areTrustworthy(lastModified: lastModified, date: date)
        let next = outcome.isSuccessfulCheck ? (trusted ? validators(etag: etag, lastModified: lastModified) : .none) : conditional
        return SyncResult(outcome: outcome, url: url.absoluteString, checkedAt: checkedAt, conditional: next,
                          authentic: authentic.map(AuthenticDirective.init))
    }
}

/// Verifies a directive read from a local file (`file:///etc/app/directive.json`): the same
/// evaluator, in the same order, as an HTTP answer (``DirectiveEvaluator``); only the fetch
/// differs, and the caller did it (reading the file strictly). Nothing is conditional: the
/// caller reads the file only when it changed. `url` names the file in the result.
public func judge(directiveBytes body: Data, url: String, trust: TrustConfig, context: InstallContext) -> SyncResult {
    let checkedAt = Date(timeIntervalSince1970: context.now.timeIntervalSince1970.rounded(.down))
    let (outcome, authentic) = DirectiveEvaluator.judge(body, trust: trust, context: context)
    return SyncResult(outcome: outcome, url: url, checkedAt: checkedAt, conditional: .none,
                      authentic: authentic.map(AuthenticDirective.init))
}
