package gitops

import (
	"strings"
	"testing"
)

// TestOwnersAreCodeownersStyle: a folder/** owns everything below it, a
// pattern matches one path segment per *, the last matching rule wins,
// and a rule without path or team, or with a bad pattern, is refused.
func TestOwnersAreCodeownersStyle(t *testing.T) {
	owners := []Owner{{Path: "envs/**", Team: "platform"}, {Path: "envs/data/**", Team: "data"}, {Path: "envs/pay/*.yaml", Team: "pay"}}
	for p, want := range map[string]string{
		"envs/data/warehouse.yaml":      "data",
		"envs/data/deep/er/x.yaml":      "data",
		"envs/pay/web.yaml":             "pay",
		"envs/pay/sub/web.yaml":         "platform",
		"envs/dataset.yaml":             "platform",
		"other/data/x.yaml":             "",
		"envs":                          "",
		"envs/data":                     "platform",
		"envs/data/../pay/x.yaml":       "data", // git never names a path so; matched as written
		"envs/pay/web.yaml.bak":         "platform",
		"envs/data/warehouse.yaml/deep": "data",
	} {
		if got := ownerOf(owners, p); got != want {
			t.Errorf("owner of %s: %q, want %q", p, got, want)
		}
	}
	for _, bad := range [][]Owner{{{Path: "", Team: "x"}}, {{Path: "envs/**", Team: ""}}, {{Path: "envs/[", Team: "x"}}, {{Path: "envs/**", Team: "a/b"}}} {
		if err := CheckOwners(bad); err == nil || !strings.Contains(err.Error(), "owners[0]") {
			t.Errorf("CheckOwners(%+v) = %v, want an error naming owners[0]", bad, err)
		}
	}
	if err := CheckOwners(owners); err != nil {
		t.Errorf("CheckOwners of good rules: %v", err)
	}
}
