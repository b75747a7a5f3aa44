package knit

import (
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// The mapping from the store's rows to the library's read models
// (internal/view): the one place that knows both. A record whose fields
// are the row's converts field by field (a row that gains or renames a
// field no longer converts, and says so at compile time); the others name
// what they leave out. TestRecordsMapEveryStoreField checks each mapping
// gives the JSON the row gives.

func envRecord(e store.Environment) view.Environment { return view.Environment(e) }

func runRecord(r store.Run) view.Run { return view.Run(r) }

// runPtr is runRecord of r, nil for nil.
func runPtr(r *store.Run) *view.Run {
	if r == nil {
		return nil
	}
	v := runRecord(*r)
	return &v
}

func componentRunRecord(c store.ComponentRun) view.ComponentRun { return view.ComponentRun(c) }

func componentRunRecords(cs []store.ComponentRun) []view.ComponentRun {
	return mapAll(cs, componentRunRecord)
}

func lockRecord(l store.Lock) view.Lock { return view.Lock(l) }

// lockPtr is lockRecord of l, nil for nil.
func lockPtr(l *store.Lock) *view.Lock {
	if l == nil {
		return nil
	}
	v := lockRecord(*l)
	return &v
}

// revisionRecord leaves out the revision's file as written (File: never
// in the API's JSON; knit diff reads it through the library).
func revisionRecord(r store.Revision) view.Revision {
	return view.Revision{Env: r.Env, Number: r.Number, Hash: r.Hash, Source: r.Source, Spec: r.Spec, Root: r.Root,
		Commit: r.Commit, Author: r.Author, Message: r.Message, Errors: r.Errors, CreatedAt: r.CreatedAt,
		Verification: r.Verification}
}

func auditRecord(e store.AuditEvent) view.AuditEvent { return view.AuditEvent(e) }

func approvalRecord(a store.Approval) view.Approval { return view.Approval(a) }

func changeSetRecord(c store.ChangeSet) view.ChangeSet {
	return view.ChangeSet{ID: c.ID, Env: c.Env, RunID: c.RunID, Revision: c.Revision, Checksum: c.Checksum,
		Components: mapAll(c.Components, changeSetComponentRecord), Status: c.Status, CreatedAt: c.CreatedAt,
		DecidedBy: c.DecidedBy, Reason: c.Reason, DecidedAt: c.DecidedAt}
}

func changeSetComponentRecord(c store.ChangeSetComponent) view.ChangeSetComponent {
	return view.ChangeSetComponent{Component: c.Component, ApprovalID: c.ApprovalID, PlanChecksum: c.PlanChecksum,
		Resources: mapAll(c.Resources, func(r store.ChangeSetResource) view.ChangeSetResource { return view.ChangeSetResource(r) }),
		Add:       c.Add, Change: c.Change, Destroy: c.Destroy, Destroying: c.Destroying,
		KnownAfterApply: c.KnownAfterApply, Placeholders: c.Placeholders, PlanError: c.PlanError, Gated: c.Gated}
}

// tokenRecord leaves out the token's Hash: nobody outside the store sees
// even the hash of a secret.
func tokenRecord(t store.Token) view.Token {
	return view.Token{Name: t.Name, Role: t.Role, Teams: t.Teams, CreatedBy: t.CreatedBy,
		CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt}
}

func ttlRecord(x store.Expiry) view.TTL { return view.TTL(x) }

func versionRecord(v store.EnvironmentVersion) view.EnvironmentVersion {
	return view.EnvironmentVersion(v)
}

func releaseRecord(r store.Release) view.ReleaseRecord { return view.ReleaseRecord(r) }

// summaryRecord is one row of the environments list, Invalid left to the
// caller.
func summaryRecord(s store.EnvironmentSummary) view.EnvironmentSummary {
	return view.EnvironmentSummary{Environment: envRecord(s.Environment), LastRun: runPtr(s.LastRun)}
}

// mapAll is f of each of xs, nil for nil (an empty list stays empty: the
// JSON of each is what the store's gives).
func mapAll[S, V any](xs []S, f func(S) V) []V {
	if xs == nil {
		return nil
	}
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func pipelineRecord(p store.Pipeline) view.PipelineRecord { return view.PipelineRecord(p) }

func stageStateRecord(s store.StageState) view.StageState { return view.StageState(s) }

func promotionApprovalRecord(a store.PromotionApproval) view.PromotionApproval {
	return view.PromotionApproval(a)
}

func stageFileRecord(f store.StageFile) view.StageFileRecord {
	return view.StageFileRecord{Pipeline: f.Pipeline, Stage: f.Stage, Version: f.Version, SeenHash: f.SeenHash, SeenCommit: f.SeenCommit,
		AppliedCommit: f.AppliedCommit, Change: view.StageChangeRecord(f.Change)}
}

func stageFileRow(f view.StageFileRecord) store.StageFile {
	return store.StageFile{Pipeline: f.Pipeline, Stage: f.Stage, Version: f.Version, SeenHash: f.SeenHash, SeenCommit: f.SeenCommit,
		AppliedCommit: f.AppliedCommit, Change: store.StageChange(f.Change)}
}
