package web

import (
	"bytes"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// pages renders the dashboard's templates: whole pages in the layout,
// error pages, the run page's fragments, and the times they show.
type pages struct {
	byName map[string]*template.Template
	log    *slog.Logger
	now    func() time.Time
}

func (w *pages) render(rw http.ResponseWriter, r *http.Request, s *session, code int, name, title, nav string, data any) {
	t, ok := w.byName[name]
	if !ok {
		http.Error(rw, "no page "+name, http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(code)
	d := layoutData{Title: title, Nav: nav, Session: s, Flash: r.URL.Query().Get("flash"), Page: data, Still: liveOff(r)}
	if err := t.ExecuteTemplate(rw, "layout", d); err != nil {
		w.log.Error("render", "page", name, "err", err)
	}
}

// liveOff reports a page asked for without live updates (?live=0): it
// opens no event stream and nothing in it ticks or polls, so a headless
// browser's page settles (a screenshot, a smoke test).
func liveOff(r *http.Request) bool { return r.URL.Query().Get("live") == "0" }

func (w *pages) errorPage(rw http.ResponseWriter, r *http.Request, s *session, code int, err error) {
	if code == 0 {
		code = statusOf(err)
	}
	if code >= 500 {
		w.log.Error("dashboard request failed", "path", r.URL.Path, "err", err)
	}
	w.render(rw, r, s, code, "error", http.StatusText(code), "", map[string]any{"Code": code, "Message": err.Error()})
}

// fragment renders one of the run page's fragments.
func (w *pages) fragment(name string, data any) string {
	var b bytes.Buffer
	if err := w.byName["run"].ExecuteTemplate(&b, name, data); err != nil {
		w.log.Error("render fragment", "name", name, "err", err)
	}
	return b.String()
}

// ago says how long before now t was, in words.
func (w *pages) ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := w.now().Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// when is a time for a title attribute.
// until says how far off t is: "in 3h12m", or "now" once past.
func (w *pages) until(t time.Time) string {
	d := t.Sub(w.now())
	if d <= 0 {
		return "now"
	}
	if d >= time.Minute {
		d = d.Truncate(time.Minute)
	}
	return "in " + strings.TrimSuffix(d.Truncate(time.Second).String(), "0s")
}
