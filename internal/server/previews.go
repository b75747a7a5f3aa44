package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode"

	"knit.dev/knit/internal/knit"
)

// Previewer is GitOps that previews branches (gitops.Reconciler with
// --preview-branches): a push webhook naming a matching branch asks for
// its preview first.
type Previewer interface {
	PreviewMatches(branch string) bool
	PreviewSoon(branch string)
}

// listPreviews is GET /api/v1/previews?branch=B[&commit=C]: what each
// previewed commit of branch B would do to the environments it changes,
// of the teams the token may see only.
func (s *Server) listPreviews(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	branch, commit := q.Get("branch"), q.Get("commit")
	if msg := branchProblem(branch); msg != "" {
		s.fail(w, r, badReq("branch: "+msg+": ?branch=feature/x"))
		return
	}
	if commit != "" && !isHex(commit) {
		s.fail(w, r, badReq("commit: "+commit+" is not a commit hash"))
		return
	}
	ps, err := knit.NewRecords(s.k).Previews(r.Context(), branch, commit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ps)
}

// branchProblem says what makes b no branch name ("" when it is one, as
// far as a lookup needs: git's own rules are checked where git runs).
func branchProblem(b string) string {
	switch {
	case b == "":
		return "missing"
	case len(b) > 255:
		return "longer than 255 characters"
	case strings.Contains(b, ".."), strings.HasPrefix(b, "-"), strings.HasPrefix(b, "/"):
		return "not a branch name (no \"..\", no leading - or /)"
	case strings.IndexFunc(b, func(r rune) bool { return unicode.IsControl(r) || r == ' ' }) >= 0:
		return "not a branch name (no spaces or control characters)"
	}
	return ""
}

func isHex(s string) bool {
	return len(s) <= 64 && strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) }) < 0
}

// pushedBranch is the branch a push webhook's body names ("ref":
// "refs/heads/B", as GitHub, GitLab and Gitea send it), or "".
func pushedBranch(body []byte) string {
	var push struct {
		Ref string `json:"ref"`
	}
	if json.Unmarshal(body, &push) != nil {
		return ""
	}
	b, _ := strings.CutPrefix(push.Ref, "refs/heads/")
	if b == push.Ref || branchProblem(b) != "" {
		return ""
	}
	return b
}
