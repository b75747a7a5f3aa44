package knit

import (
	"context"
	"fmt"
	"strconv"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Approvals lists an environment's approvals ("" = every environment)
// whose status is one of statuses (none = any), oldest first.
func (rs *Records) Approvals(ctx context.Context, ref string, statuses ...string) ([]view.Approval, error) {
	k := rs.k
	p, err := k.ApprovalsPage(ctx, ref, statuses, 0, -1)
	return p.Items, err
}

// ApprovalsPage is a page of Approvals: those with an ID above after, at
// most n (0: the default page; < 0: all); the cursor is an approval ID.
func (k *Knit) ApprovalsPage(ctx context.Context, ref string, statuses []string, after int64, n int) (Page[view.Approval], error) {
	f := store.ApprovalFilter{Statuses: statuses, Teams: callerTeams(ctx), After: after}
	if ref != "" {
		e, err := k.resolveEnv(ctx, ref)
		if err != nil {
			return Page[view.Approval]{}, err
		}
		f.Env = e.ID
	}
	if n >= 0 {
		n = limit(n)
		f.Limit = n + 1
	}
	out, err := k.store.ListApprovals(ctx, f)
	if err != nil {
		return Page[view.Approval]{}, err
	}
	return pageOf(mapAll(out, approvalRecord), n, func(a view.Approval) string { return strconv.FormatInt(a.ID, 10) }), nil
}

// History lists an environment's runs ("" = all), newest first; the
// cursor is a run ID.
func (rs *Records) History(ctx context.Context, ref, before string, n int) (Page[view.Run], error) {
	k := rs.k
	id := ""
	if ref != "" {
		e, err := k.resolveEnv(ctx, ref)
		if err != nil {
			return Page[view.Run]{}, err
		}
		id = e.ID
	}
	n = limit(n)
	runs, err := k.store.Runs(ctx, id, store.RunFilter{Before: before, Limit: n + 1, Teams: callerTeams(ctx)})
	if err != nil {
		return Page[view.Run]{}, err
	}
	return pageOf(mapAll(runs, runRecord), n, func(r view.Run) string { return r.ID }), nil
}

// RunView is view.RunView: the HTTP client decodes it without linking the library.
type RunView = view.RunView

// RunRecord returns a run as the store recorded it.
func (k *Knit) RunRecord(ctx context.Context, id string) (RunView, error) {
	r, err := k.store.Run(ctx, id)
	if err != nil {
		return RunView{}, err // the store's error names the run
	}
	crs, err := k.store.ComponentRuns(ctx, id)
	v := RunView{Run: runRecord(r), Components: componentRunRecords(crs)}
	if v.Components == nil {
		v.Components = []view.ComponentRun{}
	}
	return v, err
}

// Revisions lists an environment's revisions, newest first; the cursor is
// a revision number.
func (rs *Records) Revisions(ctx context.Context, ref, before string, n int) (Page[view.Revision], error) {
	k := rs.k
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return Page[view.Revision]{}, err
	}
	b := 0
	if before != "" {
		if b, err = strconv.Atoi(before); err != nil {
			return Page[view.Revision]{}, fmt.Errorf("bad cursor %q: a revision number", before)
		}
	}
	n = limit(n)
	revs, err := k.store.Revisions(ctx, e.ID, store.RevisionFilter{Before: b, Limit: n + 1})
	if err != nil {
		return Page[view.Revision]{}, err
	}
	return pageOf(mapAll(revs, revisionRecord), n, func(r view.Revision) string { return strconv.Itoa(r.Number) }), nil
}

// AuditFilter is view.AuditFilter: the HTTP client decodes it without linking the library.
type AuditFilter = view.AuditFilter

// Audit lists the audit trail, oldest first: of a team-limited caller,
// only its teams' environments' events.
func (rs *Records) Audit(ctx context.Context, f AuditFilter) (Page[view.AuditEvent], error) {
	k := rs.k
	q := store.AuditFilter{Actor: f.Actor, Since: f.Since, Until: f.Until, Teams: callerTeams(ctx)}
	if f.Env != "" {
		e, err := k.resolveEnv(ctx, f.Env)
		if err != nil {
			return Page[view.AuditEvent]{}, err
		}
		q.Env = e.ID
	}
	if f.After != "" {
		after, err := strconv.ParseInt(f.After, 10, 64)
		if err != nil {
			return Page[view.AuditEvent]{}, fmt.Errorf("bad cursor %q: an event ID", f.After)
		}
		q.After = after
	}
	n := f.Limit
	if n > 0 {
		q.Limit = n + 1
	}
	events, err := k.store.Audit(ctx, q)
	if err != nil {
		return Page[view.AuditEvent]{}, err
	}
	return pageOf(mapAll(events, auditRecord), n, func(e view.AuditEvent) string { return strconv.FormatInt(e.ID, 10) }), nil
}

// Logs returns a component's newest component run, log included.
func (rs *Records) Logs(ctx context.Context, ref, component string) (view.ComponentRun, error) {
	k := rs.k
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return view.ComponentRun{}, err
	}
	cr, err := k.store.LastComponentRun(ctx, e.ID, component)
	if err != nil {
		return view.ComponentRun{}, err // the store's error names the component and the environment
	}
	return componentRunRecord(cr), nil
}
