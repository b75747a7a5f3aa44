package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"knit.dev/knit/internal/store"
)

// AuditPreviewApplied is the audit action an apply records when the plan
// it applied is the one a branch's preview showed: the trail links the
// preview (branch, commit) and the apply (run, revision).
const AuditPreviewApplied = "preview-applied"

// AuditPreviewDiffered is the audit action an apply records when it
// applied a branch's previewed change but not the plan the preview
// showed: its detail names each component whose plan differs, with the
// preview's checksum and the applied one.
const AuditPreviewDiffered = "preview-differed"

// previewedComponent is what the link reads of a preview's component (the
// library records view.PreviewComponent; these are its JSON names).
type previewedComponent struct {
	Name         string   `json:"name"`
	Digest       string   `json:"digest"`
	PlannedAhead []string `json:"plannedAhead"`
	Add          int      `json:"add"`
	Change       int      `json:"change"`
	Destroy      int      `json:"destroy"`
}

// previewMatch is how an apply compares with one preview.
type previewMatch struct {
	// checksum is the apply's checksum as the preview computed its own:
	// the AheadDigest of each component the preview planned ahead.
	checksum string
	// same: every component the preview planned exactly (not ahead) and
	// saw change has the apply's digest: the apply carried the
	// preview's change out, whatever its plans ahead showed.
	same bool
	// differs says, per component, how the apply's plan differs.
	differs []string
}

// linkPreview, at the end of an apply (or teardown) about to succeed,
// records in the audit trail the preview whose plan it applied, if any:
// the newest planned preview of the environment with the run's checksum,
// or, for a preview that planned components ahead with placeholders, the
// newest whose checksum the apply's plans give when compared as the
// preview made them. An apply that carried out a preview's change (every
// component the preview planned exactly has the apply's digest) but not
// what its plans ahead showed records what differed instead.
func (pv *previews) linkPreview() error {
	if (pv.s.kind != KindApply && pv.s.kind != KindTeardown) || pv.s.result.Checksum == "" {
		return nil
	}
	ps, err := pv.s.e.Store.PreviewsByChecksum(pv.s.db, pv.s.env.ID(), pv.s.result.Checksum)
	if err != nil {
		return fmt.Errorf("find the preview of the applied plan: %w", err)
	}
	if len(ps) > 0 {
		return pv.auditLink(ps[0], "")
	}
	recent, err := pv.s.e.Store.ListPreviews(pv.s.db, store.PreviewFilter{Env: pv.s.env.ID(), Limit: 50})
	if err != nil {
		return fmt.Errorf("find the preview of the applied plan: %w", err)
	}
	var differed *store.Preview
	var differs []string
	for i, p := range recent {
		if p.Status != store.PreviewPlanned || p.Checksum == "" {
			continue
		}
		m, ok := pv.compare(p)
		switch {
		case ok && m.checksum == p.Checksum:
			return pv.auditLink(p, m.checksum)
		case ok && m.same && differed == nil:
			differed, differs = &recent[i], m.differs
		}
	}
	if differed == nil {
		return nil
	}
	return pv.auditDiffered(*differed, differs)
}

// compare compares the apply's components with preview p's (ok false: p
// planned nothing ahead, or its components cannot be read; an exact
// preview matches by checksum alone).
func (pv *previews) compare(p store.Preview) (previewMatch, bool) {
	var comps []previewedComponent
	if err := json.Unmarshal(p.Components, &comps); err != nil {
		return previewMatch{}, false
	}
	shown := map[string]previewedComponent{}
	ahead := false
	for _, c := range comps {
		shown[c.Name] = c
		ahead = ahead || len(c.PlannedAhead) > 0
	}
	if !ahead {
		return previewMatch{}, false
	}
	m := previewMatch{}
	applied := map[string]*ComponentResult{}
	as := make([]*ComponentResult, 0, len(pv.s.result.Components))
	exact := 0
	for _, cr := range pv.s.result.Components {
		applied[cr.Name] = cr
		c := *cr
		if pc, ok := shown[cr.Name]; ok && len(pc.PlannedAhead) > 0 {
			c.Digest = AheadDigest(cr.Plan)
		}
		as = append(as, &c)
		if pc := shown[c.Name]; pc.Digest != c.Digest {
			m.differs = append(m.differs, differsText(c.Name, pc, cr))
		}
	}
	m.same = true
	for _, pc := range comps {
		if _, ok := applied[pc.Name]; !ok && pc.Digest != "" {
			m.differs = append(m.differs, fmt.Sprintf("%s: previewed %s, not applied", pc.Name, countsOf(pc.Add, pc.Change, pc.Destroy)))
		}
		if len(pc.PlannedAhead) == 0 && pc.Digest != "" {
			exact++
			cr := applied[pc.Name]
			m.same = m.same && cr != nil && cr.Digest == pc.Digest
		}
	}
	m.same = m.same && exact > 0
	m.checksum = PlanChecksum(as)
	sort.Strings(m.differs)
	return m, true
}

// differsText says how component name's applied plan (cr) differs from
// the preview's (pc).
func differsText(name string, pc previewedComponent, cr *ComponentResult) string {
	add, change, destroy := 0, 0, 0
	if cr.Plan != nil {
		add, change, destroy = cr.Plan.Add, cr.Plan.Change, cr.Plan.Destroy
	}
	how := "planned exactly"
	if len(pc.PlannedAhead) > 0 {
		how = "planned ahead with placeholders for " + strings.Join(pc.PlannedAhead, ", ")
	}
	if pc.Name == "" {
		how = "not in the preview"
	}
	return fmt.Sprintf("%s: previewed %s (%s), applied %s", name, countsOf(pc.Add, pc.Change, pc.Destroy), how, countsOf(add, change, destroy))
}

func countsOf(add, change, destroy int) string {
	return fmt.Sprintf("~%d +%d -%d", change, add, destroy)
}

// auditLink records that the apply applied preview p's plan; asPreviewed,
// when set, is the apply's checksum as the preview computed its own (it
// planned components ahead with placeholders).
func (pv *previews) auditLink(p store.Preview, asPreviewed string) error {
	pv.s.result.Preview = &PreviewRef{Branch: p.Branch, Commit: p.Commit, Checksum: p.Checksum}
	detail := fmt.Sprintf("applied the plan previewed on branch %s at commit %s: checksum %s", p.Branch, p.Commit, p.Checksum)
	if asPreviewed != "" {
		detail += fmt.Sprintf(" (its plans ahead, made with placeholders, did what the apply did; the apply's own checksum is %s)", pv.s.result.Checksum)
	}
	return pv.audit(AuditPreviewApplied, p, detail)
}

// auditDiffered records that the apply carried out preview p's change
// but not the plan p showed, and how.
func (pv *previews) auditDiffered(p store.Preview, differs []string) error {
	differs = slices.Compact(differs)
	detail := fmt.Sprintf("applied the change previewed on branch %s at commit %s, but not the plan it showed: %s; preview checksum %s, applied %s",
		p.Branch, p.Commit, strings.Join(differs, "; "), p.Checksum, pv.s.result.Checksum)
	return pv.audit(AuditPreviewDiffered, p, detail)
}

func (pv *previews) audit(action string, p store.Preview, detail string) error {
	err := pv.s.e.Store.AppendAudit(pv.s.db, store.AuditEvent{Env: pv.s.env.ID(), Actor: pv.s.opts.Actor, Action: action,
		Revision: pv.s.run.Revision, RunID: pv.s.run.ID, Reason: "preview " + p.Branch + "@" + shortCommit(p.Commit),
		Detail: detail, Time: pv.s.e.now()})
	if err != nil {
		return fmt.Errorf("record the preview the apply applied: %w", err)
	}
	return nil
}
