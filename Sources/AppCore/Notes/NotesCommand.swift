/// `note add TEXT` and `note list`.
struct NotesCommand {
    let store: NotesStore

    func run(_ arguments: [String]) -> Int32 {
        switch arguments.first {
        case "add" where arguments.count >= 2:
            guard store.add(arguments.dropFirst().joined(separator: " ")) else {
                printError("Error: cannot write \(store.path).")
                return 1
            }
            return 0
        case "list":
            for note in store.list() { print(note) }
            return 0
        default:
            printError("Error: usage: note add TEXT | note list")
            return 64
        }
    }
}
