import CSDCore

/// The C core's version as the headers this module was built with say it
/// (`SD_VERSION_*`); the library linked at run time is `sdCoreVersion`.
package enum CoreVersion {
    /// `SD_VERSION_MAJOR`, `_MINOR`, `_PATCH` of the headers.
    package static let headers = (major: Int(SD_VERSION_MAJOR), minor: Int(SD_VERSION_MINOR), patch: Int(SD_VERSION_PATCH))
}
