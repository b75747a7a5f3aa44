package dag

import (
	"context"
	"testing"
)

// BenchmarkBuild1000 measures building a 1000-vertex graph in 10 layers
// (three edges per vertex) with Add and Connect.
func BenchmarkBuild1000(b *testing.B) {
	for b.Loop() {
		if g := layered(10, 100); len(g.Vertices()) != 1000 {
			b.Fatal("wrong size")
		}
	}
}

// BenchmarkWalk1000 measures walker overhead: 1000 vertices in 10 layers,
// fn does nothing.
func BenchmarkWalk1000(b *testing.B) {
	g := layered(10, 100)
	ctx := context.Background()
	fn := func(context.Context, string) error { return nil }
	for b.Loop() {
		if res := g.Walk(ctx, 8, fn); !res.OK() {
			b.Fatal("walk failed")
		}
	}
}

// BenchmarkLevels1000 measures Levels on the same 1000-vertex layered DAG.
func BenchmarkLevels1000(b *testing.B) {
	g := layered(10, 100)
	for b.Loop() {
		if _, err := g.Levels(); err != nil {
			b.Fatal(err)
		}
	}
}
