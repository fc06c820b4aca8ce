// What the Switchback SDK needs from C: the exported stamp, version and build of the app's
// library, and the app's registration function, which the app defines and the SDK calls.
#ifndef SWITCHBACK_SDK_H
#define SWITCHBACK_SDK_H

#include <stdint.h>

/// The app's version: what switchback-bundle links in (switchback_stamped_app_version), else
/// SWITCHBACK_APP_VERSION at build time ("0.0.0-dev" unset).
const char *switchback_app_version(void);
/// The app's build: what switchback-bundle links in, else SWITCHBACK_APP_BUILD ("dev" unset).
const char *switchback_app_build(void);
/// The ABI stamp of this library: contract version and compiler (see switchback.h).
const char *switchback_abi_stamp(void);

/// Calls the app's `switchback_register` (its one line of glue) if the library defines it.
/// Returns 1 when it did, 0 when the library defines none.
int32_t switchback_sdk_call_register(void);

#endif
