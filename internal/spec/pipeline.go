package spec

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/schedule"
)

// KindPipeline is the kind of a promotion pipeline file (knit.dev/v1):
// ordered stages, each an environment, that a release moves through.
const KindPipeline = "Pipeline"

// Pipeline is a promotion pipeline: a release enters Stages[0] from a
// commit and moves to each next stage once the one before applied it,
// verified it and soaked it, and the next stage's windows and approvals
// allow it.
type Pipeline struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   Metadata     `json:"metadata"`
	Spec       PipelineSpec `json:"spec"`
	// File is what positions call the file.
	File string `json:"-"`
	pos  map[string]diag.Pos
}

// PipelineSpec is a pipeline's stages, in order.
type PipelineSpec struct {
	// TeamName is the team whose operators promote and approve.
	TeamName string  `json:"teamName"`
	Stages   []Stage `json:"stages"`
}

// Stage is one environment of a pipeline.
type Stage struct {
	Name string `json:"name"`
	// File is the stage's environment file, relative to the pipeline
	// file's folder inside the repository.
	File string `json:"file"`
	// Soak is how long a release stays verified here before it may move
	// on (a Go duration; empty: no soak).
	Soak string `json:"soak,omitempty"`
	// Windows gate entering this stage: when a release may be applied here.
	Windows *Windows `json:"windows,omitempty"`
	// Approval gates entering this stage on people.
	Approval *StageApproval `json:"approval,omitempty"`
	// ApplyStageChanges is what a merged commit that changes this stage's
	// own file does: StageChangesImmediate applies it to the stage's
	// current release at once, StageChangesPending waits for approvals
	// like a promotion. Empty: immediate, pending for the last stage.
	ApplyStageChanges string `json:"applyStageChanges,omitempty"`
	StageFleet
}

// What a change of a stage's own file does (Stage.ApplyStageChanges).
const (
	StageChangesImmediate = "immediate" // applied to the stage's current release at once
	StageChangesPending   = "pending"   // waits, Pending with its diff, for approvals
)

// StageChangesWait reports whether a change of stage i's own file waits
// for approvals (pending) rather than applying at once: as the stage
// says, else pending for the last stage only.
func (p *Pipeline) StageChangesWait(i int) bool {
	if i < 0 || i >= len(p.Spec.Stages) {
		return false
	}
	switch p.Spec.Stages[i].ApplyStageChanges {
	case StageChangesPending:
		return true
	case StageChangesImmediate:
		return false
	}
	return i == len(p.Spec.Stages)-1
}

// Windows are when a release may enter a stage: during any Allow window
// (none listed: always) and no Deny window (deny wins).
type Windows struct {
	Allow []Window `json:"allow,omitempty"`
	Deny  []Window `json:"deny,omitempty"`
}

// Window opens at each activation of its cron Schedule (minutes, in UTC)
// and stays open for Duration.
type Window struct {
	Schedule string `json:"schedule"`
	Duration string `json:"duration"`
}

// StageApproval is how many people must approve a release entering a
// stage; with RequireOtherApprover the release's author does not count.
type StageApproval struct {
	Required             int  `json:"required"`
	RequireOtherApprover bool `json:"requireOtherApprover,omitempty"`
}

var stageName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ParsePipeline decodes and validates a pipeline file; every problem is a
// diagnostic at its file:line:col.
func ParsePipeline(name string, data []byte) (*Pipeline, diag.Diagnostics) {
	root, _, err := firstDocument(data)
	if err != nil {
		return nil, diag.Diagnostics{syntaxError(name, data, err)}
	}
	d := newDecoder(name, root)
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "", "a pipeline file is a mapping that starts with apiVersion: knit.dev/v1 and kind: Pipeline",
			"expected a mapping, found %s", kindName(root))
		return nil, d.diags
	}
	p := &Pipeline{File: name}
	d.pos[""] = d.at(root)
	d.mapping(root, "", false, map[string]field{
		"apiVersion": d.str(&p.APIVersion),
		"kind":       d.str(&p.Kind),
		"metadata":   d.metadata(&p.Metadata),
		"spec": func(v *yaml.Node, at string) {
			d.mapping(v, at, false, map[string]field{
				"teamName": d.str(&p.Spec.TeamName),
				"stages": func(v *yaml.Node, at string) {
					d.sequence(v, at, func(_ int, item *yaml.Node, at string) {
						var s Stage
						d.mapping(item, at, false, d.stageFields(&s))
						p.Spec.Stages = append(p.Spec.Stages, s)
					})
				},
			})
		},
	})
	p.pos = d.pos
	ds := append(d.diags, checkPipeline(p, d.pos)...)
	ds.Sort()
	return p, ds
}

func (d *decoder) stageFields(s *Stage) map[string]field {
	windows := func(dst *[]Window) field {
		return func(v *yaml.Node, at string) {
			d.sequence(v, at, func(_ int, item *yaml.Node, at string) {
				var w Window
				d.mapping(item, at, false, map[string]field{"schedule": d.str(&w.Schedule), "duration": d.str(&w.Duration)})
				*dst = append(*dst, w)
			})
		}
	}
	return map[string]field{
		"name":              d.str(&s.Name),
		"file":              d.str(&s.File),
		"soak":              d.str(&s.Soak),
		"applyStageChanges": d.str(&s.ApplyStageChanges),
		"selector":          d.stageSelector(&s.Selector),
		"waves":             d.stageWaves(&s.Waves),
		"windows": func(v *yaml.Node, at string) {
			s.Windows = &Windows{}
			d.mapping(v, at, false, map[string]field{"allow": windows(&s.Windows.Allow), "deny": windows(&s.Windows.Deny)})
		},
		"approval": func(v *yaml.Node, at string) {
			s.Approval = &StageApproval{}
			d.mapping(v, at, false, map[string]field{
				"required":             d.integer(&s.Approval.Required),
				"requireOtherApprover": d.boolean(&s.Approval.RequireOtherApprover),
			})
		},
	}
}

// checkPipeline reports every problem of a decoded pipeline at once.
func checkPipeline(p *Pipeline, pos map[string]diag.Pos) diag.Diagnostics {
	var ds diag.Diagnostics
	bad := func(field, msg, hint string) {
		ds = append(ds, diag.Diagnostic{Severity: diag.Error, Pos: nearestIn(pos, field, p.File), Field: field, Message: msg, Hint: hint})
	}
	if p.APIVersion != APIVersionKnit {
		bad("apiVersion", fmt.Sprintf("a pipeline needs apiVersion: %s, found %s", APIVersionKnit, quote(p.APIVersion)), "")
	}
	if p.Kind != KindPipeline {
		bad("kind", fmt.Sprintf("expected kind: %s, found %s", KindPipeline, quote(p.Kind)), "")
	}
	if !stageName.MatchString(p.Metadata.Name) {
		bad("metadata.name", fmt.Sprintf("pipeline name %s is not a name", quote(p.Metadata.Name)), "lower-case letters, digits and -, e.g. web")
	}
	if p.Spec.TeamName == "" {
		bad("spec.teamName", "missing required field", "the team whose operators promote, e.g. teamName: payment")
	}
	if len(p.Spec.Stages) == 0 {
		bad("spec.stages", "a pipeline needs at least one stage", "list stages in order: dev, staging, prod")
	}
	seen := map[string]bool{}
	for i, s := range p.Spec.Stages {
		at := fmt.Sprintf("spec.stages[%d]", i)
		switch {
		case !stageName.MatchString(s.Name):
			bad(at+".name", fmt.Sprintf("stage name %s is not a name", quote(s.Name)), "lower-case letters, digits and -, e.g. staging")
		case seen[s.Name]:
			bad(at+".name", fmt.Sprintf("stage %q is listed twice", s.Name), "give each stage its own name")
		}
		seen[s.Name] = true
		if s.File == "" && s.Selector == nil {
			bad(at+".file", "missing required field", "the stage's environment file, e.g. file: stages/"+s.Name+".yaml, or a selector of environments with waves")
		} else if path.IsAbs(s.File) {
			bad(at+".file", fmt.Sprintf("%s is an absolute path", quote(s.File)), "write it relative to the pipeline file's folder")
		}
		checkStageFleet(i, s, bad)
		if s.Soak != "" {
			if d, err := time.ParseDuration(s.Soak); err != nil || d < 0 {
				bad(at+".soak", fmt.Sprintf("%s is not a duration", quote(s.Soak)), "e.g. 30m, 1h")
			}
		}
		if s.Windows != nil {
			for kind, ws := range map[string][]Window{"allow": s.Windows.Allow, "deny": s.Windows.Deny} {
				for j, w := range ws {
					wat := fmt.Sprintf("%s.windows.%s[%d]", at, kind, j)
					hint := `a cron expression in UTC, e.g. "0 9 * * 1-5"`
					if _, err := schedule.Parse(w.Schedule); w.Schedule == "" {
						bad(wat+".schedule", "missing required field", hint)
					} else if strings.HasPrefix(w.Schedule, "@every") {
						bad(wat+".schedule", "a window opens at cron times; @every has none", hint)
					} else if err != nil {
						bad(wat+".schedule", fmt.Sprintf("schedule %s: %v", quote(w.Schedule), err), hint)
					}
					if d, err := time.ParseDuration(w.Duration); err != nil || d <= 0 {
						bad(wat+".duration", fmt.Sprintf("%s is not a positive duration", quote(w.Duration)), "how long the window stays open, e.g. 8h")
					}
				}
			}
		}
		if v := s.ApplyStageChanges; v != "" && v != StageChangesImmediate && v != StageChangesPending {
			hint := "immediate (apply a change of the stage's file at once) or pending (wait for approvals)"
			if m := suggest(v, []string{StageChangesImmediate, StageChangesPending}); m != "" {
				hint = m + "; " + hint
			}
			bad(at+".applyStageChanges", fmt.Sprintf("%s is not immediate or pending", quote(v)), hint)
		}
		if s.Approval != nil && (s.Approval.Required < 0 || s.Approval.Required > 10) {
			bad(at+".approval.required", fmt.Sprintf("%d is out of range", s.Approval.Required), "a whole number from 0 to 10")
		}
		if i == 0 && (s.Approval != nil && s.Approval.Required > 0 || s.Windows != nil) {
			bad(at, "a release enters the first stage from a commit: it has no windows or approvals", "gate the stages after it")
		}
	}
	return ds
}

// SoakDuration is the stage's soak (zero when none or invalid).
func (s Stage) SoakDuration() time.Duration {
	d, _ := time.ParseDuration(s.Soak)
	return d
}

// Open reports whether ws lets a release in at t: inside an allow window
// (or none listed) and in no deny window.
func (ws *Windows) Open(t time.Time) bool {
	if ws == nil {
		return true
	}
	for _, w := range ws.Deny {
		if w.covers(t) {
			return false
		}
	}
	if len(ws.Allow) == 0 {
		return true
	}
	for _, w := range ws.Allow {
		if w.covers(t) {
			return true
		}
	}
	return false
}

// Words say ws for people, one a window: `open "0 9 * * 1-5" for 8h UTC`,
// `closed "0 12 * * *" for 1h UTC`; nil when ws is nil (always open).
func (ws *Windows) Words() []string {
	if ws == nil {
		return nil
	}
	var out []string
	for _, l := range []struct {
		what string
		ws   []Window
	}{{"open", ws.Allow}, {"closed", ws.Deny}} {
		for _, w := range l.ws {
			out = append(out, fmt.Sprintf("%s %q for %s UTC", l.what, w.Schedule, w.Duration))
		}
	}
	return out
}

// NextChange is the first time after t, within a week, at which Open(t)
// may change (a window opening or closing); zero when none.
func (ws *Windows) NextChange(t time.Time) time.Time {
	if ws == nil {
		return time.Time{}
	}
	var best time.Time
	for _, w := range append(append([]Window{}, ws.Allow...), ws.Deny...) {
		s, err := schedule.Parse(w.Schedule)
		if err != nil {
			continue
		}
		for _, c := range []time.Time{s.Next(t.UTC()), w.end(t)} {
			if !c.IsZero() && c.After(t) && (best.IsZero() || c.Before(best)) {
				best = c
			}
		}
	}
	return best
}

// covers reports whether the window is open at t: a start s with
// s <= t < s+duration.
func (w Window) covers(t time.Time) bool { return !w.end(t).IsZero() }

// end is when the window open at t closes (zero when it is not open).
func (w Window) end(t time.Time) time.Time {
	s, err := schedule.Parse(w.Schedule)
	d, derr := time.ParseDuration(w.Duration)
	if err != nil || derr != nil || d <= 0 {
		return time.Time{}
	}
	start := s.Next(t.UTC().Add(-d))
	if start.IsZero() || start.After(t) {
		return time.Time{}
	}
	return start.Add(d)
}
