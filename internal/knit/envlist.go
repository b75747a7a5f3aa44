package knit

import (
	"context"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// EnvironmentListFilter is view.EnvironmentListFilter.
type EnvironmentListFilter = view.EnvironmentListFilter

// EnvironmentRow is view.EnvironmentRow.
type EnvironmentRow = view.EnvironmentRow

// EnvironmentList is view.EnvironmentList.
type EnvironmentList = view.EnvironmentList

// EnvironmentList reads one page of the environments list as ctx's caller
// (WithCaller) may see it, each row with its summary, in one store read:
// the store filters by the caller's teams, sorts and cuts the page, so a
// page costs the same however many environments there are.
func (rs *Records) EnvironmentList(ctx context.Context, f EnvironmentListFilter) (EnvironmentList, error) {
	k := rs.k
	rows, total, err := k.store.EnvironmentRows(ctx, store.EnvironmentRowFilter{
		Filter: storeEnvFilter(ctx, f.Filter, f.Filter.Limit), Order: store.EnvironmentOrder(f.Order), Offset: f.Offset})
	if err != nil {
		return EnvironmentList{}, err
	}
	list := EnvironmentList{Rows: make([]EnvironmentRow, len(rows)), Total: total}
	for i, r := range rows {
		row := EnvironmentRow{Environment: envRecord(r.Environment), LastRun: runPtr(r.LastRun), LockHolder: r.LockHolder,
			Components: r.Components, AppliedCommit: r.AppliedCommit}
		if r.LastDrift != nil {
			row.Drift = driftOf(*r.LastDrift, r.DriftStatuses)
		}
		if r.Pending != nil {
			row.Invalid = invalidRevision(*r.Pending)
		}
		list.Rows[i] = row
	}
	return list, nil
}
