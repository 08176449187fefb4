import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import Logging

/// The plan's writes and its event's ledger entries, each applied exactly once (`EventLedger`): the
/// first commit carries the plan's first groups with the entry, on the condition that the entry does
/// not exist yet; every further part is applied by one commit that marks it applied.
struct LedgerCommits: Sendable {
    let firestore: any FirestoreAPI
    /// This instance's commits to a document, about one a second at most (gathered when it is busy).
    let commits: CommitCoalescer
    let reads: DocumentReads
    let functionName: String
    let ledgerLifetime: Duration
    let logger: Logger

    /// What the first commit left: the ledger as it stands, and whether this delivery made it.
    struct FirstCommit {
        var state: LedgerState
        /// This delivery applied the plan's writes (else an earlier one did).
        var committed: Bool
        var holdsClaim: Bool
        /// What this delivery's commit produced for the counts its pushes carry.
        var counts = CommittedCounts()
    }

    /// Commits the plan's first writes with the ledger entries, or finds them committed before.
    func commitFirst(_ layout: EventLedger.Layout, ledger: EventLedger, event: DocumentChange, holder: String) async throws -> FirstCommit {
        let expireAt = Timestamp.now().adding(ledgerLifetime)
        // The plan's writes, then the ledger entry (with this holder's claim when there are pushes), then
        // its parts: the entries are the last `1 + partCount` writes.
        let writes = try ledger.firstCommit(layout, event: event, function: functionName, holder: holder, expireAt: expireAt)
        let hasPushes = !layout.pushShards.joined().isEmpty
        do {
            // A plan in one commit shares it with other events' writes to the same busy documents (merged
            // per document in the order of the events' times; counts add up), and gets its own writes'
            // results and its own outcome: a failure another event's writes met is not this one's. A plan
            // laid out in parts commits on its own (its parts are applied one commit each).
            let result = try await (layout.partCount == 0 ? commits.commit(writes, order: event.time) : firestore.commit(writes, transaction: nil))
            var counts = CommittedCounts()
            counts.record(writes, result)
            // The entries as written, with their versions (the parts' are the preconditions of their own commits).
            let entries = writes.suffix(1 + layout.partCount)
            let times = result.updateTimes.suffix(1 + layout.partCount)
            let documents = zip(entries, times).compactMap { write, time -> FirestoreDocument? in
                guard case .update(let name, let fields, _) = write.operation else { return nil }  // ledger entries are updates
                return FirestoreDocument(name: name, fields: fields, updateTime: time)
            }
            guard let main = documents.first else { throw DownstreamError.rejected("the commit answered without the ledger entry") }
            return FirstCommit(
                state: LedgerState(main: main, parts: Array(documents.dropFirst())), committed: true, holdsClaim: hasPushes, counts: counts)
        } catch let error as GoogleAPIError where error.status == .alreadyExists {
            // Applied before: carry on from what the ledger says. Without a ledger entry, another
            // document the plan creates exists now (a read's receipt another event made): plan again.
            guard let state = try await readState(ledger) else {
                throw DownstreamError.changedDuringPlanning("a document the plan creates exists now (\(error.message))")
            }
            // Applied by this very commit, if the entry names this holder: the client retried it after an
            // UNAVAILABLE whose commit had gone through.
            let ours = state.claims[holder] != nil
            return FirstCommit(state: state, committed: ours, holdsClaim: ours)
        } catch let error as GoogleAPIError where error.status == .notFound || error.status == .failedPrecondition {
            // A document the plan relied on changed between the read and the commit. Nothing was
            // written; the runtime reads again and plans again.
            throw DownstreamError.changedDuringPlanning("a document changed while the event was planned (\(error.message))")
        } catch let error as TransportError {
            // No answer: the commit may or may not have been applied. The ledger says whether, and that it
            // was this delivery's where the entry holds its claim (a plan with pushes); without pushes no
            // entry names its delivery, so one applied by this commit is reported a duplicate (its
            // effects the same).
            guard let state = try? await readState(ledger) else { throw DownstreamError.from(firestore: error) }
            let ours = state.claims[holder] != nil
            logger.info("the first commit's answer was lost; the ledger shows it \(ours || !hasPushes ? "applied" : "applied by another delivery")")
            return FirstCommit(state: state, committed: ours, holdsClaim: ours)
        } catch {
            throw DownstreamError.from(firestore: error)
        }
    }

    /// The ledger's main entry and parts as stored now, or nil if there is no entry.
    func readState(_ ledger: EventLedger) async throws -> LedgerState? {
        guard let main = try await reads([ledger.main])[ledger.main] else { return nil }
        let count = Int(clamping: min(max(main["parts"]?.integerValue ?? 0, 0), 10_000))
        guard count > 0 else { return LedgerState(main: main, parts: []) }
        let names = try (1...count).map { index throws(DownstreamError) in try ledger.part(index) }
        let found = try await reads(names)
        return LedgerState(main: main, parts: names.compactMap { found[$0] })
    }

    /// Applies the parts whose writes are still pending; true if this delivery applied any.
    func applyPendingParts(_ state: inout LedgerState, counts: inout CommittedCounts) async throws -> Bool {
        var applied = false
        for (index, part) in state.parts.enumerated() where part["state"] == PartState.pending.value {
            state.parts[index] = try await applyPart(part, counts: &counts)
            applied = true
        }
        return applied
    }

    /// One part's writes and its mark as applied, in one commit conditional on the part as read; a write
    /// to a document deleted since is left out (a group may only require that its documents exist).
    func applyPart(_ part: FirestoreDocument, counts: inout CommittedCounts) async throws -> FirestoreDocument {
        var writes = try LedgerState.writes(of: part)
        var current = part
        for attempt in 1...3 {
            guard let version = current.updateTime else { throw DownstreamError.rejected("ledger part \(part.name.path) has no version") }
            let done = Write(
                .update(part.name, fields: ["state": PartState.applied.value], mask: [FieldPath("state"), FieldPath("writes")]),
                precondition: .updateTime(version))
            do {
                let result = try await firestore.commit(writes + [done], transaction: nil)
                counts.record(writes, result)
                return FirestoreDocument(name: part.name, fields: ["state": PartState.applied.value, "pushes": part["pushes"] ?? .map([:])])
            } catch let error as GoogleAPIError where error.status == .notFound || error.status == .failedPrecondition || error.status == .alreadyExists {
                guard attempt < 3 else { throw DownstreamError.unavailable("ledger part \(part.name.path) could not be applied: \(error.message)") }
            } catch let error as TransportError where attempt < 3 {
                logger.info("a ledger part's commit got no answer (\(error)); reading it back")
            }
            // Applied by another delivery (or by this one, its answer lost)? Else drop writes to deleted documents and try again.
            guard let now = try await reads([part.name])[part.name] else { throw DownstreamError.rejected("ledger part \(part.name.path) vanished") }
            if now["state"] == PartState.applied.value { return now }
            current = now
            let targets = try await reads(Array(Set(writes.map(\.document))))
            writes = writes.filter { targets[$0.document] != nil || $0.precondition == nil }
        }
        throw DownstreamError.unavailable("ledger part \(part.name.path) could not be applied")
    }
}
