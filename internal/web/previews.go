package web

import (
	"fmt"
	"net/http"
	"strings"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// previewsPage lists what each previewed commit of a branch would do to
// the environments it changes (knit serve --preview-branches), of the
// teams the token sees.
type previewsPage struct {
	Branch   string
	Previews []view.Preview
	Error    string
}

// previews shows ?branch='s previews, newest first.
func (w *Web) previews(rw http.ResponseWriter, r *http.Request, s *session) {
	p := previewsPage{Branch: strings.TrimSpace(r.URL.Query().Get("branch"))}
	code := http.StatusOK
	switch {
	case p.Branch == "":
	case strings.Contains(p.Branch, "..") || strings.HasPrefix(p.Branch, "-"):
		code, p.Error = http.StatusBadRequest, fmt.Sprintf("%q is not a branch name", p.Branch)
	default:
		ps, err := knit.NewRecords(w.k).Previews(r.Context(), p.Branch, "")
		if err != nil {
			code, p.Error = statusOf(err), err.Error()
		}
		p.Previews = ps
	}
	title := "Previews"
	if p.Branch != "" {
		title = "Previews of " + p.Branch
	}
	w.render(rw, r, s, code, "previews", title, "previews", p)
}
