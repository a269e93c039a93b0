// `import SDWebImage` is all a user needs: the decoded pixels (SDCoders) and
// the transfer types (SDDownloader) appear in this module's API.
@_exported import SDCoders
@_exported import SDDownloader
