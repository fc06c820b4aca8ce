// The version and build stamped into AppCore at build time (see Package.swift).
#ifndef APPCORE_STAMP_H
#define APPCORE_STAMP_H

/// The app's version, from the repository's VERSION file.
const char *switchback_app_version(void);
/// The app's build (scripts/bundle passes the commit; "dev" otherwise).
const char *switchback_app_build(void);

#endif
