// The launcher: picks a slot of AppCore, checks it, dlopens it and runs it. No Foundation
// and no networking here; every start pays for what this executable links.
import SwitchbackCore
import CSwitchbackListen

Launcher.run(adoptingListeners: switchback_listen_adopt)
