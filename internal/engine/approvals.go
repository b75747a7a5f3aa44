package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// ErrStale means an approval no longer matches the environment: the spec,
// the component's inputs or its state changed since the plan was made.
var ErrStale = errors.New("approval is stale")

// ErrNothingToApprove means no plan of the component awaits a decision.
var ErrNothingToApprove = errors.New("nothing awaits approval")

// approvals keeps a run's approval records: it reads the open approval of
// a component, requests one for a plan that waits (its plan file kept, in
// the store too), tells an approved plan still applicable from a stale one,
// and closes approvals as their plans apply or are superseded. Only runs,
// which hold the lock, open approvals, so it knows from the run's start
// which components have one (open), and which wait in this run (holds).
type approvals struct {
	s  *session
	mu sync.Mutex
	// open names the components with an open (pending or approved)
	// approval: those at the start, and those this run asks for. For any
	// other component the store need not be asked.
	open map[string]bool
	// holds are the approvals components wait with in this run, by name.
	holds map[string]heldPlan
}

// opened records the approvals open at the run's start.
func (ar *approvals) opened(open []store.Approval) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	for _, a := range open {
		ar.open[a.Component] = true
	}
}

// approvedPlan is an approval ready to apply, with its saved plan.
type approvedPlan struct {
	a    store.Approval
	plan *runner.Plan
}

// approvedPlan returns the component's approved plan if it still matches
// the environment. Otherwise it marks the approval stale and says why.
func (ar *approvals) approvedPlan(name, fp string) (*approvedPlan, string, error) {
	open, err := ar.openApproval(name)
	if open == nil || err != nil || open.Status != store.ApprovalApproved {
		return nil, "", err
	}
	a := *open
	why := ar.staleness(a, fp)
	if why != "" {
		return nil, why, ar.markStale(a, why)
	}
	plan := &runner.Plan{}
	if err := json.Unmarshal(a.Plan, plan); err != nil {
		return nil, "", fmt.Errorf("approval #%d: stored plan is unreadable: %w", a.ID, err)
	}
	if plan.File, err = ar.planFile(a); err != nil {
		return nil, "", err
	}
	plan.Checksum = a.PlanChecksum
	return &approvedPlan{a: a, plan: plan}, "", nil
}

// staleness says why an approved plan may no longer be applied, or "".
func (ar *approvals) staleness(a store.Approval, fp string) string {
	switch {
	case a.Revision != ar.s.run.Revision:
		return fmt.Sprintf("approval #%d was for revision %d, and the environment is now at revision %d", a.ID, a.Revision, ar.s.run.Revision)
	case a.Fingerprint != fp:
		return fmt.Sprintf("approval #%d: the module, inputs or upstream outputs of %s changed since the plan", a.ID, a.Component)
	}
	if !ar.planIntact(a) {
		return fmt.Sprintf("approval #%d: the saved plan file is missing or changed", a.ID)
	}
	return ""
}

// planIntact reports whether approval a's saved plan is still the one
// approved: its bytes in the store (or, for an approval from before knit
// kept them there, its file) have the approved checksum.
func (ar *approvals) planIntact(a store.Approval) bool {
	data, err := ar.s.e.Store.SavedPlan(ar.s.db, a.ID)
	if errors.Is(err, store.ErrNotFound) {
		sum, err := fileSHA256(a.PlanFile)
		return err == nil && sum == a.PlanChecksum
	}
	return err == nil && bytesSHA256(data) == a.PlanChecksum
}

// planFile writes approval a's saved plan, from the store, to a file of
// this process's data dir, and returns its path: the bytes applied are
// the ones approved, whichever replica made the plan, and the work dir
// holds no copy anyone relies on. An approval from before knit kept plans
// in the store is applied from its file.
func (ar *approvals) planFile(a store.Approval) (string, error) {
	data, err := ar.s.e.Store.SavedPlan(ar.s.db, a.ID)
	if errors.Is(err, store.ErrNotFound) {
		return a.PlanFile, nil
	}
	if err != nil {
		return "", fmt.Errorf("read approval #%d's saved plan: %w", a.ID, err)
	}
	if bytesSHA256(data) != a.PlanChecksum {
		return "", fmt.Errorf("approval #%d: the saved plan in the store does not have the approved checksum", a.ID)
	}
	dir := filepath.Join(ar.s.e.DataDir, "approvals", ar.s.env.Spec.TeamName, ar.s.env.Spec.EnvName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	file := filepath.Join(dir, filepath.Base(a.PlanFile))
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return "", fmt.Errorf("write approval #%d's saved plan: %w", a.ID, err)
	}
	return file, nil
}

func (ar *approvals) markStale(a store.Approval, why string) error {
	err := ar.s.e.Store.DecideApproval(ar.s.db, a.ID, a.Status, store.ApprovalStale, ar.s.opts.Actor, why, ar.s.e.now())
	if errors.Is(err, store.ErrConflict) {
		return nil // someone decided it meanwhile; nothing is open to mark
	}
	if err != nil {
		return fmt.Errorf("mark approval #%d stale: %w", a.ID, err)
	}
	if err := ar.s.e.Store.AppendAudit(ar.s.db, store.AuditEvent{Env: ar.s.env.ID(), Actor: ar.s.opts.Actor, Action: "approval-stale",
		Component: a.Component, Revision: a.Revision, RunID: ar.s.run.ID, Detail: why, Time: ar.s.e.now()}); err != nil {
		return fmt.Errorf("record stale approval #%d in the audit trail: %w", a.ID, err)
	}
	return nil
}

// errRefusedPlan is what applyPlan and applyDestroy return when the
// runner refused an approved plan as stale (runner.ErrStalePlan) without
// changing anything: the approval is marked stale with why, and the caller
// plans the component again, the same kind of change, for a fresh approval.
type errRefusedPlan struct{ why string }

func (e *errRefusedPlan) Error() string { return e.why }

// closeApproval records what became of an approved plan's apply.
func (ar *approvals) closeApproval(ap *approvedPlan, err error) error {
	if errors.Is(err, runner.ErrStalePlan) {
		why := "the tool refused it: " + firstLine(err.Error())
		if serr := ar.markStale(ap.a, why); serr != nil {
			return serr
		}
		return &errRefusedPlan{why: fmt.Sprintf("approval #%d: %s", ap.a.ID, why)}
	}
	if err != nil {
		// A saved plan that failed to apply cannot be applied again: the state moved.
		return ar.markStale(ap.a, "applying it failed: "+firstLine(err.Error()))
	}
	if err := ar.s.e.Store.DecideApproval(ar.s.db, ap.a.ID, store.ApprovalApproved, store.ApprovalApplied, ap.a.DecidedBy, ap.a.Reason, ar.s.e.now()); err != nil {
		return fmt.Errorf("record approval #%d as applied: %w", ap.a.ID, err)
	}
	return nil
}

// supersedeApproval closes the component's open approval, if any, once a
// newer plan of it was applied another way (auto-approve, a "yes" at the
// terminal): the plan it holds can no longer be applied.
func (ar *approvals) supersedeApproval(name string) error {
	a, err := ar.openApproval(name)
	if a == nil || err != nil {
		return err
	}
	return ar.markStale(*a, fmt.Sprintf("superseded: run %s applied a newer plan of %s", ar.s.run.ID, name))
}

// openApproval returns the component's open (pending or approved)
// approval, or nil.
func (ar *approvals) openApproval(name string) (*store.Approval, error) {
	if !ar.hasOpen(name) {
		return nil, nil
	}
	a, err := ar.s.e.Store.OpenApproval(ar.s.db, ar.s.env.ID(), name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the open approval of %s: %w", name, err)
	}
	return &a, nil
}

// outdateApproval marks the component's open approval stale when this run
// (a plan of an edited file, say) plans the component from other inputs
// than the approved plan was made from. The plan lays out the component's
// work dir for those inputs, and the latest plan of the component is no
// longer the one waiting: approving it would approve what nobody looks at
// any more. A plan from the same inputs leaves the approval alone (its
// saved plan is a copy no later plan overwrites). fp is the component's
// fingerprint as the run plans it.
func (ar *approvals) outdateApproval(name, fp string) error {
	a, err := ar.openApproval(name)
	if a == nil || err != nil || a.Fingerprint == fp {
		return err
	}
	return ar.markStale(*a, fmt.Sprintf("the %s run %s planned %s from another spec, module, inputs or upstream outputs than this plan was made from",
		ar.s.kind, ar.s.run.ID, name))
}

// destroyFingerprint is the fingerprint of a destroy plan of a component
// whose fingerprint is fp: an approval of a destroy never matches an apply.
func destroyFingerprint(fp string) string { return "destroy:" + fp }

// hasOpen reports whether name may have an open approval (approvals.open).
func (ar *approvals) hasOpen(name string) bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.open[name]
}

// requestApproval keeps a copy of the plan file that cannot be overwritten
// by later plans, and records a pending approval of exactly that file.
func (ar *approvals) requestApproval(name, fp string, plan *runner.Plan) (int64, error) {
	dir := filepath.Join(ar.s.e.DataDir, "approvals", ar.s.env.Spec.TeamName, ar.s.env.Spec.EnvName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	kind := ""
	if plan.Destroying {
		kind = "-destroy" // says what the file is, in a process list or a tool's log
	}
	file := filepath.Join(dir, fmt.Sprintf("%s-%s%s%s", name, ar.s.run.ID, kind, filepath.Ext(plan.File)))
	if err := copyFile(plan.File, file); err != nil {
		return 0, fmt.Errorf("keep plan for approval: %w", err)
	}
	kept := *plan
	kept.File = file
	body, err := json.Marshal(&kept)
	if err != nil {
		return 0, err
	}
	a := &store.Approval{Env: ar.s.env.ID(), Component: name, RunID: ar.s.run.ID, Revision: ar.s.run.Revision,
		Fingerprint: fp, PlanFile: file, PlanChecksum: plan.Checksum, Plan: body,
		Status: store.ApprovalPending, CreatedAt: ar.s.e.now()}
	ar.mu.Lock()
	ar.open[name] = true
	ar.mu.Unlock()
	if err := ar.s.e.Store.CreateApproval(ar.s.db, a); err != nil {
		return 0, err
	}
	// The plan's bytes go to the store, so any replica applies them.
	if err := ar.keepPlan(a.ID, file); err != nil {
		if serr := ar.markStale(*a, "its saved plan could not be kept in the store"); serr != nil {
			return 0, errors.Join(err, serr)
		}
		return 0, err
	}
	ar.setHeld(name, heldPlan{id: a.ID, checksum: a.PlanChecksum})
	return a.ID, nil
}

// setHeld records that name waits with approval h in this run.
func (ar *approvals) setHeld(name string, h heldPlan) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.holds[name] = h
}

// heldPlan returns the approval name waits with in this run.
func (ar *approvals) heldPlan(name string) (heldPlan, bool) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	h, ok := ar.holds[name]
	return h, ok
}

func copyFile(src, dst string) error { return copyFileMode(src, dst, 0o600) }

// copyFileMode copies src to dst, created with mode.
func copyFileMode(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// keepPlan saves the plan file's bytes as approval id's saved plan.
func (ar *approvals) keepPlan(id int64, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("keep plan for approval: %w", err)
	}
	if err := ar.s.e.Store.SavePlan(ar.s.db, id, data); err != nil {
		return fmt.Errorf("keep plan for approval #%d in the store: %w", id, err)
	}
	return nil
}

func bytesSHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// shortSum is a checksum cut to what people compare by eye.
func shortSum(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}
