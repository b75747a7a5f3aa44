package web_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
)

// chatty is shop/chatty: tail's apply fails at once while the file FAIL
// exists, else prints a line every 20 ms until the file STOP exists.
const chatty = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-chatty}
spec:
  teamName: shop
  envName: chatty
  autoApprove: true
  components:
    - name: tail
      type: script
      script: {apply: "if [ -f FAIL ]; then exit 1; fi; i=0; while [ ! -f STOP ]; do i=$((i+1)); echo line $i >&2; sleep 0.02; done; echo '{}'"}
`

const logLines = `document.querySelector("#log-tail").textContent.split("\n").length`
const logAtEnd = `(() => { const l = document.querySelector("#log-tail"); return l.scrollHeight - l.scrollTop - l.clientHeight < 24; })()`

// TestDashboardLiveLogFollows: a run's live log keeps its newest line in
// view while the reader is at the end, however long it grows; scrolling up
// stops that (the reader's place stays put as lines arrive), and scrolling
// back to the end resumes it.
func TestDashboardLiveLogFollows(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	stop, fail := filepath.Join(w.dir, "STOP"), filepath.Join(w.dir, "FAIL")
	writeFileAt(t, fail, nil)
	w.apply("shop-chatty", map[string]string{"env.yaml": strings.NewReplacer("STOP", stop, "FAIL", fail).Replace(chatty)})
	if err := os.Remove(fail); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { writeFileAt(t, stop, nil) }) // end the run whatever happens
	signIn(t, ctx, w, "operator", "/env/shop/chatty", "#graph[data-drawn]")
	run(t, ctx, "apply",
		chromedp.Click(chromedp.CSS(`form[action="/env/shop/chatty/run"] input[value=apply] ~ button`)),
		chromedp.WaitVisible(chromedp.CSS("#run-status")))
	waitFor(t, ctx, "a log taller than its box", `(() => { const l = document.querySelector("#log-tail"); return l && l.scrollHeight > l.clientHeight + 200; })()`)
	if !eval[bool](t, ctx, logAtEnd) {
		t.Fatal("the live log does not show its newest line")
	}
	n := eval[int](t, ctx, logLines)
	waitFor(t, ctx, "more lines", logLines+` > `+strconv.Itoa(n+30))
	if !eval[bool](t, ctx, logAtEnd) {
		t.Fatal("the live log stopped following its output")
	}

	// The reader scrolls up: their place stays as lines arrive.
	_ = eval[bool](t, ctx, `document.querySelector("#log-tail").scrollTop = 0, true`)
	waitFor(t, ctx, "following to stop", `document.querySelector("#log-tail").dataset.follow === "0"`)
	n = eval[int](t, ctx, logLines)
	waitFor(t, ctx, "more lines", logLines+` > `+strconv.Itoa(n+30))
	if top := eval[float64](t, ctx, `document.querySelector("#log-tail").scrollTop`); top > 1 {
		t.Errorf("the log scrolled to %v while the reader was reading above", top)
	}

	// Back at the end: it follows again.
	_ = eval[bool](t, ctx, `(l => (l.scrollTop = l.scrollHeight, true))(document.querySelector("#log-tail"))`)
	waitFor(t, ctx, "following to resume", `document.querySelector("#log-tail").dataset.follow === "1"`)
	n = eval[int](t, ctx, logLines)
	waitFor(t, ctx, "more lines", logLines+` > `+strconv.Itoa(n+30))
	if !eval[bool](t, ctx, logAtEnd) {
		t.Error("the live log did not resume following at the end")
	}
	writeFileAt(t, stop, nil)
	waitFor(t, ctx, "the run's end", `document.querySelector("#run-status").textContent.includes("succeeded")`)
}
