extension CommandConfiguration {
    /// `deliver-hooks`: the hooks' deliverer, started detached after each history event
    /// (internal: not in the tool's help; docs/hooks.md).
    package static let deliverHooks = CommandConfiguration(
        name: "deliver-hooks",
        abstract: "Deliver the queued history events to the bundle's hooks (started after each event).",
        overview: """
            Deliver every event queued in DIR/hooks/queue, oldest first, to hooks.command (the
            event as JSON on its standard input) and hooks.url (POSTed, signed with
            HMAC-SHA256), retrying a failed delivery hooks.retries times with a growing wait,
            then recording the failure in DIR/hooks/status, which rollbackctl status shows. One
            runs at a time: another one exits at once. Switchback starts this command after
            each event; it is not meant to be run by hand, but running it delivers what is queued.
            """,
        sections: [("EXIT STATUS", "0 when the queue is empty or another deliverer runs; 78 the hooks.* settings do not read.")],
        isRemote: true)
}
