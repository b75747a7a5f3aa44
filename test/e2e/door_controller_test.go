package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"knit.dev/knit/internal/kubetest"
)

// controllerAdopts is the matrix's `knit controller` row: an Environment
// object, in a namespace of team qa allowed to adopt, takes qa/prod (which
// GitOps applied) over with component b gone. The controller's run is a
// destroy the repository's policy denies.
func (d *door) controllerAdopts() {
	d.t.Helper()
	c := kubetest.Start(d.t)
	ns := c.Namespace(d.t)
	kubectlMay := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.Kubectl, append([]string{"--kubeconfig", c.KubeconfigPath, "-n", ns}, args...)...)
		cmd.Env, cmd.Stdin = append(d.w.env, "HOME="+d.w.dir), strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	kubectl := func(stdin string, args ...string) {
		d.t.Helper()
		if out, err := kubectlMay(stdin, args...); err != nil {
			d.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	kubectl("", "apply", "-f", filepath.Join(repo, "deploy", "crds"))
	kubectl("", "wait", "--for=condition=Established", "crd/environments.knit.dev", "--timeout=60s")

	ctl := exec.Command(knitBin, "controller", "--kubeconfig", c.KubeconfigPath, "--namespace", ns,
		"--team-for-namespace", ns+"=qa", "--allow-adopt", ns, "--interval", "1s", "--log-format", "json")
	var log syncBuffer
	ctl.Dir, ctl.Env, ctl.Stdout, ctl.Stderr = d.w.dir, d.w.env, &log, &log
	if err := ctl.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		_ = ctl.Process.Kill()
		_ = ctl.Wait()
		if d.t.Failed() {
			objects, _ := kubectlMay("", "get", "environments.knit.dev", "-o", "yaml")
			d.t.Logf("knit controller's log:\n%s\nits objects:\n%s", tail(log.String()), objects)
		}
	})

	// The object's module: the repository's, by git (a local path may not
	// leave the object's folder).
	obj := strings.ReplaceAll(d.env(doorComp("a", "")), "{source: ./modules/gone}", "{source: \"git::file://"+d.repo.bare+"//envs/modules/gone\"}")
	obj = strings.Replace(obj, "labels: {env: prod}}", `labels: {env: prod}, annotations: {knit.dev/adopt: "true"}}`, 1)
	if !strings.Contains(obj, "knit.dev/adopt") {
		d.t.Fatalf("the object is not annotated:\n%s", obj)
	}
	kubectl(obj, "apply", "-f", "-")
}
