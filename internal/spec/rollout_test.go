package spec

import (
	"strings"
	"testing"
)

func TestRolloutParse(t *testing.T) {
	env := mustParse(t, header+app+"  rollout: {onFailure: rollback, autoApprove: true}\n")
	if r := env.Spec.Rollout; r == nil || r.OnFailure != RollbackOnFailure || !r.AutoApprove {
		t.Fatalf("rollout: %+v", r)
	}
	if got := env.Spec.OnFailure(); got != RollbackOnFailure {
		t.Errorf("OnFailure = %q", got)
	}
	// Rolling back is something an environment opts into.
	if got := mustParse(t, header+app).Spec.OnFailure(); got != NoneOnFailure {
		t.Errorf("default OnFailure = %q, want none", got)
	}
}

// Every mistake in spec.rollout is reported at its line and column.
func TestRolloutValidate(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown policy", header + app + "  rollout: {onFailure: revert}\n",
			[]string{`12:13 spec.rollout.onFailure: unknown onFailure "revert"`}},
		{"unknown field", header + app + "  rollout:\n    onFailure: pause\n    autoapprove: true\n",
			[]string{`14:5 spec.rollout.autoapprove: unknown field "autoapprove"`}},
		{"not a bool", header + app + "  rollout: {autoApprove: maybe}\n",
			[]string{`12:26 spec.rollout.autoApprove: expected true or false, found "maybe"`}},
		{"cloudknit files have no rollout", strings.Replace(header+"    - {name: a, type: terraform, module: {source: ./m}}\n  rollout: {onFailure: pause}\n", APIVersionKnit, APIVersionCloudKnit, 1),
			[]string{`8:43 spec.components[0].module.source: module folder "./m" does not exist`, `9:3 spec.rollout: rollout needs apiVersion: knit.dev/v1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parse(t, tt.src)
			wantDiags(t, ds, tt.want)
		})
	}
}
