package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"knit.dev/knit/internal/kube"
)

// explain turns Helm's failure into one that names what failed: the hook
// that failed or timed out, or each object a wait found not ready, with its
// last status conditions. Helm's own error stays in the chain.
func (rel *helmRelease) explain(ctx context.Context, cl *kube.Client, failed *release.Release, err error) error {
	if failed == nil {
		if last, lerr := rel.cfg.Releases.Last(rel.name); lerr == nil {
			failed = last
		}
	}
	if failed == nil {
		return err
	}
	var parts []string
	for _, h := range failed.Hooks {
		if h.LastRun.Phase == release.HookPhaseFailed || h.LastRun.Phase == release.HookPhaseRunning || h.LastRun.Phase == release.HookPhaseUnknown {
			if h.LastRun.StartedAt.IsZero() {
				continue
			}
			parts = append(parts, rel.hookFailure(ctx, cl, h))
		}
	}
	if len(parts) == 0 && timedOut(err) {
		parts = rel.notReady(ctx, cl, failed.Manifest)
	}
	if len(parts) == 0 {
		return err
	}
	return &namedError{msg: strings.Join(parts, "; "), err: err}
}

// namedError is a failure that names its objects; Unwrap gives Helm's error.
type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg + " (helm: " + firstLine(e.err.Error()) + ")" }
func (e *namedError) Unwrap() error { return e.err }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timed out waiting for the condition") ||
		strings.Contains(err.Error(), "context deadline exceeded")
}

// hookFailure describes one hook that did not succeed:
// "pre-install hook Job web-migrate: not complete after 2m: condition Failed=True BackoffLimitExceeded".
func (rel *helmRelease) hookFailure(ctx context.Context, cl *kube.Client, h *release.Hook) string {
	events := make([]string, len(h.Events))
	for i, e := range h.Events {
		events[i] = string(e)
	}
	what := fmt.Sprintf("%s hook %s %s", strings.Join(events, ","), h.Kind, h.Name)
	objs, err := kube.Decode([]byte(h.Manifest), what)
	if err != nil || len(objs) == 0 {
		return what + ": failed"
	}
	cl.Prepare(objs, rel.ns)
	live, err := cl.Get(ctx, kube.RefOf(objs[0]))
	switch {
	case err != nil:
		return fmt.Sprintf("%s: failed (reading it: %v)", what, err)
	case live == nil:
		return what + ": failed, and it is gone (deleted by its hook-delete-policy?)"
	}
	state := "not complete after " + short(rel.timeout)
	if failedStatus(live) {
		state = "failed"
	}
	return what + ": " + state + ": " + conditions(live, "condition")
}

// failedStatus reports a Job with Failed=True or a Pod in phase Failed.
func failedStatus(o *unstructured.Unstructured) bool {
	if phase, _, _ := unstructured.NestedString(o.Object, "status", "phase"); phase == "Failed" {
		return true
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Failed" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// conditions renders an object's status conditions ("Available=False
// MinimumReplicasUnavailable"), with a Pod's phase first.
func conditions(o *unstructured.Unstructured, label string) string {
	var out []string
	if phase, _, _ := unstructured.NestedString(o.Object, "status", "phase"); phase != "" {
		out = append(out, "phase "+phase)
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var cs []string
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		s := fmt.Sprintf("%v=%v", m["type"], m["status"])
		if r, _ := m["reason"].(string); r != "" {
			s += " " + r
		}
		cs = append(cs, s)
	}
	switch {
	case len(cs) == 1:
		out = append(out, label+" "+cs[0])
	case len(cs) > 1:
		out = append(out, label+"s "+strings.Join(cs, ", "))
	}
	if len(out) == 0 {
		return "no status conditions reported"
	}
	return strings.Join(out, ", ")
}

// notReady names the release's objects that are not ready, as Helm's wait judges them.
func (rel *helmRelease) notReady(ctx context.Context, cl *kube.Client, manifest string) []string {
	kc, ok := rel.cfg.KubeClient.(*helmkube.Client)
	if !ok {
		return nil
	}
	infos, err := kc.Build(bytes.NewBufferString(manifest), false)
	if err != nil {
		return nil
	}
	cs, err := rel.clientset()
	if err != nil {
		return nil
	}
	checker := helmkube.NewReadyChecker(cs, func(string, ...any) {}, helmkube.PausedAsReady(true), helmkube.CheckJobs(true))
	var out []string
	for _, info := range infos {
		if ready, err := checker.IsReady(ctx, info); err == nil && ready {
			continue
		}
		live, err := cl.Get(ctx, ref(info))
		if err != nil || live == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s not ready after %s: %s", info.Mapping.GroupVersionKind.Kind, info.Name, short(rel.timeout), conditions(live, "condition")))
	}
	return out
}

// test runs the chart's test hooks (helm test); a test that fails or
// does not finish fails with the test named.
func (rel *helmRelease) test(ctx context.Context, cl *kube.Client, log io.Writer) error {
	rt := action.NewReleaseTesting(rel.cfg)
	rt.Timeout, rt.Namespace = rel.timeout, rel.ns
	res, err := rt.Run(rel.name)
	if res != nil {
		for _, h := range res.Hooks {
			if isTest(h) && !h.LastRun.StartedAt.IsZero() {
				fmt.Fprintf(log, "test %s %s: %s\n", h.Kind, h.Name, h.LastRun.Phase)
			}
		}
	}
	if err == nil {
		return nil
	}
	if res != nil {
		var parts []string
		for _, h := range res.Hooks {
			if isTest(h) && h.LastRun.Phase != release.HookPhaseSucceeded && !h.LastRun.StartedAt.IsZero() {
				parts = append(parts, rel.hookFailure(ctx, cl, h))
			}
		}
		if len(parts) > 0 {
			return fmt.Errorf("helm test %s failed: %w", rel.name, &namedError{msg: strings.Join(parts, "; "), err: err})
		}
	}
	return fmt.Errorf("helm test %s failed: %w", rel.name, err)
}

func isTest(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}

// short renders a duration without trailing zero units: 2m, 90s, 1h30m.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
