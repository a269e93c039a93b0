import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDCoders
import SDDownloader

extension SDWebImageDownloaderOperation {
    // MARK: - The end

    /// Ending runs no user code and no decode: it may run on the loop thread.
    func endsLight() -> Bool {
        !checksInSwift && env.decryptor == nil && swiftPreviews == nil
    }

    func finish(_ result: Result<DownloadResult, DownloadError>, inline: Bool = false) {
        lock.lock()
        guard state != .finished else { lock.unlock(); return }
        // A transfer ended early (a thumbnail settled) while a subscriber
        // wants more than the streamed thumbnail (another size, the bytes
        // themselves): the rest of the file instead, by `Range` when the
        // server allows, else whole. Checked under the lock that finishes,
        // so no subscriber can join between the check and the end.
        if case .success(let r) = result, r.metrics.endedEarly, !cancelled, pendingError == nil,
           let transfer = transferOptions, var more = submitted,
           handlers.contains(where: { !$0.options.decodeImage || !$0.options.decodesLike(transfer) }) {
            lock.unlock()
            more.endsWhenSettled = false
            more.resume = r.resumable
            return submit(more)
        }
        state = .finished
        let hs = handlers
        handlers = []
        let pending = pendingError
        let transfer = transferOptions
        let lastReported = reported?.received
        let validators = validators
        if case .success(let r) = result { _metrics = r.metrics }
        let (built, raw) = (_response, rawResponse)
        let done = _completionBlock
        lock.unlock()
        // Built only where needed: errors, decryptors, the HTTP cache.
        lazy var response: URLResponse? = built ?? raw.map(makeResponse)

        let url = request?.url
        var outcome: Result<(Data, DecodedImage?, Bool), any Error>
        switch result {
        case _ where pending != nil:
            outcome = .failure(pending!)
        case .failure(let e) where e.code == .notModified && validators != nil && !options.contains(.ignoreCachedResponse):
            outcome = .success((validators!.data, nil, false))
        case .failure(let e):
            if let url, let partial = e.resumable { env.resumable?.put(url, partial) }
            outcome = .failure(SDWebImageError.from(e, url: url, response: response as? HTTPURLResponse))
        case .success(let r):
            outcome = .success((r.data, r.image, decodesInTransfer))
            if r.metrics.endedEarly, let http = response as? HTTPURLResponse {
                // the first bytes only: the response says so, as a server's
                // partial one would, so what stores them keeps them as such
                // (SDWebImageHTTPValidators.partial)
                // no size known: complete for nothing, still never the file
                let body = SDWebImagePartialBody(length: r.data.count, fullLength: r.metrics.fullLength,
                                                 completeUpToWidth: r.completeUpTo?.width ?? 0,
                                                 completeUpToHeight: r.completeUpTo?.height ?? 0,
                                                 settleLevels: max(0, env.settleLevels))
                let partial = Self.partialResponse(http, body)
                lock.lock()
                _response = partial
                lock.unlock()
                response = partial
            } else if options.contains(.useHTTPCache), let url, let http = response as? HTTPURLResponse {
                env.httpCache?.store(url: url, data: r.data, response: http)
            }
        }
        if case .success(let (data, image, decoded)) = outcome, let d = env.decryptor {
            if let plain = d.decryptedData(with: data, response: response) {
                outcome = .success((plain, image, decoded))
            } else {
                outcome = .failure(SDWebImageError(.badImageData, "the decryptor returned nil"))
            }
        }
        if case .success(let (data, _, _)) = outcome, data.isEmpty {
            outcome = .failure(SDWebImageError(.badImageData, "the downloaded data is empty"))
        }

        switch outcome {
        case .failure(let error):
            for h in hs { if let c = h.completed { h.queue.async { c(nil, nil, error, true) } } }
        case .success(let (data, transferImage, decoded)):
            // The last progress call comes before completion.
            if lastReported != Int64(data.count) {
                let count = data.count
                let total = max(count, Int(response?.expectedContentLength ?? 0))
                for h in hs { if let p = h.progress { h.queue.async { p(count, total, url) } } }
            }
            var own: [Handler] = []  // subscribers that need a decode of their own
            for h in hs {
                guard let c = h.completed else { continue }
                if !h.options.decodeImage {
                    h.queue.async { c(nil, data, nil, true) }
                } else if decoded, let transfer, let transferImage, h.options.decodesLike(transfer) {
                    // the streamed decode, through the coder that answers for its format
                    switch h.options.image(fromTransfer: transferImage, data: data) {
                    case .success(let image): h.queue.async { c(image, data, nil, true) }
                    case .failure(let e): h.queue.async { c(nil, data, e, true) }
                    }
                } else {
                    own.append(h)
                }
            }
            if !own.isEmpty {
                // Never decode on the loop thread.
                let extra = own
                if inline { work.async { Self.decodeEach(extra, data) } } else { Self.decodeEach(extra, data) }
            }
        }
        post(.SDWebImageDownloadStop, self)
        if case .success = outcome { post(.SDWebImageDownloadFinish, self) }
        done?()
    }

    /// The response of a transfer ended once its thumbnail settled: 206 with
    /// the headers that say what its bytes are (`SDWebImagePartialBody.responseHeaders`).
    static func partialResponse(_ http: HTTPURLResponse, _ body: SDWebImagePartialBody) -> HTTPURLResponse {
        var fields: [String: String] = [:]
        for (k, v) in http.allHeaderFields {
            if let k = k as? String, let v = v as? String, k.lowercased() != "content-length" { fields[k] = v }
        }
        fields.merge(body.responseHeaders) { _, new in new }
        return HTTPURLResponse(url: http.url ?? URL(fileURLWithPath: "/"), statusCode: 206, httpVersion: "HTTP/1.1",
                               headerFields: fields) ?? http
    }

    /// One decode per distinct set of options, through the coders manager,
    /// shared by the subscribers that ask alike.
    static func decodeEach(_ hs: [Handler], _ data: Data) {
        var done: [(SDImageLoaderDecodeOptions, Result<SDImage, SDWebImageError>)] = []
        for h in hs {
            guard let c = h.completed else { continue }
            let result: Result<SDImage, SDWebImageError>
            if let hit = done.first(where: { $0.0.decodesLike(h.options) && $0.0.scaleFactor == h.options.scaleFactor }) {
                result = hit.1
            } else {
                result = h.options.image(from: data).map(\.image)
                done.append((h.options, result))
            }
            switch result {
            case .success(let image): h.queue.async { c(image, data, nil, true) }
            case .failure(let e): h.queue.async { c(nil, data, e, true) }
            }
        }
    }
}
