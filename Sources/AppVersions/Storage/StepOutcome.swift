/// How a step ended.
enum StepOutcome: Sendable, Equatable {
    /// It returned; it never runs again in this scope.
    case succeeded
    /// It threw under the `continue` policy; recorded, never retried.
    case failed(String)
    /// It threw under the `stop` policy; not recorded as done, retried on the next run.
    case abandoned(String)
}
