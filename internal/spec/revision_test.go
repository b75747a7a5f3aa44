package spec

import (
	"encoding/json"
	"testing"
)

func TestFromJSONRoundTripKeepsValuesAndPaths(t *testing.T) {
	env, diags := Parse("env.yaml", t.TempDir(), []byte(`
apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: t
  envName: e
  components:
    - name: a
      type: script
      script: {apply: "true"}
      variables:
        - {name: big, value: 12345678901234567890}
        - {name: n, value: 3}
        - {name: m, value: {k: [1, "x"]}}
`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	body, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromJSON(body, "/srv/envs/env.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if back.Dir != "/srv/envs" || back.File != "/srv/envs/env.yaml" {
		t.Errorf("file %q dir %q", back.File, back.Dir)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(body) {
		t.Errorf("round trip changed the spec:\n%s\n%s", body, again)
	}
}
