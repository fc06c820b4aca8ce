// The contract between the launcher and AppCore. Both sides import this header and
// nothing else crosses the boundary.
//
// Evolution rules (the previous slot is always built from an older commit):
// - SWITCHBACK_CONTRACT_VERSION goes up by one whenever this file changes.
// - Fields are only ever appended to SwitchbackContext; `size` tells the app how much of
//   the struct the launcher filled, so an app reads a field only if it fits in `size`.
// - A launcher runs every contract version from 1 up to its own.
#ifndef SWITCHBACK_H
#define SWITCHBACK_H

#include <stddef.h>
#include <stdint.h>

// Contract 1: switchback_main, the stamp, version and build.
// Contract 2: adds the optional downgrade entry point, switchback_downgrade, and the
// optional planning entry point, switchback_pending_steps. The planning entry point came
// later without a new number, on purpose: it is an optional symbol looked up by name (a
// build without it answers "unknown"), the context did not change, and a new number would
// make every launcher of contract 2 refuse slots that only add a symbol it never calls.
#define SWITCHBACK_CONTRACT_VERSION 2

#define SWITCHBACK_STRINGIFY_(x) #x
#define SWITCHBACK_STRINGIFY(x) SWITCHBACK_STRINGIFY_(x)

/// Name of the entry point an AppCore exports (signature: SwitchbackEntryPoint).
#define SWITCHBACK_ENTRY_SYMBOL "switchback_main"
/// Name of the function an AppCore exports that returns its ABI stamp (SwitchbackStampFunction).
#define SWITCHBACK_STAMP_SYMBOL "switchback_abi_stamp"
/// Names of the functions an AppCore exports that return its version and build (C strings).
#define SWITCHBACK_VERSION_SYMBOL "switchback_app_version"
#define SWITCHBACK_BUILD_SYMBOL "switchback_app_build"

/// Which slot a process runs.
typedef enum SwitchbackSlot {
    SWITCHBACK_SLOT_CURRENT = 0,
    SWITCHBACK_SLOT_PREVIOUS = 1,
} SwitchbackSlot;

struct SwitchbackContext;

/// Called by the app once this start is healthy. Returns 0 on success.
typedef int32_t (*SwitchbackMarkGood)(const struct SwitchbackContext *context);

/// Handed by the launcher to the entry point. Valid for the whole run.
typedef struct SwitchbackContext {
    /// The contract version of the launcher that filled this struct.
    uint32_t contract_version;
    /// sizeof(SwitchbackContext) as that launcher knows it.
    uint32_t size;
    /// The slot running now (a SwitchbackSlot value).
    int32_t slot;
    int32_t reserved;
    /// This slot's version, as recorded in the bundle's manifest.
    const char *slot_version;
    /// The other slot's version, as recorded in the bundle's manifest.
    const char *other_slot_version;
    /// The state directory the launcher uses (absolute path).
    const char *state_directory;
    /// Marks this start good (used by automatic rollback). Never NULL.
    SwitchbackMarkGood mark_good;
    /// Owned by the launcher; the app must not touch it.
    void *launcher_data;
} SwitchbackContext;

/// The entry point: the launcher's argc/argv/envp untouched, and the context.
/// Its return value is the process's exit code.
typedef int32_t (*SwitchbackEntryPoint)(int32_t argc, char **argv, char **envp,
                                         const SwitchbackContext *context);

/// Name of the optional downgrade entry point (SwitchbackDowngradeFunction), since contract 2.
/// The launcher calls it in a process of its own, with the current slot loaded and nothing
/// else, before the previous slot runs on data the current one migrated. A build that does
/// not export it declares that the previous build can read everything it writes.
#define SWITCHBACK_DOWNGRADE_SYMBOL "switchback_downgrade"

/// Flags for the downgrade entry point.
/// Proceed past a migration that can be neither reverted nor restored by archiving the data.
#define SWITCHBACK_DOWNGRADE_FORCE 1u

/// Results of the downgrade entry point.
/// The data can now be read by the target version (or already could).
#define SWITCHBACK_DOWNGRADE_DONE 0
/// The downgrade failed part-way; what was undone stays undone (a journal finishes the rest).
#define SWITCHBACK_DOWNGRADE_FAILED 1
/// Nothing was changed: a step can be neither reverted nor restored, and FORCE was not given.
#define SWITCHBACK_DOWNGRADE_REFUSED 3

/// Makes the app's data readable by `target_version` (the previous slot's version).
///
/// Writes its report to `report_fd`, one line per fact, `key=value` (fields split by tabs):
///   undone=<revert|restore|archive>\t<step name>\t<archive path, or empty>   per undone step
///   reader_floor=<version, or empty for none>                               after it ran
///   message=<one sentence>                                                  why it refused or failed
/// and returns a SWITCHBACK_DOWNGRADE_* result.
typedef int32_t (*SwitchbackDowngradeFunction)(const char *target_version, uint32_t flags, int32_t report_fd,
                                                const SwitchbackContext *context);

/// Name of the optional planning entry point (SwitchbackPendingStepsFunction), since contract 2.
/// The launcher calls it in a process of its own (`SWITCHBACK_PLAN_STEPS=<slot>`), with that
/// slot loaded and nothing else, before a live switch starts the slot beside the serving
/// build: it says which data migration steps the slot would run at its start, and who can
/// read the data after each, so the supervisor can tell whether the serving build may keep
/// serving while they run. It must run none of them and write nothing (not the data, not the
/// migration ledger, not the published data state): another build may be serving the data.
/// A build that does not export it cannot say (the switch then takes the safe path).
#define SWITCHBACK_PENDING_STEPS_SYMBOL "switchback_pending_steps"

/// Results of the planning entry point.
/// Every pending step was reported (none, possibly).
#define SWITCHBACK_PENDING_STEPS_DONE 0
/// The steps could not be worked out (a `message=` line says why).
#define SWITCHBACK_PENDING_STEPS_FAILED 1

/// Reports the migration steps this build would run at its start, in the order it would run
/// them, without running any.
///
/// Writes its report to `report_fd`, one line per fact, fields split by single spaces:
///   step <name> <version> <reader floor>   per pending step, in order
///   message=<one sentence>                 why it failed
/// Each field is percent-encoded: `%`, space and every byte below 0x21 or at 0x7F become
/// `%XX`; an empty field is `-`, and a field that is `-` itself is `%2D`. <version> is the
/// step's version, empty for a first-install step or a hook; <reader floor> is the oldest
/// version that can read the data after the step (the step's own version when it declared
/// none), empty for a hook, which never changes who can read the data.
/// Returns a SWITCHBACK_PENDING_STEPS_* result.
typedef int32_t (*SwitchbackPendingStepsFunction)(int32_t report_fd, const SwitchbackContext *context);

/// Returns a static C string: the ABI stamp of the library that exports it.
typedef const char *(*SwitchbackStampFunction)(void);

/// The ABI stamp of the code that includes this header, as compiled: the contract version
/// and the exact compiler that built it (Swift has no stable ABI on Linux, so both slots
/// and the launcher must come from one toolchain).
static inline const char *switchback_compiled_abi_stamp(void) {
    return "switchback-abi/" SWITCHBACK_STRINGIFY(SWITCHBACK_CONTRACT_VERSION)
           " toolchain/" __clang_version__;
}

/// True when `context` was filled far enough to hold a field ending at `end` bytes.
static inline int switchback_context_has(const SwitchbackContext *context, size_t end) {
    return context != NULL && context->size >= end;
}

#endif
