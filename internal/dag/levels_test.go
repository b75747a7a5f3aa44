package dag

import (
	"errors"
	"reflect"
	"testing"
)

func TestLevels(t *testing.T) {
	tests := []struct {
		name  string
		edges []string
		want  [][]string
	}{
		{"empty", nil, nil},
		{"single", []string{"a"}, [][]string{{"a"}}},
		{"diamond", []string{"a>b", "a>c", "b>d", "c>d"}, [][]string{{"a"}, {"b", "c"}, {"d"}}},
		{"deepest dependency wins", []string{"a>b", "b>c", "a>c", "d"}, [][]string{{"a", "d"}, {"b"}, {"c"}}},
		{"independent chains", []string{"z>y", "y>x", "b>a"}, [][]string{{"b", "z"}, {"a", "y"}, {"x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := build(tt.edges...).Levels()
			if err != nil {
				t.Fatalf("Levels error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Levels = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLevelsCycle(t *testing.T) {
	g := build("a>b", "b>c", "c>a", "x>x", "c>d")
	levels, err := g.Levels()
	if levels != nil {
		t.Errorf("levels = %v, want nil", levels)
	}
	var ce *CycleError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *CycleError", err)
	}
	if want := [][]string{{"a", "b", "c"}, {"x"}}; !reflect.DeepEqual(ce.Cycles, want) {
		t.Errorf("Cycles = %v, want %v", ce.Cycles, want)
	}
	if want := "cycle: a → b → c → a; cycle: x → x"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
