package e2e

import (
	"strings"
	"testing"
)

// tornDownFile is an environment file with spec.teardown: true.
func tornDownFile(file string) string {
	return strings.Replace(file, "  autoApprove: true\n", "  autoApprove: true\n  teardown: true\n", 1)
}

// Issue 41: one commit that tears down a producer and the environments
// reading it converges in dependency order: the consumers' teardowns end
// before the producer's starts, none is dropped.
func TestGitOpsTearsAProducerDownAfterItsConsumersInOneCommit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/platform.yaml":           producerFile("v1"),
		"envs/web.yaml":                readerFile("shop", "web"),
		"envs/api.yaml":                readerFile("shop", "api"),
	})
	s := w.startServer(gitServerArgs(repo)...)
	for _, env := range []string{"platform/eu-1", "shop/web", "shop/api"} {
		s.eventually(env+" applied", func() bool { e, _ := s.env(env); return e.Status == "provisioned" })
	}
	repo.commit("retire eu-1 and what reads it", map[string]string{
		"envs/platform.yaml": tornDownFile(producerFile("v1")),
		"envs/web.yaml":      tornDownFile(readerFile("shop", "web")),
		"envs/api.yaml":      tornDownFile(readerFile("shop", "api")),
	})
	for _, env := range []string{"shop/web", "shop/api", "platform/eu-1"} {
		s.eventually(env+" torn down", func() bool { return s.tornDown(env) })
	}
	producer := s.lastRun("platform/eu-1")
	for _, env := range []string{"shop/web", "shop/api"} {
		if c := s.lastRun(env); c.Kind != "teardown" || !c.FinishedAt.Before(producer.StartedAt) {
			t.Errorf("%s's teardown (%+v) did not end before the producer's started (%+v)", env, c, producer)
		}
	}
	for _, r := range s.runs("platform/eu-1") {
		if r.Status == "refused" {
			t.Errorf("a refused run of the producer: %+v", r)
		}
	}
	if strings.Contains(s.logText(), "change is dropped") {
		t.Errorf("a change was dropped:\n%s", s.log)
	}
}
