package spec

import (
	"strings"
	"testing"
	"time"
)

func TestTTL(t *testing.T) {
	comp := "    - {name: a, type: script, script: {apply: x}}\n"
	withTTL := func(v string) string {
		return strings.Replace(header, "  envName: dev\n", "  envName: dev\n  ttl: "+v+"\n", 1) + comp
	}
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"valid", withTTL("72h"), nil},
		{"not a duration", withTTL("3 days"), []string{`7:3 spec.ttl: ttl "3 days" is not a duration`}},
		{"zero", withTTL("0s"), []string{`7:3 spec.ttl: ttl 0s is out of bounds (1s to 8760h0m0s)`}},
		{"negative", withTTL("-1h"), []string{`7:3 spec.ttl: ttl -1h is out of bounds (1s to 8760h0m0s)`}},
		{"over a year", withTTL("8761h"), []string{`7:3 spec.ttl: ttl 8761h is out of bounds (1s to 8760h0m0s)`}},
		{"cloudknit", strings.Replace(withTTL("1h"), "knit.dev/v1", "stable.cloudknit.io/v1", 1),
			[]string{`7:3 spec.ttl: ttl needs apiVersion: knit.dev/v1`, `9:17 spec.components[0].type: unsupported component type "script"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parse(t, tt.src)
			wantDiags(t, ds, tt.want)
		})
	}
	env := mustParse(t, withTTL("72h"))
	if got := env.Spec.TTLDuration(); got != 72*time.Hour {
		t.Fatalf("TTLDuration = %s, want 72h", got)
	}
	if got := (&EnvSpec{}).TTLDuration(); got != 0 {
		t.Fatalf("no ttl: TTLDuration = %s, want 0", got)
	}
}
