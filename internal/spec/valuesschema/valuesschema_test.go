package valuesschema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"knit.dev/knit/internal/spec"
)

const schema = `{"type": "object", "properties": {
	"replicas": {"type": "integer"},
	"db": {"type": "object", "properties": {"port": {"type": "integer"}}},
	"image": {"type": "object", "additionalProperties": false, "properties": {"tag": {"type": "string"}}}}}`

// TestServeChecksEachChartInOrder: one request, every chart's verdict in
// its order; what a valueFrom sets (unknown) is left out; a schema that
// refers elsewhere refuses nothing; one that is not JSON says so.
func TestServeChecksEachChartInOrder(t *testing.T) {
	checks := []spec.SchemaCheck{
		{Schema: json.RawMessage(schema), Values: json.RawMessage(`{"replicas": "three", "image": {"tagg": "x"}, "db": {"port": "later"}}`),
			Unknown: [][]string{{"db", "port"}}},
		{Schema: json.RawMessage(schema), Values: json.RawMessage(`{"replicas": 3}`)},
		{Schema: json.RawMessage(`{"$ref": "https://example.invalid/other.json"}`), Values: json.RawMessage(`{"x": 1}`)},
	}
	req, _ := json.Marshal(checks)
	var out bytes.Buffer
	if err := Serve(bytes.NewReader(req), &out); err != nil {
		t.Fatal(err)
	}
	var got [][]spec.SchemaViolation
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d answers for 3 checks: %s", len(got), out.String())
	}
	var at []string
	for _, v := range got[0] {
		at = append(at, strings.Join(v.At, "."))
	}
	if strings.Join(at, " ") != "image replicas" {
		t.Errorf("violations of the first chart at %q, want image and replicas (db.port is unknown)", at)
	}
	if len(got[1]) != 0 {
		t.Errorf("valid values refused: %+v", got[1])
	}
	if len(got[2]) != 0 {
		t.Errorf("a schema that refers elsewhere refused: %+v", got[2])
	}
	if bad := Check(spec.SchemaCheck{Schema: []byte("{"), Values: []byte("{}")}); len(bad) != 1 || !strings.Contains(bad[0].Message, "not JSON") {
		t.Errorf("a schema that is not JSON: %+v", bad)
	}
}

func TestServeRefusesARequestThatIsNotJSON(t *testing.T) {
	if err := Serve(strings.NewReader("nope"), &bytes.Buffer{}); err == nil {
		t.Fatal("no error")
	}
}
