package diag

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestPosString(t *testing.T) {
	for _, tt := range []struct {
		pos  Pos
		want string
	}{
		{Pos{File: "env.yaml"}, "env.yaml"},
		{Pos{File: "env.yaml", Line: 3}, "env.yaml:3"},
		{Pos{File: "env.yaml", Line: 3, Col: 7}, "env.yaml:3:7"},
	} {
		if got := tt.pos.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.pos, got, tt.want)
		}
	}
}

func TestDiagnosticString(t *testing.T) {
	for _, tt := range []struct {
		d    Diagnostic
		want string
	}{
		{
			Diagnostic{Severity: Error, Pos: Pos{File: "env.yaml", Line: 12, Col: 7}, Field: "spec.components[1].dependOn",
				Message: `unknown field "dependOn"`, Hint: `did you mean "dependsOn"?`},
			"env.yaml:12:7: spec.components[1].dependOn: unknown field \"dependOn\"\n    hint: did you mean \"dependsOn\"?",
		},
		{
			Diagnostic{Severity: Warning, Pos: Pos{File: "env.yaml", Line: 3, Col: 3}, Field: "spec.workspace", Message: "not yet supported"},
			"env.yaml:3:3: warning: spec.workspace: not yet supported",
		},
		{
			Diagnostic{Severity: Error, Pos: Pos{File: "env.yaml", Line: 5}, Message: "invalid YAML: did not find expected key"},
			"env.yaml:5: invalid YAML: did not find expected key",
		},
	} {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
		}
	}
}

func TestSortIsStable(t *testing.T) {
	at := func(file string, line, col int, field, msg string) Diagnostic {
		return Diagnostic{Severity: Error, Pos: Pos{File: file, Line: line, Col: col}, Field: field, Message: msg}
	}
	ds := Diagnostics{
		at("b.yaml", 1, 1, "", "x"),
		at("a.yaml", 9, 1, "", "x"),
		at("a.yaml", 2, 5, "", "x"),
		at("a.yaml", 2, 3, "spec.teamName", "z"),
		at("a.yaml", 2, 3, "spec.envName", "z"),
		at("a.yaml", 2, 3, "spec.envName", "a"),
	}
	ds.Sort()
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %s %s", d.Pos, d.Field, d.Message))
	}
	want := []string{
		"a.yaml:2:3 spec.envName a",
		"a.yaml:2:3 spec.envName z",
		"a.yaml:2:3 spec.teamName z",
		"a.yaml:2:5  x",
		"a.yaml:9:1  x",
		"b.yaml:1:1  x",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sorted:\n%q\nwant\n%q", got, want)
	}
}

func TestErrAndFrom(t *testing.T) {
	warn := Diagnostic{Severity: Warning, Pos: Pos{File: "f"}, Message: "w"}
	e1 := Diagnostic{Severity: Error, Pos: Pos{File: "f", Line: 1}, Message: "one"}
	e2 := Diagnostic{Severity: Error, Pos: Pos{File: "f", Line: 2}, Message: "two"}

	if err := (Diagnostics{warn}).Err(); err != nil {
		t.Errorf("warnings alone: Err() = %v, want nil", err)
	}
	if (Diagnostics{warn}).HasErrors() || !(Diagnostics{warn, e1}).HasErrors() {
		t.Error("HasErrors is wrong")
	}
	ds := Diagnostics{warn, e1, e2}
	if got := len(ds.Errors()); got != 2 {
		t.Errorf("Errors() has %d, want 2", got)
	}
	if got := len(ds.Warnings()); got != 1 {
		t.Errorf("Warnings() has %d, want 1", got)
	}

	err := fmt.Errorf("load: %w", ds.Err())
	got, ok := From(err)
	if !ok || len(got) != 2 || got[0].Message != "one" {
		t.Fatalf("From(wrapped) = %v, %v; want the two errors", got, ok)
	}
	var el *ErrorList
	if !errors.As(err, &el) {
		t.Fatal("errors.As finds no *ErrorList")
	}
	if want := "2 problems:\nf:1: one\nf:2: two"; el.Error() != want {
		t.Errorf("Error() = %q, want %q", el.Error(), want)
	}
	if want := "f:1: one"; (Diagnostics{e1}).Err().Error() != want {
		t.Errorf("one error renders as %q, want %q", (Diagnostics{e1}).Err(), want)
	}
	if _, ok := From(errors.New("plain")); ok {
		t.Error("From(plain error) reports diagnostics")
	}
}

func TestJSONShape(t *testing.T) {
	d := Diagnostic{Severity: Error, Pos: Pos{File: "env.yaml", Line: 4, Col: 2}, Field: "spec", Message: "m", Hint: "h"}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"severity":"error","pos":{"file":"env.yaml","line":4,"column":2},"field":"spec","message":"m","hint":"h"}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant %s", b, want)
	}
}
