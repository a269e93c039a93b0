// `import SDWebImage` is all a user needs: the decoded pixels (SDCoders), the
// transfer types (SDDownloader) and the cache stores (SDCache) appear in this
// module's API.
@_exported import SDCache
@_exported import SDCoders
@_exported import SDDownloader
