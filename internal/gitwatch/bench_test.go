package gitwatch_test

import (
	"fmt"
	"testing"

	"knit.dev/knit/internal/gitwatch"
)

// BenchmarkPoll measures a poll of a repository with 100 environment files
// over file://, so what it counts is git's local work and knit's, not a
// network: a first poll (clone, list, read all files, write the tree), a
// poll that finds nothing new, and polls that find one or ten commits, each
// changing one file.
//
// Measured on 2 shared cores (load average 9), -benchtime 10x -count 5,
// ranges of ms per poll: first 82–147, nothing new 15–18, one commit 79–100,
// ten commits 616–828. A poll that finds nothing runs two git commands
// (fetch, rev-parse); each new commit costs about 60–80 ms, nearly all of
// it read-tree writing its tree of ~100 files (a plain `git archive | tar
// -x` of that tree takes as long on this disk).
func BenchmarkPoll(b *testing.B) {
	files := map[string]string{"modules/app/main.tf": "# module\n"}
	for i := range 100 {
		files[fmt.Sprintf("envs/team-%02d/env-%03d.yaml", i%10, i)] = fmt.Sprintf(
			"name: env-%03d\ncomponents:\n  app:\n    module: ../../modules/app\n    inputs:\n      replicas: %d\n", i, i%3+1)
	}
	r := newRemote(b, files)

	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			w := newWatcher(b, gitwatch.Config{URL: r.url, Path: "envs", CacheDir: b.TempDir()})
			if got := poll(b, w, ""); len(got[0].Changes) != 100 {
				b.Fatalf("%d changes", len(got[0].Changes))
			}
		}
	})

	w := newWatcher(b, gitwatch.Config{URL: r.url, Path: "envs"})
	head := poll(b, w, "")[0].Hash
	b.Run("nothing-new", func(b *testing.B) {
		for b.Loop() {
			if got := poll(b, w, head); len(got) != 0 {
				b.Fatalf("%d commits", len(got))
			}
		}
	})

	n := 0
	for _, commits := range []int{1, 10} {
		b.Run(fmt.Sprintf("%d-commits", commits), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				var next string
				for range commits {
					n++
					next = r.commit("bump", map[string]string{"envs/team-00/env-000.yaml": fmt.Sprintf("rev: %d\n", n)})
				}
				b.StartTimer()
				got := poll(b, w, head)
				if len(got) != commits || got[commits-1].Hash != next || len(got[0].Changes) != 1 {
					b.Fatalf("got %+v", got)
				}
				head = next
			}
		})
	}
}
