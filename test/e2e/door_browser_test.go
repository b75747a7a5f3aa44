package e2e

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts a headless chromium with a fresh profile (failing the
// test when chromium is missing under make test or CI, as tofu does).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		requireTool(t, "chromium (make tools installs Debian's)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// Start the browser on ctx itself: one started by a step's deadline
	// would end with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// requireTool fails (under make test or CI) or skips for a missing tool.
func requireTool(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" || os.Getenv("KNIT_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s not found (make tools installs it)", what)
	}
	t.Skipf("%s not found: make tools installs it", what)
}

// inBrowser runs chromedp steps with a deadline, failing the test on error.
func inBrowser(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Steps(steps...)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// dashboard signs in to the server's dashboard with tok and opens
// qa/prod's page.
func (d *door) dashboard(tok string) context.Context {
	d.t.Helper()
	ctx := browser(d.t)
	inBrowser(d.t, ctx, "sign in", chromedp.Navigate(d.s.url+"/login"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), tok), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("form.who button"))) // signed in: the sign-out button
	inBrowser(d.t, ctx, "qa/prod's page", chromedp.Navigate(d.s.url+"/env/qa/prod"), chromedp.WaitVisible(chromedp.CSS("h1")))
	return ctx
}

// dashboardTeardown presses the teardown button of qa/prod and confirms.
func (d *door) dashboardTeardown() {
	d.t.Helper()
	ctx := d.dashboard(d.s.token)
	inBrowser(d.t, ctx, "teardown", chromedp.Click(chromedp.CSS(`a.button.danger`)), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.SendKeys(chromedp.CSS("#confirm"), "qa/prod"), chromedp.Click(chromedp.CSS("form.confirm button")),
		chromedp.WaitVisible(chromedp.CSS("#run-status")))
}

// dashboardRefuses reports whether the dashboard shows tok no teardown
// button for qa/prod.
func (d *door) dashboardRefuses(tok string) bool {
	d.t.Helper()
	ctx := d.dashboard(tok)
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	none, err := chromedp.Run(c, chromedp.Evaluate[bool](`document.querySelector("a.button.danger") === null`))
	if err != nil {
		d.t.Fatal(err)
	}
	return none
}
