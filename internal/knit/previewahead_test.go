package knit_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// aheadRunner is the fake with runner.PlaceholderPlanner; replace makes
// its placeholder plans replace what the real plan creates.
type aheadRunner struct {
	*fake.Runner
	replace bool
}

func (r aheadRunner) PlanPlaceholders(ctx context.Context, c runner.Component, in runner.Inputs, unknown []string, opts runner.PlanOptions) (*runner.Plan, error) {
	full := maps.Clone(in)
	for _, n := range unknown {
		full[n] = runner.PlaceholderText(n)
	}
	p, err := r.Plan(ctx, c, full, opts)
	if err == nil && r.replace {
		p.Add, p.Destroy = 1, 1
		p.Resources = []runner.ResourceChange{{Address: "fake." + c.Def.Name, Action: runner.ActionReplace}}
	}
	return p, err
}

// aheadDoc is a, whose id is known only after apply, and b taking it.
const aheadDoc = `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: NAME
  autoApprove: true
  components:
    - {name: a, type: script, script: {apply: "true"}, outputs: [{name: id}]}
    - {name: b, type: script, script: {apply: "true"}, variables: [{name: parent, valueFrom: a.id}]}
`

func openAhead(t *testing.T, replace bool) *knit.Knit {
	t.Helper()
	r := &fake.Runner{UnknownUntilApply: map[string]bool{"a": true}, OutputsFor: func(name string, _ runner.Inputs) runner.Outputs {
		if name == "a" {
			return runner.Outputs{"id": {Value: "a-1"}}
		}
		return nil
	}}
	k, err := adapters.Open(context.Background(), adapters.Config{Config: knit.Config{DataDir: t.TempDir(),
		Runners: map[string]runner.Runner{spec.TypeScript: aheadRunner{r, replace}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// A new environment's b takes a's id, known only after a is applied: the
// preview plans b ahead with a placeholder (+1, not "known after apply"),
// and the apply that does what it showed is linked to it
// (preview-applied); one whose placeholder plan showed otherwise (a
// replace, where the apply creates) records preview-differed, naming b,
// both plans and both checksums.
func TestAnApplyIsLinkedToAPreviewPlannedAheadOrSaysWhatDiffered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace bool
		action  string
		total   string
		detail  []string
	}{
		{"as previewed", false, engine.AuditPreviewApplied, "~0 +2 -0", []string{"applied the plan previewed on branch feature/x"}},
		{"otherwise", true, engine.AuditPreviewDiffered, "~0 +2 -1", []string{"b: previewed ~0 +1 -1 (planned ahead with placeholders for parent), applied ~0 +1 -0", "preview checksum "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			k := openAhead(t, tc.replace)
			env := parse(t, strings.Replace(aheadDoc, "NAME", "dev", 1))
			p, err := knit.NewPreview(k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/x", Commit: previewCommit, Change: store.PreviewCreate, Env: env}).Run(ctx)
			if err != nil || p.Status != store.PreviewPlanned || len(p.Components) != 2 {
				t.Fatalf("preview = %+v, %v", p, err)
			}
			b := p.Components[1]
			if b.Name != "b" || b.Status != "planned" || b.Add != 1 || strings.Join(b.PlannedAhead, ",") != "parent" || b.Digest == "" {
				t.Errorf("b previews %+v, want +1 planned ahead for parent", b)
			}
			if md := knit.PreviewMarkdown("feature/x", previewCommit, []view.Preview{p}); !strings.Contains(md, "| **total** | | "+tc.total+" |") {
				t.Errorf("Markdown:\n%s", md)
			}
			res := apply(t, k, env, "alice", true)
			if res.Status != store.StatusSucceeded {
				t.Fatalf("apply: %+v", res)
			}
			page, err := knit.NewRecords(k).Audit(ctx, knit.AuditFilter{Env: "shop/dev"})
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, a := range page.Items {
				if a.Action == engine.AuditPreviewApplied || a.Action == engine.AuditPreviewDiffered {
					found = append(found, a.Action+": "+a.Detail)
				}
			}
			if len(found) != 1 || !strings.HasPrefix(found[0], tc.action+": ") || !strings.Contains(found[0], p.Checksum) {
				t.Fatalf("audit %v, want one %s naming the preview's checksum %s", found, tc.action, p.Checksum)
			}
			for _, want := range tc.detail {
				if !strings.Contains(found[0], want) {
					t.Errorf("audit %q lacks %q", found[0], want)
				}
			}
		})
	}
}
